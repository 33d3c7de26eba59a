# captured 2026-11-27T04:57:24Z, as root, env SLURM_CONF=/tmp/tb-startplus/etc/slurm.conf (two reservations: fsc_maint flags=maint,ignore_jobs on ALL nodes, fsc_part corecnt=32 users=alice,bob)
scontrol -o show reservation
