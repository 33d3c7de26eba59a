# captured 2026-11-23T15:28:22Z from slurm-wlm 24.11.5, as root, env SLURM_CONF=/tmp/fscontrol-testbed-tb2411/etc/slurm.conf SLURM_TIME_FORMAT=%s
squeue -a -o %i\|%u\|%a\|%P\|%q\|%T\|%D\|%C\|%Q\|%y\|%r\|%V\|%S\|%l 
