# captured 2026-11-26T14:58:50Z from slurm-wlm 26.05.5, as root, env SLURM_CONF=/tmp/tb-slurm2605-cap/etc/slurm.conf 
sprio -l 
