# scripts/record-nodeplace.py churn-1: slurm-wlm 24.11.5, user alice, 2026-11-27T08:37:31Z, testbed /tmp/tb-nodeplace-24.11 (4 nodes x 32 CPUs, CR_CPU)
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 3 -t 30 --wrap 'sleep 3000'   # run -> job 53
scancel 53   # cancel 53, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 31 -t 30 --wrap 'sleep 3000'   # run -> job 54
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 2 -t 30 --wrap 'sleep 3000'   # run -> job 55
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 56
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 5 -t 30 --wrap 'sleep 3000'   # run -> job 57
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 58
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 59
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 60
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 8 -t 30 --wrap 'sleep 3000'   # run -> job 61
scancel 57   # cancel 57, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 2 -t 30 --wrap 'sleep 3000'   # run -> job 62
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 12 -t 30 --wrap 'sleep 3000'   # run -> job 63
scancel 60   # cancel 60, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 64
scancel 63   # cancel 63, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 65
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 66
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 6 -t 30 --wrap 'sleep 3000'   # run -> job 67
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 11 -t 30 --wrap 'sleep 3000'   # run -> job 68
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 69
scancel 66   # cancel 66, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 70
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 71
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 36 -t 30 --wrap 'sleep 3000'   # run -> job 72
scancel 64   # cancel 64, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 73
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 4 -t 30 --wrap 'sleep 3000'   # run -> job 74
scancel 74   # cancel 74, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 6 -t 30 --wrap 'sleep 3000'   # run -> job 75
scancel 75   # cancel 75, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 6 -t 30 --wrap 'sleep 3000'   # run -> job 76
scancel 69   # cancel 69, then waited until squeue no longer lists it
scancel 65   # cancel 65, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 4 -t 30 --wrap 'sleep 3000'   # run -> job 77
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 4 -t 30 --wrap 'sleep 3000'   # run -> job 78
scancel 56   # cancel 56, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 1 -t 30 --wrap 'sleep 3000'   # run -> job 79
scancel 59   # cancel 59, then waited until squeue no longer lists it
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 80
SLURM_TIME_FORMAT=%s scontrol -d -o show job JOBID   # for each job, once it runs
