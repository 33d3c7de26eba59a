# scripts/record-nodeplace.py bfchurn-1: slurm-wlm 26.05.5, user alice, 2026-11-27T08:53:18Z, testbed /tmp/tb-nodeplace-26.05 (4 nodes x 32 CPUs, CR_CPU)
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 3 -t 11 --wrap 'sleep 3000'   # run -> job 53
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 32 -t 18 --wrap 'sleep 3000'   # run -> job 54
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 7 -t 18 --wrap 'sleep 3000'   # run -> job 55
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 25 -t 3 --wrap 'sleep 3000'   # run -> job 56
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 8 -t 6 --wrap 'sleep 3000'   # run -> job 57
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 6 -t 3 --wrap 'sleep 3000'   # run -> job 58
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 1 -t 16 --wrap 'sleep 3000'   # run -> job 59
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 1 -t 17 --wrap 'sleep 3000'   # run -> job 60
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 8 -t 14 --wrap 'sleep 3000'   # run -> job 61
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 15 -t 12 --wrap 'sleep 3000'   # run -> job 62
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 1 -t 6 --wrap 'sleep 3000'   # pend -> job 63
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 8 -t 29 --wrap 'sleep 3000'   # pend -> job 64
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 7 -t 10 --wrap 'sleep 3000'   # pend -> job 65
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 38 -t 28 --wrap 'sleep 3000'   # pend -> job 66
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 7 -t 16 --wrap 'sleep 3000'   # pend -> job 67
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 48 -t 14 --wrap 'sleep 3000'   # pend -> job 68
SLURM_TIME_FORMAT=%s scontrol -d -o show job JOBID   # for each job above, in order, once two reads 35 s apart gave the same StartTime and SchedNodeList
