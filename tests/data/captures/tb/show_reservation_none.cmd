# captured 2026-11-27T04:57:24Z, as root, env SLURM_CONF=/tmp/tb-startplus/etc/slurm.conf (no reservations)
scontrol -o show reservation
