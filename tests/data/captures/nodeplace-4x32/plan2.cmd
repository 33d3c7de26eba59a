# scripts/record-nodeplace.py plan2: slurm-wlm 22.05.8, user alice, 2026-11-27T08:22:20Z, testbed /tmp/tb-nodeplace (4 nodes x 32 CPUs, CR_CPU)
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 28 -t 30 -wtbnode1 --wrap 'sleep 3000'   # fill -> job 39
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 20 -t 5 -wtbnode2 --wrap 'sleep 3000'   # fill -> job 40
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 12 -t 30 -wtbnode2 --wrap 'sleep 3000'   # fill -> job 41
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 32 -t 30 -wtbnode3 --wrap 'sleep 3000'   # fill -> job 42
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 16 -t 7 -wtbnode4 --wrap 'sleep 3000'   # fill -> job 43
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 16 -t 30 -wtbnode4 --wrap 'sleep 3000'   # fill -> job 44
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 40 -t 10 --wrap 'sleep 3000'   # pend -> job 45
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 3 -t 30 --wrap 'sleep 3000'   # pend -> job 46
SLURM_TIME_FORMAT=%s scontrol -d -o show job JOBID   # for each job above, in order, once two reads 35 s apart gave the same StartTime and SchedNodeList
