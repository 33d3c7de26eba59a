# scripts/record-nodeplace.py bestfit: slurm-wlm 22.05.8, user alice, 2026-11-27T08:20:26Z, testbed /tmp/tb-nodeplace (4 nodes x 32 CPUs, CR_CPU)
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 20 -t 30 -wtbnode1 --wrap 'sleep 3000'   # fill -> job 21
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 26 -t 30 -wtbnode2 --wrap 'sleep 3000'   # fill -> job 22
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 7 -t 30 -wtbnode3 --wrap 'sleep 3000'   # fill -> job 23
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 24 -t 30 -wtbnode4 --wrap 'sleep 3000'   # fill -> job 24
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 7 -t 30 --wrap 'sleep 3000'   # run -> job 25
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 6 -t 30 --wrap 'sleep 3000'   # run -> job 26
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 13 -t 30 --wrap 'sleep 3000'   # run -> job 27
sbatch --parsable --chdir=/tmp/tb-nodeplace/jobs -o /dev/null -A flat -n 20 -t 30 --wrap 'sleep 3000'   # run -> job 28
SLURM_TIME_FORMAT=%s scontrol -d -o show job JOBID   # for each job above, in order
