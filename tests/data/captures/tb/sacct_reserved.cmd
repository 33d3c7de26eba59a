# captured 2026-11-23T15:37:06Z from slurm-wlm 22.05.8, as root, env SLURM_CONF=/tmp/fscontrol-testbed-tb2411-2205/etc/slurm.conf
sacct -a -X -P -o JobID\,Reserved 
