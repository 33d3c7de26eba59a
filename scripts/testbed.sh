#!/usr/bin/env bash
# testbed.sh - fscontrol's throwaway single-host Slurm cluster WITH accounting
#              (munged + MariaDB + slurmdbd + slurmctld + slurmd), loopback only,
#              everything under ONE state directory, no systemd, no /etc/slurm.
#              Slurm 22.05 (Debian 12's, the host's), 24.11 (Debian 13's, TB_SLURM=24.11) or
#              26.05 (Debian unstable's, TB_SLURM=26.05).
#
# Usage (as root):
#   testbed.sh start  DIR   # create (first time) or restart the testbed in DIR
#   testbed.sh stop   DIR   # cancel jobs, stop the daemons this script started (by PID)
#   testbed.sh status DIR   # show which daemons are alive, node/partition state
#   testbed.sh env    DIR   # print "export SLURM_CONF=..." (24.11: and PATH) for eval in a shell
#   testbed.sh ctld-stop|ctld-start DIR  # only slurmctld (fault tests: a controller outage)
#
# Prerequisites (Debian 12 "bookworm", Slurm 22.05.8): scripts/install-slurm.sh, i.e.
#   apt-get install -y slurm-wlm slurmdbd munge mariadb-server
# Slurm 24.11 (TB_SLURM=24.11): scripts/install-slurm.sh 24.11 builds a Debian 13 root with its
#   Slurm 24.11.5 in $FSCONTROL_TRIXIE_ROOT [/var/cache/fscontrol/trixie]. munged and MariaDB stay
#   the host's (their wire protocols do not depend on the version). slurmdbd, slurmctld and slurmd
#   run chrooted in that root, each in a private mount namespace of its own (unshare) holding the
#   bind mounts it needs (DIR at the same path, /proc, /dev, /sys, the host's passwd/group/hosts),
#   so no mount is ever left on the host. The client commands run on the host through the root's
#   dynamic loader: DIR/bin/sshare etc. are small wrappers; put DIR/bin first on PATH (the "env"
#   subcommand prints that). A testbed keeps the version it was made with (DIR/etc/tb-slurm);
#   the version's default ports are 1000 above 22.05's, so both can run side by side.
# Slurm 26.05 (TB_SLURM=26.05): the same, from the Debian unstable ("sid") root that
#   scripts/install-slurm.sh 26.05 builds in $FSCONTROL_SID_ROOT [/var/cache/fscontrol/sid] (Slurm
#   26.05.5); its default ports are 7000 above 22.05's.
#   (in containers a /usr/sbin/policy-rc.d that exits 101 stops apt from starting services;
#    this script never uses the packaged services, /etc/munge, /etc/slurm or /etc/mysql)
#
# Tunables (environment variables; used when "start" writes DIR/etc/*.conf, i.e. on the first
# start or with TB_REGEN=1):
#   TB_CLUSTER   cluster name                      [tbcluster]
#   TB_NODE      node name                         [tbnode1]
#   TB_NODES     how many nodes, each with TB_CPUS CPUs (and TB_GPUS GPUs): N > 1 runs N slurmd on this
#                host, one per node, each on its own port (NodeName=... Port=: the first SlurmdPort, the
#                others SlurmdPort+2.. +8, in the 10 ports a testbed's offset owns: 16817-16826), named
#                TB_NODE's letters + 1..N (tbnode1..tbnodeN); Debian's slurmd needs no
#                --enable-multiple-slurmd for that  [1] (1 to 8)
#   TB_CPUS      CPUs declared for the node        [128]  (real cores are irrelevant); with TB_NODES > 1
#                a comma list gives each node its own (nodes of different sizes: 24,8), the last
#                repeated for the nodes after it
#   TB_GPUS      GPUs on the node (GresTypes=gpu; gres.conf File= links to /dev/null in DIR/gpu, as the
#                slurmd of 22.05, 24.11 and 26.05 all drop file-less GPUs; billed where a partition's
#                TRESBillingWeights has GRES/gpu)  [4]  (0 = none)
#   TB_HALFLIFE  PriorityDecayHalfLife             [00:05:00] (minutes resolution)
#   TB_CALC      PriorityCalcPeriod                [1]   (minutes; Slurm's minimum is 1)
#   TB_DAMP      FairShareDampeningFactor          [1]   (integer, uint16)
#   TB_PRIORITY_FLAGS  PriorityFlags; empty = Fair Tree (Slurm's default)  [NO_FAIR_TREE]
#   TB_CTLD_PORT/TB_SLURMD_PORT/TB_DBD_PORT/TB_DB_PORT  [16817/16818/16819/16306; 24.11: +1000; 26.05: +7000]
#   TB_SLURM     Slurm version of a NEW testbed: 22.05, 24.11 or 26.05 (an existing DIR keeps its own) [22.05]
#   TB_SEED      1 = create unix users + accounting tree (idempotent)  [1]
#   TB_CTLD_DEBUG / TB_DEBUGFLAGS  SlurmctldDebug / DebugFlags   [info / none]
#   TB_REGEN     1 = regenerate DIR/etc/*.conf on start; default: written on the first start
#                only, later starts reuse them (so hand edits, e.g. FairShareDampeningFactor,
#                survive a stop/start)                                   [0]
#
# Safety rules this script follows:
#   * every TCP listener is on 127.0.0.1 (checked with ss after start; start fails otherwise)
#   * it only ever signals PIDs read from its own pid files in DIR, after checking that
#     /proc/PID/exe is the expected binary (never pkill/killall); for 24.11 the binary in the root
set -euo pipefail

# ----------------------------------------------------------------------------- helpers
die()  { echo "testbed: ERROR: $*" >&2; exit 1; }
log()  { echo "testbed: $(date +%T) $*" >&2; }

usage() { sed -n '2,13p' "$0" >&2; exit 2; }

[[ $# -ge 2 ]] || usage
CMD=$1
D=$2
[[ $EUID -eq 0 ]] || die "must run as root (daemons, useradd, job uid switching)"
if [[ $CMD == start ]]; then mkdir -p "$D"; else [[ -d $D ]] || die "no testbed directory $D"; fi
D=$(cd "$D" && pwd -P)          # absolute, symlink-free

# Slurm version: a testbed keeps the one it was made with (DIR/etc/tb-slurm; a DIR made before
# that file existed is 22.05); TB_SLURM chooses it for a new one and must agree with an old one.
SLURM_VER=${TB_SLURM:-22.05}
if [[ -s $D/etc/tb-slurm ]]; then
  made=$(< "$D/etc/tb-slurm")
elif [[ -s $D/etc/slurm.conf ]]; then
  made=22.05
else
  made=
fi
if [[ -n $made ]]; then
  [[ -z ${TB_SLURM:-} || $TB_SLURM == "$made" ]] \
    || die "$D holds a Slurm $made testbed, not $TB_SLURM (Slurm's state does not move between them; use another DIR)"
  SLURM_VER=$made
fi
case $SLURM_VER in 22.05|24.11|26.05) ;; *) die "unknown TB_SLURM '$SLURM_VER' (22.05, 24.11 or 26.05)" ;; esac
TROOT=                          # 24.11 / 26.05: the Debian root its Slurm is installed in
PORT_SHIFT=0
if [[ $SLURM_VER != 22.05 ]]; then
  case $SLURM_VER in
    24.11) TROOT=${FSCONTROL_TRIXIE_ROOT:-/var/cache/fscontrol/trixie}; PORT_SHIFT=1000 ;;
    26.05) TROOT=${FSCONTROL_SID_ROOT:-/var/cache/fscontrol/sid}; PORT_SHIFT=7000 ;;
  esac
  troot_given=$TROOT
  TROOT=$(cd "$TROOT" 2>/dev/null && pwd -P) \
    || die "no Slurm $SLURM_VER root at $troot_given: run scripts/install-slurm.sh $SLURM_VER"
  [[ -s $TROOT/.fscontrol-ready ]] || die "the Slurm $SLURM_VER root $TROOT is unfinished: run scripts/install-slurm.sh $SLURM_VER"
  # this script's own client calls (sacctmgr, scontrol, sinfo, squeue, scancel) are the root's too
  export PATH=$D/bin:$PATH
fi

CLUSTER=${TB_CLUSTER:-tbcluster}
NODE=${TB_NODE:-tbnode1}
CPUS=${TB_CPUS:-128}
[[ $CPUS =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "TB_CPUS=$CPUS: a number of CPUs, or a comma list of them (one a node)"
IFS=, read -ra CPU_LIST <<< "$CPUS"
CPUS=${CPU_LIST[0]}
NNODES=${TB_NODES:-1}
[[ $NNODES =~ ^[1-8]$ ]] || die "TB_NODES=$NNODES: 1 to 8"
GPUS=${TB_GPUS:-4}
HALFLIFE=${TB_HALFLIFE:-00:05:00}
CALC=${TB_CALC:-1}
DAMP=${TB_DAMP:-1}
PRIO_FLAGS=${TB_PRIORITY_FLAGS-NO_FAIR_TREE}   # set but empty -> Fair Tree
CTLD_PORT=${TB_CTLD_PORT:-$((16817 + PORT_SHIFT))}
SLURMD_PORT=${TB_SLURMD_PORT:-$((16818 + PORT_SHIFT))}
DBD_PORT=${TB_DBD_PORT:-$((16819 + PORT_SHIFT))}
DB_PORT=${TB_DB_PORT:-$((16306 + PORT_SHIFT))}
SEED=${TB_SEED:-1}
CTLD_DEBUG=${TB_CTLD_DEBUG:-info}   # 'verbose' is needed to see DebugFlags=Priority decay lines
DEBUGFLAGS=${TB_DEBUGFLAGS:-}       # e.g. Priority
REGEN=${TB_REGEN:-0}                # 1 = rewrite etc/*.conf even if they exist
DB_PASS=tbpass                  # MariaDB password of the 'slurm' DB user (loopback only)

ETC=$D/etc; RUN=$D/run; LOGD=$D/log; SPOOL=$D/spool; MUNGE=$D/munge; MY=$D/mysql; JOBS=$D/jobs
export SLURM_CONF=$ETC/slurm.conf   # slurmdbd also finds $ETC/slurmdbd.conf through this
MUNGE_SOCK=$MUNGE/munge.socket.2

# Configs written by an earlier start are reused (see TB_REGEN): their ports win over the
# environment, or a later start without the same TB_*_PORT would put MariaDB on another port
# than the one slurmdbd.conf names (slurmdbd then waits for a database that never comes).
conf_val() { [[ -s $ETC/$2 ]] && sed -n "s/^$1=\([0-9]*\).*/\1/p" "$ETC/$2" | head -1; }
if [[ $REGEN != 1 && -s $ETC/slurm.conf && -s $ETC/slurmdbd.conf ]]; then
  CTLD_PORT=$(conf_val SlurmctldPort slurm.conf || true); CTLD_PORT=${CTLD_PORT:-$((16817 + PORT_SHIFT))}
  SLURMD_PORT=$(conf_val SlurmdPort slurm.conf || true); SLURMD_PORT=${SLURMD_PORT:-$((16818 + PORT_SHIFT))}
  DBD_PORT=$(conf_val DbdPort slurmdbd.conf || true); DBD_PORT=${DBD_PORT:-$((16819 + PORT_SHIFT))}
  DB_PORT=$(conf_val StoragePort slurmdbd.conf || true); DB_PORT=${DB_PORT:-$((16306 + PORT_SHIFT))}
fi
MY_SOCK=$MY/run/mysqld.sock
HOST=$(hostname -s)
# the nodes: an existing slurm.conf's (a later start keeps the testbed it made), else TB_NODES'
if [[ $REGEN != 1 && -s $ETC/slurm.conf ]] && grep -q '^NodeName=' "$ETC/slurm.conf"; then
  mapfile -t NODES < <(sed -n 's/^NodeName=\([^ ]*\) .*/\1/p' "$ETC/slurm.conf")
  NNODES=${#NODES[@]}
elif ((NNODES == 1)); then
  NODES=("$NODE")
else
  NODES=(); for ((k = 1; k <= NNODES; k++)); do NODES+=("${NODE%%[0-9]*}$k"); done
fi
NODE=${NODES[0]}
NODESPEC=$NODE; ((NNODES == 1)) || NODESPEC="${NODE%%[0-9]*}[1-$NNODES]"

# component -> pid file and expected executable
declare -A PIDF=(
  [munged]=$MUNGE/munged.pid  [mariadbd]=$MY/run/mysqld.pid  [slurmdbd]=$RUN/slurmdbd.pid
  [slurmctld]=$RUN/slurmctld.pid  [slurmd]=$RUN/slurmd.pid )
# several nodes: one slurmd each, its pid file named by SlurmdPidFile's %n (the first is "slurmd")
if ((NNODES > 1)); then
  PIDF[slurmd]=$RUN/slurmd-$NODE.pid
  for n in "${NODES[@]:1}"; do PIDF[slurmd@$n]=$RUN/slurmd-$n.pid; done
fi
SLURMDS=(slurmd); for n in "${NODES[@]:1}"; do SLURMDS+=("slurmd@$n"); done
declare -A EXE=(
  [munged]=/usr/sbin/munged  [mariadbd]=/usr/sbin/mariadbd  [slurmdbd]=/usr/sbin/slurmdbd
  [slurmctld]=/usr/sbin/slurmctld  [slurmd]=/usr/sbin/slurmd )
# Debian installs /usr/sbin/slurmctld as an alternatives symlink (-> slurmctld-wlm): resolve it
for n in "${!EXE[@]}"; do EXE[$n]=$(readlink -f "${EXE[$n]}"); done
if [[ -n $TROOT ]]; then
  # the Slurm daemons are the root's, their alternatives symlinks resolved inside the root
  for n in slurmdbd slurmctld slurmd; do
    p=/usr/sbin/$n
    for _ in 1 2 3 4; do [[ -L $TROOT$p ]] || break; p=$(readlink "$TROOT$p"); done
    EXE[$n]=$TROOT$p
  done
fi

# pid_of NAME -> prints the PID if the pid file exists AND that PID is the expected binary
pid_of() {
  local f=${PIDF[$1]} pid exe bin=${EXE[${1%%@*}]}
  [[ -s $f ]] || return 1
  pid=$(tr -dc '0-9' < "$f")
  [[ -n $pid && -d /proc/$pid ]] || return 1
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
  # the path (a binary replaced by an upgrade reads "PATH (deleted)"), or the same file (a
  # chrooted daemon in a mount namespace of its own may show its path otherwise)
  [[ ${exe% (deleted)} == "$bin" || /proc/$pid/exe -ef $bin ]] || return 1
  echo "$pid"
}

# wait_for DESCRIPTION TIMEOUT_S COMMAND... : poll every 0.2 s until COMMAND succeeds
wait_for() {
  local what=$1 t=$2; shift 2
  local end=$(( $(date +%s) + t ))
  until "$@" >/dev/null 2>&1; do
    (( $(date +%s) < end )) || die "timeout (${t}s) waiting for: $what (logs in $LOGD, $MY, $MUNGE)"
    sleep 0.2
  done
}

# own_pids NAME -> the PIDs of NAME started with this testbed's slurm.conf (`-f $SLURM_CONF` in
# the command line, the expected binary), whatever the pid file says. Slurm 23.11+ restarts
# slurmctld on `scontrol reconfigure`: the daemon execs a new one, which rewrites the pid
# file a moment later; a stop in that moment would kill the old PID, remove the file the new
# one had just written and leave the new daemon running with no pid file (found by CI on 24.11).
own_pids() {
  local d a
  local -a args
  [[ $1 == slurmctld || $1 == slurmd ]] || return 0
  for d in /proc/[0-9]*; do
    [[ $d/exe -ef ${EXE[$1]} ]] || continue
    mapfile -d '' -t args < "$d/cmdline" 2>/dev/null || continue
    for a in "${args[@]}"; do [[ $a == "$SLURM_CONF" ]] && { echo "${d#/proc/}"; break; }; done
  done
  return 0
}

# stop_group NAME... : SIGTERM the recorded PIDs (only those, only if /proc/PID/exe is the
# expected binary) and, for the Slurm daemons, any other of this testbed's (own_pids); wait up
# to 30 s for all of them, looking again for a daemon a restart started meanwhile, then SIGKILL
stop_group() {
  local name pid i alive
  local -a pids=()
  for name in "$@"; do
    if pid=$(pid_of "$name"); then
      log "$name: SIGTERM pid $pid"; kill -TERM "$pid" 2>/dev/null || true; pids+=("$pid")
    else
      log "$name: not running"
    fi
  done
  for i in $(seq 1 300); do
    alive=0
    for name in "$@"; do
      for pid in $(own_pids "$name"); do
        [[ " ${pids[*]} " == *" $pid "* ]] && continue
        log "$name: SIGTERM pid $pid (no pid file names it)"; kill -TERM "$pid" 2>/dev/null || true; pids+=("$pid")
      done
    done
    # a zombie (the daemon's own child, not yet reaped) has stopped: only a readable exe is alive
    for pid in "${pids[@]}"; do [[ -e /proc/$pid/exe ]] && alive=1; done
    (( alive )) || break; sleep 0.1
  done
  for pid in "${pids[@]}"; do
    [[ -e /proc/$pid/exe ]] && { log "pid $pid still alive after 30 s, SIGKILL"; kill -KILL "$pid" || true; }
  done
  for name in "$@"; do rm -f "${PIDF[$name]}"; done
}

# ----------------------------------------------------------------------------- config files
write_configs() {
  mkdir -p "$ETC" "$RUN" "$LOGD" "$SPOOL/ctld" "$SPOOL/slurmd" "$MUNGE" "$MY/data" "$MY/run" "$MY/tmp" "$JOBS"
  # users' client commands must read slurm.conf and reach the munge socket: the whole path
  # has to be world-traversable (mktemp -d gives 0700 - that breaks sbatch as alice)
  chmod 755 "$D" "$ETC" "$RUN" "$LOGD" "$MUNGE"
  chmod 1777 "$JOBS"            # job working dir / output files for any user
  # GOTCHA: slurmstepd execs the batch script from SlurmdSpoolDir/jobNNNNN/ AS THE JOB USER,
  # so the spool path must be traversable by everyone (0700 -> "execve(): Permission denied")
  chmod 755 "$SPOOL" "$SPOOL/slurmd"
  # several nodes: each slurmd has its own spool, pid and log file (SlurmdSpoolDir's %n ...)
  local NSUF= n k port ncpu; ((NNODES == 1)) || NSUF=-%n
  for n in "${NODES[@]}"; do ((NNODES == 1)) || { mkdir -p "$SPOOL/slurmd-$n"; chmod 755 "$SPOOL/slurmd-$n"; }; done
  chmod 700 "$MY" "$SPOOL/ctld"

  echo "$SLURM_VER" > "$ETC/tb-slurm"; chmod 644 "$ETC/tb-slurm"
  GRES_TYPES=; ((GPUS > 0)) && GRES_TYPES=gpu
  local NODELINES=
  if ((NNODES == 1)); then
    NODELINES="NodeName=$NODE NodeHostname=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS ${GRES_TYPES:+Gres=gpu:$GPUS }State=UNKNOWN"
  else
    for ((k = 0; k < NNODES; k++)); do
      port=$SLURMD_PORT; ((k == 0)) || port=$((SLURMD_PORT + 1 + k))   # (SLURMD_PORT + 1 is slurmdbd's)
      ncpu=${CPU_LIST[k]:-${CPU_LIST[-1]}}
      NODELINES+="${NODELINES:+$'\n'}NodeName=${NODES[k]} NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$port CPUs=$ncpu ${GRES_TYPES:+Gres=gpu:$GPUS }State=UNKNOWN"
    done
  fi
  cat > "$ETC/slurm.conf" <<EOF
# generated by testbed.sh - single host, loopback only
ClusterName=$CLUSTER
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
# bind listeners to the address the hostname resolves to (checked to be 127.x) instead of 0.0.0.0
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCK
StateSaveLocation=$SPOOL/ctld
SlurmdSpoolDir=$SPOOL/slurmd$NSUF
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd$NSUF.pid
SlurmctldLogFile=$LOGD/slurmctld.log
SlurmdLogFile=$LOGD/slurmd$NSUF.log
SlurmctldDebug=$CTLD_DEBUG
${DEBUGFLAGS:+DebugFlags=$DEBUGFLAGS}
SlurmdDebug=info
# no cgroups: plain process tracking, no task binding, no job metrics
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
# scheduling: CPUs are the consumable resource, memory is not tracked
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# accept the declared CPU count although the host has fewer cores
SlurmdParameters=config_overrides
# accounting through slurmdbd (needed for fairshare usage/decay)
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
# GOTCHA: client->slurmdbd messages (sacctmgr, sshare->dbd, slurmctld->dbd) are signed with
# the munge socket named here, NOT the one in AuthInfo; without it they try /run/munge/...
AccountingStoragePass=$MUNGE_SOCK
# GOTCHA: without "limits", 22.05 never charges the tail of a job (last PriorityCalcPeriod
# tick -> job end) and never charges jobs that start and end between two ticks
# (priority_g_job_end() is only called from the limits code path); TRESRunMins also stays 0.
AccountingStorageEnforce=associations,limits,qos
# count-only GPUs (no device files): sacct's AllocTRES and the billing can count them
${GRES_TYPES:+GresTypes=$GRES_TYPES}
${GRES_TYPES:+AccountingStorageTRES=gres/gpu}
JobCompType=jobcomp/none
MailProg=/bin/true
# classic fairshare (NO_FAIR_TREE; TB_PRIORITY_FLAGS= for Fair Tree) with a short, observable decay
PriorityType=priority/multifactor
${PRIO_FLAGS:+PriorityFlags=$PRIO_FLAGS}
PriorityDecayHalfLife=$HALFLIFE
PriorityCalcPeriod=$CALC
PriorityUsageResetPeriod=NONE
FairShareDampeningFactor=$DAMP
PriorityWeightFairshare=100000
PriorityWeightAge=0
PriorityWeightJobSize=0
PriorityWeightPartition=0
PriorityWeightQOS=0
PriorityWeightAssoc=0
# nodes / partitions
$NODELINES
PartitionName=normal  Nodes=$NODESPEC Default=YES MaxTime=INFINITE DefaultTime=01:00:00 State=UP
# admin-only partition for the fairshare padding ("dummy") user
PartitionName=fsadmin Nodes=$NODESPEC Default=NO MaxTime=INFINITE DefaultTime=00:10:00 State=UP AllowGroups=fsdummy,root PriorityTier=10 TRESBillingWeights=CPU=1.0
# probe partition: State=DOWN, so jobs submitted here stay PENDING (Reason=PartitionDown)
# forever without using CPUs or accruing usage, yet are "eligible" -> sprio shows their live
# fairshare factor (sprio hides held jobs and jobs whose --begin is in the future)
PartitionName=parked  Nodes=$NODESPEC Default=NO MaxTime=INFINITE DefaultTime=00:01:00 State=DOWN
EOF
  if [[ -n $TROOT ]]; then
    # 24.11 / 26.05: the daemons run chrooted in the root, where its own path is bind-mounted too, and the
    # clients run on the host through the root's loader (DIR/bin): this one path serves both
    printf '# Slurm %s from %s\nPluginDir=%s\n' "$SLURM_VER" "$TROOT" "$TROOT/usr/lib/x86_64-linux-gnu/slurm-wlm" >> "$ETC/slurm.conf"
  fi
  chmod 644 "$ETC/slurm.conf"
  if ((GPUS > 0)); then
    # GPUs with no hardware: Slurm's gres/gpu drops a file-less GPU (22.05: "Removing file-less GPU
    # gpu:(null) from final GRES list"; 24.11 and 26.05: "Ignoring file-less GPU gpu:(null) from final
    # GRES list"), then the node is INVAL: "gres/gpu count reported lower than configured (0 < 4)";
    # 22.05 wants a character device, so each GPU is a link to /dev/null (24.11 and 26.05 take the
    # same); with task/none and no cgroups nothing opens them (CUDA_VISIBLE_DEVICES is set from their index)
    mkdir -p "$D/gpu"; local i
    for ((i = 0; i < GPUS; i++)); do ln -sfn /dev/null "$D/gpu/fakegpu$i"; done
    printf '# generated by testbed.sh: %s GPUs, links to /dev/null\nNodeName=%s Name=gpu File=%s/gpu/fakegpu[0-%s]\n' \
      "$GPUS" "$NODESPEC" "$D" "$((GPUS - 1))" > "$ETC/gres.conf"
  else
    rm -f "$ETC/gres.conf"
  fi
  [[ ! -e $ETC/gres.conf ]] || chmod 644 "$ETC/gres.conf"

  cat > "$ETC/slurmdbd.conf" <<EOF
# generated by testbed.sh
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCK
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
CommunicationParameters=NoInAddrAny
SlurmUser=root
DebugLevel=info
LogFile=$LOGD/slurmdbd.log
PidFile=$RUN/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF
  chmod 600 "$ETC/slurmdbd.conf"   # slurmdbd refuses anything but 0600 owned by SlurmUser

  cat > "$D/env.sh" <<EOF
export SLURM_CONF=$ETC/slurm.conf
${TROOT:+export PATH=$D/bin:\$PATH}
EOF
  chmod 644 "$D/env.sh"
}

# ----------------------------------------------------------------------------- Slurm 24.11 / 26.05 root
# client wrappers DIR/bin/NAME: the root's NAME run by the root's dynamic loader with the root's
# libraries (no chroot, so any user can run them); its plugins come from PluginDir (slurm.conf)
write_wrappers() {
  [[ -n $TROOT ]] || return 0
  local lib=$TROOT/usr/lib/x86_64-linux-gnu ld=$TROOT/usr/lib64/ld-linux-x86-64.so.2 f name
  [[ -x $ld ]] || die "no dynamic loader $ld in the Slurm $SLURM_VER root"
  mkdir -p "$D/bin"; chmod 755 "$D/bin"
  while read -r f; do
    [[ $f == /usr/bin/* && -x $TROOT$f ]] || continue
    name=${f##*/}
    printf '#!/bin/sh\n# generated by testbed.sh: Slurm %s %s from %s\nexec %s --library-path %s --argv0 %s %s "$@"\n' \
      "$SLURM_VER" "$name" "$TROOT" "$ld" "$lib/slurm-wlm:$lib" "$name" "$TROOT$f" > "$D/bin/$name.new"
    chmod 755 "$D/bin/$name.new"; mv -f "$D/bin/$name.new" "$D/bin/$name"
  done < "$TROOT/var/lib/dpkg/info/slurm-client.list"
  [[ -x $D/bin/sacctmgr && -x $D/bin/sshare ]] || die "no Slurm clients in $TROOT (slurm-client.list)"
}

# in_root CMD ARGS... : run CMD (a path inside the root) chrooted in the 24.11 / 26.05 root, in a private
# mount namespace made for it: its bind mounts live and die with the daemon, none reach the host
SELF=$(readlink -f "$0")
in_root() { unshare --mount --propagation private -- "$SELF" _inroot "$D" "$@"; }

# (inside that namespace) the mounts, then exec the command in the chroot
inroot_exec() {
  local m
  # the root's own path inside itself, so PluginDir (written for the host's clients) holds there too
  mkdir -p "$TROOT$TROOT" "$TROOT$D"
  mount --bind "$TROOT" "$TROOT$TROOT"
  mount --bind "$D" "$TROOT$D"
  for m in /proc /dev /sys; do mount --rbind "$m" "$TROOT$m"; done
  # the host's users (job owners, alice...) and names (the hostname must resolve to 127.x)
  for m in /etc/passwd /etc/group /etc/hosts; do
    [[ -e $TROOT$m ]] || touch "$TROOT$m"   # (a minbase root has no /etc/hosts)
    mount --bind "$m" "$TROOT$m"; mount -o remount,bind,ro "$TROOT$m"
  done
  exec chroot "$TROOT" "$@"
}

# ----------------------------------------------------------------------------- daemons
start_munged() {
  pid_of munged >/dev/null && { log "munged: already running"; return; }
  [[ -s $MUNGE/munge.key ]] || mungekey --create --keyfile="$MUNGE/munge.key"
  chmod 600 "$MUNGE/munge.key"
  # socket dir must be 0755 ("execute permissions for all required"), key dir not group/other-writable
  munged --socket="$MUNGE_SOCK" --key-file="$MUNGE/munge.key" --pid-file="${PIDF[munged]}" \
         --log-file="$MUNGE/munged.log" --seed-file="$MUNGE/munged.seed"
  wait_for "munged socket" 20 munge -S "$MUNGE_SOCK" -n
}

start_mariadb() {
  pid_of mariadbd >/dev/null && { log "mariadbd: already running"; return; }
  if [[ ! -d $MY/data/mysql ]]; then
    mariadb-install-db --no-defaults --datadir="$MY/data" --user=root \
      --auth-root-authentication-method=socket --skip-test-db --skip-name-resolve \
      > "$MY/install.log" 2>&1 || die "mariadb-install-db failed, see $MY/install.log"
  fi
  # plain background process in its own session; TCP on 127.0.0.1 only, private socket
  setsid mariadbd --no-defaults --user=root --datadir="$MY/data" --socket="$MY_SOCK" \
      --port="$DB_PORT" --bind-address=127.0.0.1 --skip-name-resolve \
      --pid-file="${PIDF[mariadbd]}" --log-error="$MY/mysqld.err" --tmpdir="$MY/tmp" \
      --innodb-buffer-pool-size=256M --innodb-log-file-size=64M \
      --innodb-lock-wait-timeout=900 --max-allowed-packet=16M \
      < /dev/null > /dev/null 2>&1 &
  wait_for "mariadbd" 60 mariadb-admin --no-defaults -S "$MY_SOCK" -u root ping
  wait_for "mariadbd pid file" 10 pid_of mariadbd
  mariadb --no-defaults -S "$MY_SOCK" -u root -e \
    "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
     GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"
  # 24.11's slurmdbd, creating the database itself, fails its first connection against this
  # MariaDB without TLS ("SSL is required, but the server does not support it": Debian 13's client
  # library asks for TLS on that path) and retries 5 s later; an existing database skips that path
  [[ -z $TROOT ]] || mariadb --no-defaults -S "$MY_SOCK" -u root -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;"
}

start_slurmdbd() {
  pid_of slurmdbd >/dev/null && { log "slurmdbd: already running"; return; }
  # daemonizes, writes PidFile; reads $ETC/slurmdbd.conf via SLURM_CONF's dir
  if [[ -n $TROOT ]]; then in_root /usr/sbin/slurmdbd; else slurmdbd; fi
  wait_for "slurmdbd" 60 sacctmgr -n show cluster
  wait_for "slurmdbd pid file" 10 pid_of slurmdbd
}

start_slurmctld() {
  pid_of slurmctld >/dev/null && { log "slurmctld: already running"; return; }
  # a slurmctld of this testbed with no (or a lost) pid file: the one a 24.11+ `scontrol
  # reconfigure` just exec'd, slow to write its file on a loaded machine. Starting another would
  # fail to bind ("Existing slurmctld process likely already is listening") and, exiting, remove
  # the file the running one writes: every later start then failed the same way (a local CI,
  # 14 setup errors on 24.11). Adopt it instead.
  local own; own=$(own_pids slurmctld | head -1)
  if [[ -n $own ]]; then
    log "slurmctld: already running as pid $own (pid file missing): adopted"
    wait_for "slurmctld" 60 scontrol ping
    pid_of slurmctld >/dev/null || echo "$own" > "${PIDF[slurmctld]}"
    return
  fi
  if [[ -n $TROOT ]]; then in_root /usr/sbin/slurmctld -f "$SLURM_CONF"; else slurmctld -f "$SLURM_CONF"; fi
  wait_for "slurmctld" 60 scontrol ping
  wait_for "slurmctld pid file" 30 pid_of slurmctld
}

start_slurmd() {
  local n key
  for n in "${NODES[@]}"; do
    key=slurmd; [[ $n == "$NODE" ]] || key=slurmd@$n
    pid_of "$key" >/dev/null && { log "slurmd of $n: already running"; continue; }
    if [[ -n $TROOT ]]; then in_root /usr/sbin/slurmd -f "$SLURM_CONF" -N "$n"; else slurmd -f "$SLURM_CONF" -N "$n"; fi
    wait_for "slurmd pid file of $n" 20 pid_of "$key"
  done
  # the nodes must register and become usable (idle/mixed/allocated), not down/drained
  for n in "${NODES[@]}"; do
    wait_for "node $n to become idle" 60 bash -c \
      "sinfo -h -n '$n' -o %t | grep -Eq '^(idle|mix|alloc)\$'"
  done
}

# ----------------------------------------------------------------------------- accounting seed
seed_unix_users() {
  local u
  for u in alice bob carol dave fsdummy; do
    id "$u" >/dev/null 2>&1 || useradd --no-create-home --shell /bin/sh "$u"
  done
}

# sacctmgr returns rc=1 with "Nothing new added" when an entity exists -> tolerate that
sam() { sacctmgr -i "$@" >/dev/null 2>&1 || true; }

seed_cluster() { sam add cluster "$CLUSTER"; }

seed_accounts() {
  # tree (classic fairshare):
  #   root ─ flat    ─ alice bob carol dave     (flat: default account of the real users)
  #        ─ science ─ physics ─ alice bob      (two-level: account under account)
  #                  ─ chem    ─ carol
  #        ─ fsadmin ─ fsdummy                  (padding user, alone in its own top-level account)
  # every association has fairshare=1, except science=2 (two sub-accounts)
  sam add account flat,science,fsadmin cluster="$CLUSTER" fairshare=1
  sam modify account where name=science cluster="$CLUSTER" set fairshare=2
  sam add account physics,chem parent=science cluster="$CLUSTER" fairshare=1
  sam add user alice,bob,carol,dave account=flat defaultaccount=flat fairshare=1 cluster="$CLUSTER"
  sam add user alice,bob account=physics fairshare=1 cluster="$CLUSTER"
  sam add user carol account=chem fairshare=1 cluster="$CLUSTER"
  sam add user fsdummy account=fsadmin defaultaccount=fsadmin fairshare=1 cluster="$CLUSTER"
  # QOS for the steady padding job: its UsageFactor is what the agent adjusts
  sam add qos fspad
  sam modify qos where name=fspad set usagefactor=1
  sam modify user where name=fsdummy cluster="$CLUSTER" set qos+=fspad
  # grep reads to the end (not -q): under pipefail an early exit is sacctmgr's SIGPIPE, which a
  # large tree's output (tests/test_integration_treezoo.py, kept with FSCONTROL_KEEP_TESTBED=1) hits
  sacctmgr -n -P show assoc cluster="$CLUSTER" format=account,user | grep '^chem|carol$' >/dev/null \
    || die "accounting seed failed (sacctmgr show assoc)"
}

# ----------------------------------------------------------------------------- loopback check
check_loopback() {
  local pids p bad=0 line
  pids=$(for n in munged mariadbd slurmdbd slurmctld "${SLURMDS[@]}"; do pid_of "$n" || true; done)
  while read -r line; do
    [[ -z $line ]] && continue
    for p in $pids; do
      if [[ $line == *"pid=$p,"* ]]; then
        local addr; addr=$(awk '{print $5}' <<<"$line")
        case $addr in 127.*|'[::1]'*|'[::ffff:127.'*) ;; *) echo "NON-LOOPBACK: $line" >&2; bad=1 ;; esac
      fi
    done
  done < <(ss -H -lntup 2>/dev/null)
  (( bad == 0 )) || { log "non-loopback listener found, stopping"; do_stop; die "refusing to run on non-loopback addresses"; }
}

# ----------------------------------------------------------------------------- subcommands
do_start() {
  local t0=$SECONDS
  # daemons bind to whatever the hostname resolves to (NoInAddrAny) -> must be loopback
  local haddr; haddr=$(getent ahostsv4 "$HOST" | awk 'NR==1{print $1}')
  [[ $haddr == 127.* ]] || die "hostname $HOST resolves to '$haddr', not 127.x; add '127.0.1.1 $HOST' to /etc/hosts"
  local -a need=(munged mungekey mariadbd mariadb-install-db)
  [[ -n $TROOT ]] || need+=(slurmdbd slurmctld slurmd sacctmgr)
  for b in "${need[@]}"; do
    command -v "$b" >/dev/null || die "missing $b; run scripts/install-slurm.sh${TROOT:+ $SLURM_VER}"
  done
  # A directory left by an older testbed.sh (a CI machine keeps /tmp between runs) holds configs
  # this generator no longer writes (e.g. no GPUs): the layout stamp is the hash of write_configs,
  # and a stale one rewrites the configs (ports kept, above) after stopping daemons started on them.
  local layout; layout=$(declare -f write_configs | sha256sum | cut -c1-16)
  if [[ ! -s $ETC/slurm.conf || $REGEN == 1 ]]; then
    write_configs
  elif [[ $(cat "$ETC/tb-layout" 2>/dev/null) != "$layout" ]]; then
    log "configs in $ETC are from an older testbed layout: rewriting them (ports kept)"
    if pid_of slurmctld >/dev/null || pid_of slurmd >/dev/null || pid_of slurmdbd >/dev/null; then do_stop; fi
    write_configs
  else
    log "reusing existing $ETC/slurm.conf and slurmdbd.conf (TB_REGEN=1 to rewrite)"
  fi
  echo "$layout" > "$ETC/tb-layout"; chmod 644 "$ETC/tb-layout"
  write_wrappers
  [[ $SEED == 1 ]] && seed_unix_users
  start_munged;    log "munged up     (pid $(pid_of munged))"
  start_mariadb;   log "mariadbd up   (pid $(pid_of mariadbd))"
  start_slurmdbd;  log "slurmdbd up   (pid $(pid_of slurmdbd))"
  seed_cluster                       # cluster row must exist before slurmctld registers
  [[ $SEED == 1 ]] && seed_accounts
  start_slurmctld; log "slurmctld up  (pid $(pid_of slurmctld))"
  start_slurmd;    log "slurmd up     (pid $(pid_of slurmd))"
  check_loopback
  log "testbed (Slurm $SLURM_VER) ready in $((SECONDS - t0)) s.  Use:  export SLURM_CONF=$SLURM_CONF${TROOT:+ PATH=$D/bin:\$PATH}"
}

do_stop() {
  local t0=$SECONDS ids i
  # 1. cancel every job of this cluster so no slurmstepd/job processes outlive slurmd
  if pid_of slurmctld >/dev/null; then
    ids=$(squeue -h -o %A 2>/dev/null || true)
    if [[ -n $ids ]]; then
      log "cancelling jobs: $(echo $ids)"
      scancel $ids 2>/dev/null || true
      for i in $(seq 1 100); do [[ -z $(squeue -h -o %A 2>/dev/null) ]] && break; sleep 0.2; done
    fi
  fi
  # 2. daemons in reverse dependency order, each by its own recorded PID
  #    (slurmctld flushes pending accounting records to slurmdbd on shutdown, so dbd after it;
  #     MariaDB only after slurmdbd; munged is needed by everything, so last)
  stop_group "${SLURMDS[@]}" slurmctld
  stop_group slurmdbd
  stop_group mariadbd munged
  log "stopped in $((SECONDS - t0)) s (state kept in $D; rm -rf it for a clean slate)"
}

do_status() {
  local n p rc=0
  for n in munged mariadbd slurmdbd slurmctld "${SLURMDS[@]}"; do
    if p=$(pid_of "$n"); then echo "$n running pid=$p"; else echo "$n STOPPED"; rc=1; fi
  done
  if pid_of slurmctld >/dev/null; then sinfo; squeue; fi
  echo "listeners:"; ss -H -lntp 2>/dev/null | grep -E 'munged|mariadbd|slurm' || true
  return $rc
}

case $CMD in
  start)  do_start ;;
  stop)   do_stop ;;
  status) do_status ;;
  env)    echo "export SLURM_CONF=$SLURM_CONF"; [[ -z $TROOT ]] || echo "export PATH=$D/bin:\$PATH" ;;
  ctld-stop)  stop_group slurmctld ;;
  ctld-start) start_slurmctld ;;
  _inroot)    [[ -n $TROOT ]] || die "_inroot: not a testbed in a Debian root (24.11, 26.05)"; shift 2; inroot_exec "$@" ;;
  *)      usage ;;
esac
