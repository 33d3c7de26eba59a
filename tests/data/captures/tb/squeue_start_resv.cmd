# captured 2026-11-27T04:57:24Z, as root, env SLURM_CONF=/tmp/tb-startplus/etc/slurm.conf (alice job 1 submitted with --reservation=fsc_part, pending before it starts)
squeue -a -h -t PD,R,CG -o %i|%u|%a|%P|%T|%C|%l|%S|%Q|%r|%V|%v
