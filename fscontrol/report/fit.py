"""`fscontrol fit`: the fitted decay rate against Slurm's setting, as data (for --json) and text. Pure."""

from __future__ import annotations


def fit_data(cluster: str, snapshots: int, r, stored: bool) -> dict:
    """The fit `r` (model.fit's result) of `cluster` over `snapshots` snapshots; `stored`: whether
    it was written to the history (a history read-only to the caller is fitted, not stored)."""
    return {
        "cluster": cluster,
        "snapshots": snapshots,
        "half_life_s": r.half_life_s,
        "half_life_se_s": r.half_life_se_s,
        "configured_half_life_s": r.configured_half_life_s,
        "expected_half_life_s": r.expected_half_life_s,
        "drift": r.drift,
        "drifted": r.drifted,
        "residuals": r.n_residuals,
        "breaks": r.n_breaks,
        "outliers": r.n_outliers,
        "converged": r.converged,
        "stored": stored,
    }


def format_fit(data: dict) -> str:
    drift = "-" if data["drift"] is None else f"{data['drift']:+.2%}"
    return (
        f"{data['cluster']}: fitted half-life {data['half_life_s']:,.1f} s ± {data['half_life_se_s']:,.1f} s "
        f"(configured {data['configured_half_life_s']:,.0f} s, Slurm's 1-0.693/T gives {data['expected_half_life_s']:,.1f} s; "
        f"drift {drift}{', DRIFTED' if data['drifted'] else ''})\n"
        f"from {data['residuals']} snapshot pairs over {data['snapshots']} snapshots; {data['breaks']} breaks (resets), "
        f"{data['outliers']} outliers left out"
        + ("" if data["stored"] else "\nnot stored: the history is read-only to you")
    )
