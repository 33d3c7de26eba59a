# captured 2026-11-23T15:28:22Z from slurm-wlm 24.11.5, as root, env SLURM_CONF=/tmp/fscontrol-testbed-tb2411/etc/slurm.conf 
runuser -u alice -- sshare -l -P 
