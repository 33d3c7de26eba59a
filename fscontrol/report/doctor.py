"""`fscontrol doctor` and `fscontrol config check`: their data (for --json) and text. Pure.

The doctor's own exit codes are part of its report (a finding's severity, not an error): 0
nothing found (or notes only), EXIT_WARNING, EXIT_FATAL (docs/doctor.md). The checks are
fscontrol.doctor.checks', the per-cluster runs fscontrol.agent.diagnose's.
"""

from __future__ import annotations

EXIT_WARNING = 8
EXIT_FATAL = 9


def exit_for(findings) -> int:
    """0, EXIT_WARNING or EXIT_FATAL for the most severe finding."""
    from fscontrol.doctor.checks import worst

    return {"fatal": EXIT_FATAL, "warning": EXIT_WARNING}.get(worst(findings) or "", 0)


def report(s, findings) -> dict:
    """The doctor's JSON object for one survey `s` (slurm.survey.Survey) and its findings
    (report_lines prints it); its "exit_code" is the command's."""
    return {"cluster": s.config.get("ClusterName"), "slurm_version": s.config.get("SLURM_VERSION"),
            "source": s.source, "worst": next((f.severity for f in findings), None),
            "exit_code": exit_for(findings), "findings": [f.as_dict() for f in findings],
            "not_read": {k: v for k, v in sorted(s.errors.items())}}


def report_lines(data: dict) -> list[str]:
    """The report's lines: a head line, then one line per finding, its fix after it."""
    from fscontrol.doctor import checks

    found = data["findings"]
    lines = [f"{data['cluster'] or '?'} (Slurm {data['slurm_version'] or '?'}, {data['source']}): "
             + (f"{len(found)} finding(s)" if found else "nothing stops fair-share or the agent's control")]
    for f in found:
        lines.append(checks.line(f))
    return lines


def not_run(cluster: str | None, why: str) -> dict:
    """A cluster `config check` could not run the doctor on (no Slurm on this host): why."""
    return {"cluster": cluster, "not_run": why}


def check_exit(checked: list[dict]) -> int:
    """`config check`'s exit code from its doctor runs: EXIT_FATAL when one found a fatal reason,
    else 0 (a warning is printed, not a failure)."""
    return EXIT_FATAL if any(c.get("worst") == "fatal" for c in checked) else 0


def config_check_data(config_path, cfg, effective: dict, effective_lines: list[str], checked: list[dict] | None) -> dict:
    """`fscontrol config check`'s result: "json" what --json prints (the effective settings, with
    "doctor": each cluster's report when the doctor ran), "lines" the text, "exit_code"."""
    checked_list = checked or []
    lines = [f"{config_path or 'no config file'}: valid. apply = {str(cfg.apply).lower()}, "
             f"history {cfg.db or '(default)'}, collect every {cfg.schedule['collect']:g} s"]
    for name, cc in sorted(cfg.clusters.items()):
        target = "-" if cc.target_core_hours is None else f"{cc.target_core_hours:g} core-hours"
        gate = f", gate {cc.gate.action} over {len(cc.allocations)} allocation(s)" if cc.gate.enabled else ""
        lines.append(f"  cluster {name}: method {cc.method}, u* {target}, reference share {cc.reference_share}{gate}")
    lines.append("the settings in force (defaults filled in):")
    lines += [f"  {line}" for line in effective_lines]
    lines.append("(--json prints them as JSON)")
    for c in checked_list:
        if "not_run" in c:
            lines.append(f"doctor{' on ' + c['cluster'] if c.get('cluster') else ''}: not run: {c['not_run']}")
        else:
            lines.append("doctor on " + "\n".join(report_lines(c)))
    return {"json": effective if checked is None else {**effective, "doctor": checked_list},
            "lines": lines, "exit_code": check_exit(checked_list)}
