# captured 2026-11-21T19:03:40Z, as root, env SLURM_CONF=/tmp/fsc-tb/etc/slurm.conf SLURM_TIME_FORMAT=%s
squeue -a -o %i\|%u\|%a\|%P\|%q\|%T\|%D\|%C\|%Q\|%y\|%r\|%V\|%S\|%l 
