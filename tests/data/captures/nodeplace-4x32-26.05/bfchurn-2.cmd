# scripts/record-nodeplace.py bfchurn-2: slurm-wlm 26.05.5, user alice, 2026-11-27T08:54:53Z, testbed /tmp/tb-nodeplace-26.05 (4 nodes x 32 CPUs, CR_CPU)
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 1 -t 14 --wrap 'sleep 3000'   # run -> job 69
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 20 -t 9 --wrap 'sleep 3000'   # run -> job 70
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 1 -t 16 --wrap 'sleep 3000'   # run -> job 71
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 33 -t 20 --wrap 'sleep 3000'   # run -> job 72
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 33 -t 4 --wrap 'sleep 3000'   # run -> job 73
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 24 -t 13 --wrap 'sleep 3000'   # run -> job 74
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 7 -t 18 --wrap 'sleep 3000'   # pend -> job 75
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 3 -t 1 --wrap 'sleep 3000'   # pend -> job 76
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 3 -t 5 --wrap 'sleep 3000'   # pend -> job 77
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 6 -t 29 --wrap 'sleep 3000'   # pend -> job 78
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 51 -t 24 --wrap 'sleep 3000'   # pend -> job 79
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 51 -t 12 --wrap 'sleep 3000'   # pend -> job 80
SLURM_TIME_FORMAT=%s scontrol -d -o show job JOBID   # for each job above, in order, once two reads 35 s apart gave the same StartTime and SchedNodeList
