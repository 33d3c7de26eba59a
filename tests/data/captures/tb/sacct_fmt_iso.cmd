# captured 2026-11-21T19:03:40Z, as root, env SLURM_CONF=/tmp/fsc-tb/etc/slurm.conf 
sacct -a -X -T -P -S 2026-11-21T18:33:40 -E 2026-11-21T19:03:40 -o JobID\,User\,Account\,Partition\,QOS\,State\,AllocCPUS\,AllocTRES\,NNodes\,ElapsedRaw\,Submit\,Start\,End 
