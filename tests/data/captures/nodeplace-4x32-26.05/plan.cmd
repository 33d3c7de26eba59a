# scripts/record-nodeplace.py plan: slurm-wlm 26.05.5, user alice, 2026-11-27T08:50:13Z, testbed /tmp/tb-nodeplace-26.05 (4 nodes x 32 CPUs, CR_CPU)
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 26 -t 30 -wtbnode1 --wrap 'sleep 3000'   # fill -> job 35
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 24 -t 30 -wtbnode2 --wrap 'sleep 3000'   # fill -> job 36
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 24 -t 30 -wtbnode3 --wrap 'sleep 3000'   # fill -> job 37
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 24 -t 30 -wtbnode4 --wrap 'sleep 3000'   # fill -> job 38
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 8 -t 5 -wtbnode2 --wrap 'sleep 3000'   # fill -> job 39
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 8 -t 5 -wtbnode3 --wrap 'sleep 3000'   # fill -> job 40
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 8 -t 5 -wtbnode4 --wrap 'sleep 3000'   # fill -> job 41
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 22 -t 10 --wrap 'sleep 3000'   # pend -> job 42
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 4 -t 30 --wrap 'sleep 3000'   # pend -> job 43
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 2 -t 1 --wrap 'sleep 3000'   # pend -> job 44
SLURM_TIME_FORMAT=%s scontrol -d -o show job JOBID   # for each job above, in order, once two reads 35 s apart gave the same StartTime and SchedNodeList
