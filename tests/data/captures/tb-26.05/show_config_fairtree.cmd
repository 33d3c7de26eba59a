# captured 2026-11-26T15:51:36Z from slurm-wlm 26.05.5, as root, env SLURM_CONF=/tmp/tb-slurm2605-cap/etc/slurm.conf (the same testbed restarted under Fair Tree: TB_PRIORITY_FLAGS= TB_REGEN=1, no PriorityFlags line)
scontrol show config
