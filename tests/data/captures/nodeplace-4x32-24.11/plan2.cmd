# scripts/record-nodeplace.py plan2: slurm-wlm 24.11.5, user alice, 2026-11-27T08:28:42Z, testbed /tmp/tb-nodeplace-24.11 (4 nodes x 32 CPUs, CR_CPU)
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 28 -t 30 -wtbnode1 --wrap 'sleep 3000'   # fill -> job 45
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 20 -t 5 -wtbnode2 --wrap 'sleep 3000'   # fill -> job 46
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 12 -t 30 -wtbnode2 --wrap 'sleep 3000'   # fill -> job 47
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 32 -t 30 -wtbnode3 --wrap 'sleep 3000'   # fill -> job 48
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 16 -t 7 -wtbnode4 --wrap 'sleep 3000'   # fill -> job 49
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 16 -t 30 -wtbnode4 --wrap 'sleep 3000'   # fill -> job 50
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 40 -t 10 --wrap 'sleep 3000'   # pend -> job 51
sbatch --parsable --chdir=/tmp/tb-nodeplace-24.11/jobs -o /dev/null -A flat -n 3 -t 30 --wrap 'sleep 3000'   # pend -> job 52
SLURM_TIME_FORMAT=%s scontrol -d -o show job JOBID   # for each job above, in order, once two reads 35 s apart gave the same StartTime and SchedNodeList
