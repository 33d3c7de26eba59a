# captured 2026-11-26T15:01:36Z from slurm-wlm 26.05.5, as root, env SLURM_CONF=/tmp/tb-slurm2605-cap/etc/slurm.conf, 2 s after `scontrol fsdampeningfactor 3` (slurm.conf: FairShareDampeningFactor=1), before the next decay pass
sshare -a -l -P
