# sshare -a --json, Slurm 24.11.5 (Debian 13 package, the project's testbed: TB_SLURM=24.11 scripts/testbed.sh),
# as root, 2026-11-23T16:44:53Z, classic fair-share (PriorityFlags=NO_FAIR_TREE), 2 running jobs; data_parser v0.0.42.
# Beside it: sshare -a -l -P of the same moment, sshare_a_l_P.txt
