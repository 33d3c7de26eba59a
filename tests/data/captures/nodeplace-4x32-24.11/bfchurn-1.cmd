# scripts/record-nodeplace.py bfchurn-1: slurm-wlm 24.11.5, user alice, 2026-11-27T08:41:26Z, testbed /tmp/tb-nodeplace-24.11 (4 nodes x 32 CPUs, CR_CPU)
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 3 -t 11 --wrap 'sleep 3000'   # run -> job 108
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 32 -t 18 --wrap 'sleep 3000'   # run -> job 109
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 7 -t 18 --wrap 'sleep 3000'   # run -> job 110
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 25 -t 3 --wrap 'sleep 3000'   # run -> job 111
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 8 -t 6 --wrap 'sleep 3000'   # run -> job 112
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 6 -t 3 --wrap 'sleep 3000'   # run -> job 113
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 1 -t 16 --wrap 'sleep 3000'   # run -> job 114
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 1 -t 17 --wrap 'sleep 3000'   # run -> job 115
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 8 -t 14 --wrap 'sleep 3000'   # run -> job 116
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 15 -t 12 --wrap 'sleep 3000'   # run -> job 117
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 1 -t 6 --wrap 'sleep 3000'   # pend -> job 118
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 8 -t 29 --wrap 'sleep 3000'   # pend -> job 119
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 7 -t 10 --wrap 'sleep 3000'   # pend -> job 120
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 38 -t 28 --wrap 'sleep 3000'   # pend -> job 121
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 7 -t 16 --wrap 'sleep 3000'   # pend -> job 122
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 48 -t 14 --wrap 'sleep 3000'   # pend -> job 123
SLURM_TIME_FORMAT=%s scontrol -d -o show job JOBID   # for each job above, in order, once two reads 35 s apart gave the same StartTime and SchedNodeList
