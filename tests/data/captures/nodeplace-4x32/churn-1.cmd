# scripts/record-nodeplace.py churn-1: slurm-wlm 22.05.8, user alice, 2026-11-27T08:37:31Z, testbed /tmp/tb-nodeplace (4 nodes x 32 CPUs, CR_CPU)
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 3 -t 30 --wrap 'sleep 3000'   # run -> job 54
scancel 54   # cancel 54, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 31 -t 30 --wrap 'sleep 3000'   # run -> job 55
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 2 -t 30 --wrap 'sleep 3000'   # run -> job 56
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 57
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 5 -t 30 --wrap 'sleep 3000'   # run -> job 58
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 59
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 60
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 61
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 8 -t 30 --wrap 'sleep 3000'   # run -> job 62
scancel 58   # cancel 58, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 2 -t 30 --wrap 'sleep 3000'   # run -> job 63
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 12 -t 30 --wrap 'sleep 3000'   # run -> job 64
scancel 61   # cancel 61, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 65
scancel 64   # cancel 64, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 66
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 67
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 6 -t 30 --wrap 'sleep 3000'   # run -> job 68
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 11 -t 30 --wrap 'sleep 3000'   # run -> job 69
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 70
scancel 67   # cancel 67, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 71
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 72
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 36 -t 30 --wrap 'sleep 3000'   # run -> job 73
scancel 65   # cancel 65, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 74
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 4 -t 30 --wrap 'sleep 3000'   # run -> job 75
scancel 75   # cancel 75, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 6 -t 30 --wrap 'sleep 3000'   # run -> job 76
scancel 76   # cancel 76, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 6 -t 30 --wrap 'sleep 3000'   # run -> job 77
scancel 70   # cancel 70, then waited until squeue no longer lists it
scancel 66   # cancel 66, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 4 -t 30 --wrap 'sleep 3000'   # run -> job 78
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 4 -t 30 --wrap 'sleep 3000'   # run -> job 79
scancel 57   # cancel 57, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 80
scancel 60   # cancel 60, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 81
SLURM_TIME_FORMAT=%s scontrol -d -o show job JOBID   # for each job, once it runs
