# scripts/record-nodeplace.py bfchurn-3: slurm-wlm 24.11.5, user alice, 2026-11-27T08:45:43Z, testbed /tmp/tb-nodeplace-24.11 (4 nodes x 32 CPUs, CR_CPU)
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 4 -t 14 --wrap 'sleep 3000'   # run -> job 136
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 8 -t 3 --wrap 'sleep 3000'   # run -> job 137
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 8 -t 9 --wrap 'sleep 3000'   # run -> job 138
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 35 -t 15 --wrap 'sleep 3000'   # run -> job 139
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 3 -t 19 --wrap 'sleep 3000'   # run -> job 140
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 7 -t 8 --wrap 'sleep 3000'   # run -> job 141
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 1 -t 11 --wrap 'sleep 3000'   # run -> job 142
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 39 -t 16 --wrap 'sleep 3000'   # run -> job 143
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 47 -t 30 --wrap 'sleep 3000'   # pend -> job 144
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 57 -t 4 --wrap 'sleep 3000'   # pend -> job 145
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 9 -t 7 --wrap 'sleep 3000'   # pend -> job 146
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 44 -t 25 --wrap 'sleep 3000'   # pend -> job 147
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 27 -t 19 --wrap 'sleep 3000'   # pend -> job 148
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 35 -t 19 --wrap 'sleep 3000'   # pend -> job 149
SLURM_TIME_FORMAT=%s scontrol -d -o show job JOBID   # for each job above, in order, once two reads 35 s apart gave the same StartTime and SchedNodeList
