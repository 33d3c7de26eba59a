# scripts/record-nodeplace.py churn-2: slurm-wlm 26.05.5, user alice, 2026-11-27T09:00:11Z, testbed /tmp/tb-nodeplace-26.05 (4 nodes x 32 CPUs, CR_CPU)
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 122
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 20 -t 30 --wrap 'sleep 3000'   # run -> job 123
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 124
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 33 -t 30 --wrap 'sleep 3000'   # run -> job 125
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 33 -t 30 --wrap 'sleep 3000'   # run -> job 126
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 24 -t 30 --wrap 'sleep 3000'   # run -> job 127
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 128
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 4 -t 30 --wrap 'sleep 3000'   # run -> job 129
scancel 124   # cancel 124, then waited until squeue no longer lists it
scancel 127   # cancel 127, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 29 -t 30 --wrap 'sleep 3000'   # run -> job 130
scancel 129   # cancel 129, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 5 -t 30 --wrap 'sleep 3000'   # run -> job 131
scancel 125   # cancel 125, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 11 -t 30 --wrap 'sleep 3000'   # run -> job 132
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 8 -t 30 --wrap 'sleep 3000'   # run -> job 133
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 14 -t 30 --wrap 'sleep 3000'   # run -> job 134
scancel 133   # cancel 133, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 8 -t 30 --wrap 'sleep 3000'   # run -> job 135
scancel 134   # cancel 134, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 11 -t 30 --wrap 'sleep 3000'   # run -> job 136
scancel 135   # cancel 135, then waited until squeue no longer lists it
scancel 132   # cancel 132, then waited until squeue no longer lists it
scancel 123   # cancel 123, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 6 -t 30 --wrap 'sleep 3000'   # run -> job 137
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 6 -t 30 --wrap 'sleep 3000'   # run -> job 138
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 2 -t 30 --wrap 'sleep 3000'   # run -> job 139
scancel 130   # cancel 130, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 2 -t 30 --wrap 'sleep 3000'   # run -> job 140
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 4 -t 30 --wrap 'sleep 3000'   # run -> job 141
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 4 -t 30 --wrap 'sleep 3000'   # run -> job 142
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 4 -t 30 --wrap 'sleep 3000'   # run -> job 143
scancel 126   # cancel 126, then waited until squeue no longer lists it
scancel 122   # cancel 122, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 3 -t 30 --wrap 'sleep 3000'   # run -> job 144
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 145
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 4 -t 30 --wrap 'sleep 3000'   # run -> job 146
scancel 143   # cancel 143, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 19 -t 30 --wrap 'sleep 3000'   # run -> job 147
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 5 -t 30 --wrap 'sleep 3000'   # run -> job 148
SLURM_TIME_FORMAT=%s scontrol -d -o show job JOBID   # for each job, once it runs
