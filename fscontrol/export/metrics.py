"""Prometheus text exposition for node_exporter's textfile collector.

`render` is pure (plain data in, text out); `write_textfile` replaces the file atomically (a
temporary file in the same folder, fsync, rename), because the collector may read it at any
moment and must never see half a file. Units follow Prometheus conventions: seconds, ratios;
usage is in core-hours (billing-hours), the unit admins set u* in.

Privacy (fscontrol.export.privacy): node_exporter serves this file over HTTP to anyone who can
reach it. The per-user series (`fscontrol_user_*`, labelled by account and user) are written for a
cluster only when its PrivateData hides no names (sshare shows them to anyone), or when the admin
names a group for node_exporter (`[agent] metrics_group`): then the file is 0640 root:GROUP, for
node_exporter alone. Otherwise the file is 0644 and carries the cluster's aggregate series alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "fscontrol_"


@dataclass
class Family:
    name: str
    help: str
    kind: str = "gauge"  # gauge | counter
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)

    def add(self, value: float | int | None, **labels: str) -> None:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return  # unknown: leave the series out rather than export a made-up 0
        self.samples.append((labels, float(value)))


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _value(v: float) -> str:
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(v) if v != int(v) or abs(v) >= 1e15 else str(int(v))


def render(families: Iterable[Family]) -> str:
    out = []
    for f in families:
        if not f.samples:
            continue
        name = PREFIX + f.name
        out.append(f"# HELP {name} {f.help}")
        out.append(f"# TYPE {name} {f.kind}")
        for labels, value in f.samples:
            lab = ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items())
            out.append(f"{name}{{{lab}}} {_value(value)}" if lab else f"{name} {_value(value)}")
    return "\n".join(out) + "\n"


def families(clusters: Mapping[str, dict], ticks: list[dict]) -> list[Family]:
    """Metric families from per-cluster state: {cluster: {"status": status_data(...) or None,
    "decision": latest decision row or None, "holds": agent holds, "name_users": per-user series
    allowed (privacy.metrics_name_users; absent: False)}} and store.tick_stats rows."""
    fam = {
        "total": Family("usage_core_hours", "Root RawUsage (decayed usage), core-hours, padding included."),
        "real": Family("real_usage_core_hours", "Decayed usage of real users (padding excluded), core-hours."),
        "padding": Family("padding_core_hours", "Decayed usage of the dummy (padding) association, core-hours."),
        "padding_target": Family("padding_target_core_hours", "Padding the controller aims for, core-hours."),
        "d": Family("damping_factor", "FairShareDampeningFactor in force in slurmctld."),
        "d_target": Family("damping_factor_target", "FairShareDampeningFactor the controller wants."),
        "halving": Family("halving_core_hours", "Usage that halves fair-share at the reference share (achieved), core-hours."),
        "target": Family("halving_target_core_hours", "The admin's target u*: fair-share should halve every u* core-hours."),
        "error": Family("halving_error_ratio", "The snapshot's halving (S_ref d U at the d in force) / target - 1, before the agent acts on it."),
        "error_slurm": Family("halving_error_slurm_ratio",
                              "The halving Slurm's priorities used at the last decay pass the agent recorded / target - 1."),
        "s_ref": Family("reference_share", "The reference share S_ref the halving is computed for."),
        "users": Family("active_users", "Users with usage."),
        "f": Family("user_fairshare", "Fair-share factor F of the association (0..1): classic 2^(-UE/(S d)), or Fair Tree's rank / N."),
        "rank": Family("user_fairtree_rank", "Fair Tree: the user association's rank (N is the first; F = rank / N)."),
        "lfs": Family("user_level_fs", "Fair Tree: LevelFS of the user association among its siblings (+Inf: no usage)."),
        "ih": Family("user_implied_halving_core_hours",
                     "Yalim's usage / -log2 F, core-hours: only for a user alone in a first-tier account, where it is the halving usage."),
        "halve": Family("user_usage_to_halve_core_hours",
                        "The extra usage of this user alone that halves its F (exact for shared accounts), core-hours."),
        "usage": Family("user_usage_core_hours", "The association's decayed usage, core-hours."),
        "holds": Family("agent_holds", "Jobs the agent holds or demoted (its ledger)."),
        "snap": Family("snapshot_timestamp_seconds", "When the latest snapshot was taken (POSIX time)."),
    }
    for cluster, st in sorted(clusters.items()):
        c = {"cluster": cluster}
        s = st.get("status")
        if s is not None:
            fam["total"].add(s["total_usage_core_hours"], **c)
            fam["real"].add(s["real_usage_core_hours"], **c)
            fam["padding"].add(s["dummy_usage_core_hours"], **c)
            fam["d"].add(s["damping_factor"], **c)
            fam["halving"].add(s["halving_core_hours"], **c)
            fam["target"].add(s["target_core_hours"], **c)
            fam["error"].add(s["halving_error"], **c)
            used = next((h for h in reversed(s.get("control") or []) if h.get("error_slurm") is not None), None)
            if used is not None:
                fam["error_slurm"].add(used["error_slurm"], **c)
            fam["s_ref"].add(s["reference_share"], **c)
            fam["users"].add(s["active_users"], **c)
            fam["snap"].add(st.get("taken_at"), **c)
            for r in s["table"] if st.get("name_users") else ():
                if r["dummy"]:
                    continue
                who = {**c, "account": r["account"], "user": r["user"]}
                fam["f"].add(r["fairshare"], **who)
                fam["ih"].add(r["implied_halving_core_hours"], **who)
                fam["halve"].add(r["usage_to_halve_core_hours"], **who)
                fam["usage"].add(r["usage_core_hours"], **who)
                if r.get("rank") is not None:
                    fam["rank"].add(r["rank"], **who)
                    fam["lfs"].add(float("inf") if r.get("level_fs_idle") else r.get("level_fs"), **who)
        dec = st.get("decision")
        if dec is not None:
            fam["d_target"].add(dec["d_target"], **c)
            fam["padding_target"].add(dec["w_target"] / 3600.0 if dec["w_target"] is not None else None, **c)
        fam["holds"].add(st.get("holds", 0), **c)
    ticks_total = Family("ticks_total", "Agent ticks per stage and outcome.", "counter")
    duration = Family("tick_duration_seconds", "Wall time of the stage's latest tick.")
    last = Family("last_tick_timestamp_seconds", "When the stage last ran (POSIX time).")
    for t in ticks:
        c = {"cluster": t["cluster"] or "", "stage": t["stage"]}
        ticks_total.add(t["ok"], **c, status="ok")
        ticks_total.add(t["failed"], **c, status="failed")
        duration.add(t["last_duration_s"], **c)
        last.add(t["last_at"], **c)
    return [*fam.values(), ticks_total, duration, last]


def write_textfile(path: str | Path, text: str, group: str | None = None) -> Path:
    """Replace `path` atomically: 0640 to `group` (node_exporter's; root:GROUP) when one is named,
    else world-readable 0644 (then it must hold nothing private: see the module's note)."""
    from fscontrol.atomic import write_text

    if not group:
        return write_text(path, text)
    import grp

    from fscontrol.errors import ConfigError

    try:
        gid = grp.getgrnam(group).gr_gid
    except KeyError:
        raise ConfigError(f"config: 'agent.metrics_group' names no group: {group!r}") from None
    return write_text(path, text, mode=0o640, gid=gid)
