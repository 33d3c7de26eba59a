# scripts/record-nodeplace.py churn-2: slurm-wlm 22.05.8, user alice, 2026-11-27T08:38:46Z, testbed /tmp/tb-nodeplace (4 nodes x 32 CPUs, CR_CPU)
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 82
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 20 -t 30 --wrap 'sleep 3000'   # run -> job 83
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 84
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 33 -t 30 --wrap 'sleep 3000'   # run -> job 85
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 33 -t 30 --wrap 'sleep 3000'   # run -> job 86
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 24 -t 30 --wrap 'sleep 3000'   # run -> job 87
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 88
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 4 -t 30 --wrap 'sleep 3000'   # run -> job 89
scancel 84   # cancel 84, then waited until squeue no longer lists it
scancel 87   # cancel 87, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 29 -t 30 --wrap 'sleep 3000'   # run -> job 90
scancel 89   # cancel 89, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 5 -t 30 --wrap 'sleep 3000'   # run -> job 91
scancel 85   # cancel 85, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 11 -t 30 --wrap 'sleep 3000'   # run -> job 92
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 8 -t 30 --wrap 'sleep 3000'   # run -> job 93
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 14 -t 30 --wrap 'sleep 3000'   # run -> job 94
scancel 93   # cancel 93, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 8 -t 30 --wrap 'sleep 3000'   # run -> job 95
scancel 94   # cancel 94, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 11 -t 30 --wrap 'sleep 3000'   # run -> job 96
scancel 95   # cancel 95, then waited until squeue no longer lists it
scancel 92   # cancel 92, then waited until squeue no longer lists it
scancel 83   # cancel 83, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 6 -t 30 --wrap 'sleep 3000'   # run -> job 97
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 6 -t 30 --wrap 'sleep 3000'   # run -> job 98
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 2 -t 30 --wrap 'sleep 3000'   # run -> job 99
scancel 90   # cancel 90, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 2 -t 30 --wrap 'sleep 3000'   # run -> job 100
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 4 -t 30 --wrap 'sleep 3000'   # run -> job 101
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 4 -t 30 --wrap 'sleep 3000'   # run -> job 102
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 4 -t 30 --wrap 'sleep 3000'   # run -> job 103
scancel 101   # cancel 101, then waited until squeue no longer lists it
scancel 100   # cancel 100, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 3 -t 30 --wrap 'sleep 3000'   # run -> job 104
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 105
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 4 -t 30 --wrap 'sleep 3000'   # run -> job 106
scancel 96   # cancel 96, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 19 -t 30 --wrap 'sleep 3000'   # run -> job 107
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 5 -t 30 --wrap 'sleep 3000'   # run -> job 108
SLURM_TIME_FORMAT=%s scontrol -d -o show job JOBID   # for each job, once it runs
