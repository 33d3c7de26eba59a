# captured 2026-11-21T19:03:40Z, as root, env SLURM_CONF=/tmp/fsc-tb/etc/slurm.conf 
sshare -a -l -P 
