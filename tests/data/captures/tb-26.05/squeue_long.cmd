# captured 2026-11-26T14:58:50Z from slurm-wlm 26.05.5, as root, env SLURM_CONF=/tmp/tb-slurm2605-cap/etc/slurm.conf SLURM_TIME_FORMAT=%s
squeue -a -O JobID:0\|\,UserName:0\|\,Account:0\|\,Partition:0\|\,QOS:0\|\,State:0\|\,NumNodes:0\|\,NumCPUs:0\|\,PriorityLong:0\|\,Nice:0\|\,Reason:0\|\,SubmitTime:0\|\,StartTime:0\|\,TimeLimit:0\|\,admin_comment:0 
