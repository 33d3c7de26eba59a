# captured 2026-11-26T15:02:46Z from slurm-wlm 26.05.5, as root, env SLURM_CONF=/tmp/tb-slurm2605-cap/etc/slurm.conf, the same moment as sshare_d3
sprio -n -o '%i|%u|%r|%y|%f'
