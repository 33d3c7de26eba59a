# captured 2026-11-27T04:57:27Z from slurm-wlm 26.05.5, as root, env SLURM_CONF=/tmp/tb-startplus-26.05/etc/slurm.conf (alice job submitted with --reservation=fsc_part, pending before it starts)
squeue -a -h -t PD,R,CG -o %i|%u|%a|%P|%T|%C|%l|%S|%Q|%r|%V|%v
