# scripts/record-nodeplace.py bfchurn-2: slurm-wlm 24.11.5, user alice, 2026-11-27T08:43:05Z, testbed /tmp/tb-nodeplace-24.11 (4 nodes x 32 CPUs, CR_CPU)
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 1 -t 14 --wrap 'sleep 3000'   # run -> job 124
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 20 -t 9 --wrap 'sleep 3000'   # run -> job 125
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 1 -t 16 --wrap 'sleep 3000'   # run -> job 126
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 33 -t 20 --wrap 'sleep 3000'   # run -> job 127
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 33 -t 4 --wrap 'sleep 3000'   # run -> job 128
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 24 -t 13 --wrap 'sleep 3000'   # run -> job 129
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 7 -t 18 --wrap 'sleep 3000'   # pend -> job 130
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 3 -t 1 --wrap 'sleep 3000'   # pend -> job 131
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 3 -t 5 --wrap 'sleep 3000'   # pend -> job 132
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 6 -t 29 --wrap 'sleep 3000'   # pend -> job 133
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 51 -t 24 --wrap 'sleep 3000'   # pend -> job 134
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 51 -t 12 --wrap 'sleep 3000'   # pend -> job 135
SLURM_TIME_FORMAT=%s scontrol -d -o show job JOBID   # for each job above, in order, once two reads 35 s apart gave the same StartTime and SchedNodeList
