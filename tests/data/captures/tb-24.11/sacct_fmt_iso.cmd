# captured 2026-11-23T15:28:22Z from slurm-wlm 24.11.5, as root, env SLURM_CONF=/tmp/fscontrol-testbed-tb2411/etc/slurm.conf 
sacct -a -X -T -P -S 2026-11-23T14:58:22 -E 2026-11-23T15:28:22 -o JobID\,User\,Account\,Partition\,QOS\,State\,AllocCPUS\,AllocTRES\,NNodes\,ElapsedRaw\,Submit\,Start\,End 
