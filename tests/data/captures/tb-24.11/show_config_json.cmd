# captured 2026-11-26T14:59:41Z from slurm-wlm 24.11.5, as root, env SLURM_CONF=/tmp/tb-slurm2605-v24.11/etc/slurm.conf (a fresh testbed)
scontrol --json show config
