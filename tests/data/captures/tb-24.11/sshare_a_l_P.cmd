# captured 2026-11-23T16:44:40Z from slurm-wlm 24.11.5, as root, env SLURM_CONF=/tmp/tb2411-json/etc/slurm.conf (beside sshare_a_json.json)
sshare -a -l -P
