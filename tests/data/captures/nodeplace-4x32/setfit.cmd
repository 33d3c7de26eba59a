# scripts/record-nodeplace.py setfit: slurm-wlm 22.05.8, user alice, 2026-11-27T08:24:40Z, testbed /tmp/tb-nodeplace (4 nodes x 32 CPUs, CR_CPU)
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 22 -t 30 -wtbnode1 --wrap 'sleep 3000'   # fill -> job 47
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 22 -t 30 -wtbnode2 --wrap 'sleep 3000'   # fill -> job 48
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 32 -t 30 -wtbnode3 --wrap 'sleep 3000'   # fill -> job 49
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 4 -t 30 -wtbnode4 --wrap 'sleep 3000'   # fill -> job 50
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 15 -t 30 --wrap 'sleep 3000'   # run -> job 51
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 5 -t 30 --wrap 'sleep 3000'   # run -> job 52
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 20 -t 30 --wrap 'sleep 3000'   # run -> job 53
SLURM_TIME_FORMAT=%s scontrol -d -o show job JOBID   # for each job above, in order
