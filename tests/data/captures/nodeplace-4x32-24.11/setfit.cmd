# scripts/record-nodeplace.py setfit: slurm-wlm 24.11.5, user alice, 2026-11-27T08:26:46Z, testbed /tmp/tb-nodeplace-24.11 (4 nodes x 32 CPUs, CR_CPU)
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 22 -t 30 -wtbnode1 --wrap 'sleep 3000'   # fill -> job 28
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 22 -t 30 -wtbnode2 --wrap 'sleep 3000'   # fill -> job 29
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 32 -t 30 -wtbnode3 --wrap 'sleep 3000'   # fill -> job 30
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 4 -t 30 -wtbnode4 --wrap 'sleep 3000'   # fill -> job 31
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 15 -t 30 --wrap 'sleep 3000'   # run -> job 32
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 5 -t 30 --wrap 'sleep 3000'   # run -> job 33
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 20 -t 30 --wrap 'sleep 3000'   # run -> job 34
SLURM_TIME_FORMAT=%s scontrol -d -o show job JOBID   # for each job above, in order
