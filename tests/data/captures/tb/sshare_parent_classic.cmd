# captured 2026-11-26T14:57:00Z, as root, env SLURM_CONF=/tmp/tb-treezoo/etc/slurm.conf (by hand, issue #33: scripts/testbed.sh's tree plus sacctmgr add account ops parent=root fairshare=parent; add user alice,bob account=ops fairshare=1; add user carol account=physics fairshare=parent; jobs running: alice@ops 8, bob@ops 4, carol@physics 6, alice@flat 3 CPUs)
sshare -a -l -P 
