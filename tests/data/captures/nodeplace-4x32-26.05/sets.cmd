# scripts/record-nodeplace.py sets: slurm-wlm 26.05.5, user alice, 2026-11-27T08:49:15Z, testbed /tmp/tb-nodeplace-26.05 (4 nodes x 32 CPUs, CR_CPU)
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 22 -t 30 -wtbnode1 --wrap 'sleep 3000'   # fill -> job 13
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 32 -t 30 -wtbnode2 --wrap 'sleep 3000'   # fill -> job 14
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 12 -t 30 -wtbnode3 --wrap 'sleep 3000'   # fill -> job 15
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 27 -t 30 -wtbnode4 --wrap 'sleep 3000'   # fill -> job 16
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 22 -t 30 --wrap 'sleep 3000'   # run -> job 17
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 9 -t 30 --wrap 'sleep 3000'   # run -> job 18
sbatch --parsable --chdir=/tmp/tb-nodeplace-26.05/jobs -o /dev/null -A flat -n 4 -t 30 --wrap 'sleep 3000'   # run -> job 19
SLURM_TIME_FORMAT=%s scontrol -d -o show job JOBID   # for each job above, in order
