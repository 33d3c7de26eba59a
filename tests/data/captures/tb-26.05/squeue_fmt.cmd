# captured 2026-11-26T14:58:49Z from slurm-wlm 26.05.5, as root, env SLURM_CONF=/tmp/tb-slurm2605-cap/etc/slurm.conf SLURM_TIME_FORMAT=%s
squeue -a -o %i\|%u\|%a\|%P\|%q\|%T\|%D\|%C\|%Q\|%y\|%r\|%V\|%S\|%l 
