# scripts/record-nodeplace.py churn-1: slurm-wlm 26.05.5, user alice, 2026-11-27T08:58:59Z, testbed /tmp/tb-nodeplace-26.05 (4 nodes x 32 CPUs, CR_CPU)
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 3 -t 30 --wrap 'sleep 3000'   # run -> job 95
scancel 95   # cancel 95, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 31 -t 30 --wrap 'sleep 3000'   # run -> job 96
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 2 -t 30 --wrap 'sleep 3000'   # run -> job 97
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 98
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 5 -t 30 --wrap 'sleep 3000'   # run -> job 99
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 100
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 101
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 102
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 8 -t 30 --wrap 'sleep 3000'   # run -> job 103
scancel 103   # cancel 103, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 2 -t 30 --wrap 'sleep 3000'   # run -> job 104
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 12 -t 30 --wrap 'sleep 3000'   # run -> job 105
scancel 96   # cancel 96, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 106
scancel 98   # cancel 98, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 107
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 108
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 6 -t 30 --wrap 'sleep 3000'   # run -> job 109
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 11 -t 30 --wrap 'sleep 3000'   # run -> job 110
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 111
scancel 110   # cancel 110, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 112
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 113
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 37 -t 30 --wrap 'sleep 3000'   # run -> job 114
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 5 -t 30 --wrap 'sleep 3000'   # run -> job 115
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 3 -t 30 --wrap 'sleep 3000'   # run -> job 116
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 23 -t 30 --wrap 'sleep 3000'   # run -> job 117
scancel 99   # cancel 99, then waited until squeue no longer lists it
scancel 97   # cancel 97, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 118
scancel 100   # cancel 100, then waited until squeue no longer lists it
scancel 113   # cancel 113, then waited until squeue no longer lists it
scancel 109   # cancel 109, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 4 -t 30 --wrap 'sleep 3000'   # run -> job 119
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 4 -t 30 --wrap 'sleep 3000'   # run -> job 120
scancel 104   # cancel 104, then waited until squeue no longer lists it
scancel 119   # cancel 119, then waited until squeue no longer lists it
scancel 101   # cancel 101, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 121
SLURM_TIME_FORMAT=%s scontrol -d -o show job JOBID   # for each job, once it runs
