# captured 2026-11-21T19:03:39Z, as root, env SLURM_CONF=/tmp/fsc-tb/etc/slurm.conf 
sshare -M tbcluster -a -l -P 
