# captured 2026-11-23T15:28:22Z from slurm-wlm 24.11.5, as root, env SLURM_CONF=/tmp/fscontrol-testbed-tb2411/etc/slurm.conf 
sshare -n -P -A root -o Account\,User\,RawUsage 
