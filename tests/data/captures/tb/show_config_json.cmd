# captured 2026-11-26T14:59:24Z from slurm-wlm 22.05.8, as root, env SLURM_CONF=/tmp/tb-slurm2605-v22.05/etc/slurm.conf (a fresh testbed)
scontrol --json show config
(exit 1)
