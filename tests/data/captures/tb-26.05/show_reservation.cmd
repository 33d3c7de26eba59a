# captured 2026-11-27T04:57:27Z from slurm-wlm 26.05.5, as root, env SLURM_CONF=/tmp/tb-startplus-26.05/etc/slurm.conf (two reservations: fsc_maint flags=maint,ignore_jobs on ALL nodes, fsc_part corecnt=32 users=alice,bob)
scontrol -o show reservation
