# Sourced by the recording scripts: how they submit jobs to the testbed TB as its Unix users.
# Needs TB set; defines SLURM_CONF, FSC (the fscontrol to run), sub() and probes().
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export SLURM_CONF=$TB/etc/slurm.conf
# a Slurm 24.11 testbed's clients are wrappers in TB/bin: its env.sh puts them first on PATH
[[ -s $TB/env.sh ]] && . "$TB/env.sh"
FSC=${FSCONTROL:-$HERE/.venv/bin/fscontrol}
J=$TB/jobs
sub() { local user=$1; shift; runuser -u "$user" -- sbatch --parsable --chdir="$J" -o /dev/null "$@"; }
# probe jobs: pending forever in the DOWN partition, so sprio shows every association's factor
probes() {
  for ua in alice:flat bob:flat carol:flat dave:flat alice:physics bob:physics carol:chem; do
    sub "${ua%%:*}" -A "${ua##*:}" -p parked -n 1 -t 1 --wrap 'true' >/dev/null
  done
}
