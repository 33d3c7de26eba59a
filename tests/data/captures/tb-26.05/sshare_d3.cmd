# captured 2026-11-26T15:02:46Z from slurm-wlm 26.05.5, as root, env SLURM_CONF=/tmp/tb-slurm2605-cap/etc/slurm.conf, 72 s after `scontrol fsdampeningfactor 3` (a decay pass since; PriorityCalcPeriod 1 min)
sshare -a -l -P
