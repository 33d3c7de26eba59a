# captured 2026-11-23T16:44:40Z from slurm-wlm 24.11.5, as root, env SLURM_CONF=/tmp/tb2411-json/etc/slurm.conf (classic fair-share, 2 running jobs; data_parser v0.0.42; sshare_a_l_P.txt is the text of the same moment)
sshare -a --json
