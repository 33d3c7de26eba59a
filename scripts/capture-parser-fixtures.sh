#!/usr/bin/env bash
# Record real Slurm outputs for the parser tests into tests/data/captures/tb/ (or OUT: tb-24.11/,
# tb-26.05/ for a testbed of that Slurm), each NAME.txt
# with a NAME.cmd beside it (command, user, time). Needs the testbed (scripts/testbed.sh) up,
# with jobs in the queue (scripts/record-sample.sh leaves some). Run as root.
# It sets dave@flat to fairshare=parent for the capture and puts it back to 1 afterwards.
set -euo pipefail
TB=${1:-/tmp/fscontrol-testbed}
OUT=${2:-tests/data/captures/tb}
export SLURM_CONF=$TB/etc/slurm.conf
# a Slurm 24.11 / 26.05 testbed's clients are wrappers in TB/bin: its env.sh puts them first on PATH
[[ -s $TB/env.sh ]] && . "$TB/env.sh"
VER=$(sinfo --version)
mkdir -p "$OUT"
rec() {  # rec NAME [ENV=VAL ...] -- CMD ARGS...
  local name=$1; shift; local -a envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  { echo "# captured $(date -u +%FT%TZ) from $VER, as $(id -un), env SLURM_CONF=$SLURM_CONF ${envs[*]}"; printf '%q ' "$@"; echo; } > "$OUT/$name.cmd"
  env "${envs[@]}" "$@" > "$OUT/$name.txt" 2>&1 || echo "(exit $?)" >> "$OUT/$name.cmd"
}
C=$(scontrol show config | awk '$1=="ClusterName"{print $3}')
sacctmgr -i modify user where name=dave account=flat set fairshare=parent >/dev/null
rec sshare_parent_M -- sshare -M "$C" -a -l -P
sacctmgr -i modify user where name=dave account=flat set fairshare=1 >/dev/null
rec sshare_long -- sshare -a -l -P
rec sshare_as_user -- runuser -u alice -- sshare -l -P
rec show_config -- scontrol show config
# what source.LiveSlurm.config runs first: JSON on 26.05+, the text on 24.11, refused by 22.05
rec show_config_json -- scontrol --json show config
rec squeue_fmt SLURM_TIME_FORMAT=%s -- squeue -a -o '%i|%u|%a|%P|%q|%T|%D|%C|%Q|%y|%r|%V|%S|%l'
rec sprio_fmt -- sprio -n -o '%i|%u|%r|%y|%f'
# what fscontrol itself runs (fscontrol/slurm/parse.py): squeue's long-name format, root's usage alone
SQ='JobID:0|,UserName:0|,Account:0|,Partition:0|,QOS:0|,State:0|,NumNodes:0|,NumCPUs:0|,PriorityLong:0|,Nice:0|,Reason:0|,SubmitTime:0|,StartTime:0|,TimeLimit:0|,admin_comment:0'
rec squeue_long SLURM_TIME_FORMAT=%s -- squeue -a -O "$SQ"
rec sshare_root -- sshare -n -P -A root -o Account,User,RawUsage
rec qos -- sacctmgr -P show qos format=Name,UsageFactor
S=$(date -d '-30 min' +%FT%T); E=$(date +%FT%T)
rec sacct_fmt SLURM_TIME_FORMAT=%s -- sacct -a -X -T -P -S "$S" -E "$E" -o JobID,User,Account,Partition,QOS,State,AllocCPUS,AllocTRES,NNodes,ElapsedRaw,Submit,Start,End
rec sacct_fmt_iso -- sacct -a -X -T -P -S "$S" -E "$E" -o JobID,User,Account,Partition,QOS,State,AllocCPUS,AllocTRES,NNodes,ElapsedRaw,Submit,Start,End
# fscontrol/slurm/versions.py's entries: sprio's own columns, the field for a job's wait (one name per release)
rec sprio_default -- sprio
rec sprio_long -- sprio -l
rec sacct_planned -- sacct -a -X -P -o JobID,Planned
rec sacct_reserved -- sacct -a -X -P -o JobID,Reserved
ls "$OUT"
