# captured 2026-11-23T15:36:59Z from slurm-wlm 22.05.8, as root, env SLURM_CONF=/tmp/fscontrol-testbed-tb2411-2205/etc/slurm.conf
sprio 
