# scripts/record-nodeplace.py spread: slurm-wlm 22.05.8, user alice, 2026-11-27T08:19:54Z, testbed /tmp/tb-nodeplace (4 nodes x 32 CPUs, CR_CPU)
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 50 -t 30 --wrap 'sleep 3000'   # run -> job 10
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 40 -t 30 --wrap 'sleep 3000'   # run -> job 11
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 12
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 6 -t 30 --wrap 'sleep 3000'   # run -> job 13
SLURM_TIME_FORMAT=%s scontrol -d -o show job JOBID   # for each job above, in order
