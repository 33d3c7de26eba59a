"""GPUs in a capture: each node's (sinfo's %G) and each job's per node (sacct's TRES).

The replay's node model (mfcore, nodesched, nodeplace) places a job that asks for GPUs only on
nodes with that many GPUs free, as select/cons_tres does for a per-node request (`--gres=gpu:N`,
`--gpus-per-node=N`): a node that cannot give the GRES gets no CPUs for the job
(cons_tres/job_test.c `_eval_nodes` runs on the CPUs `_select_nodes` left after the GRES filter;
no `gres_per_job`), so the node drops out of the node sets. Only the `gpu` GRES is read; typed
GPUs (`gpu:a100:4`) count towards it untyped, and other GRES (mps, shard, licenses) are not read.
"""

from __future__ import annotations

import math
import re

__all__ = ["gres_count", "node_gpus", "tres_gpus", "job_gpus_per_node"]

_NONE = ("", "(null)", "N/A", "none")


def _items(gres: str) -> list[str]:
    """The comma-separated items of a GRES text, a comma inside parentheses (`(S:0,1)`) kept."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in gres:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [x.strip() for x in out if x.strip()]


def gres_count(gres: str, name: str = "gpu") -> int:
    """How many of GRES `name` a node's sinfo %G text gives (`gpu:4`, `gpu:a100:2(S:0-1),gpu:v100:2`,
    `(null)`): the sum over its types. ValueError for a count that does not read."""
    g = gres.strip()
    if g in _NONE:
        return 0
    total = 0
    for item in _items(g):
        base = item.split("(", 1)[0]
        f = base.split(":")
        if f[0] != name:
            continue
        if len(f) == 1:
            total += 1  # `gpu` alone: one
            continue
        c = f[-1]
        mult = 1
        if c[-1:] in ("K", "k", "M", "G") and c[:-1].isdigit():
            mult = {"K": 1024, "k": 1024, "M": 1024 ** 2, "G": 1024 ** 3}[c[-1]]
            c = c[:-1]
        if not (c.isdigit() and c.isascii()):
            if len(f) == 2 and re.fullmatch(r"[A-Za-z][A-Za-z0-9_.+-]*", c):  # `gpu:a100`: a type, one of it
                total += 1
                continue
            raise ValueError(f"GRES count {f[-1]!r} in {gres!r}")
        total += int(c) * mult
    return total


def node_gpus(text: str) -> dict[str, int]:
    """Each node's GPUs from a capture's nodes.txt (`sinfo -h -N -o %N|%P|%c|%T|%G`; a node shows
    once per partition, its GRES the same on each line). A capture made before %G (4 fields): {}."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        f = line.split("|")
        if len(f) >= 5 and f[0].strip():
            out.setdefault(f[0].strip(), gres_count("|".join(f[4:])))
    return out


def tres_gpus(tres: str) -> int:
    """The GPUs of a TRES text (sacct's AllocTRES or ReqTRES: `billing=8,cpu=8,gres/gpu=2,node=1`):
    the untyped `gres/gpu=` total (Slurm prints it beside any typed `gres/gpu:TYPE=`), else the
    typed ones summed; 0 if none."""
    plain = 0
    typed = 0
    seen = False
    for part in tres.split(","):
        k, _, v = part.partition("=")
        k = k.strip()
        if k == "gres/gpu":
            plain = int(float(v))
            seen = True
        elif k.startswith("gres/gpu:"):
            typed += int(float(v))
    return plain if seen else typed


def job_gpus_per_node(total: int, nodes: int) -> int:
    """A job's GPUs per node from its total (TRES) and its nodes (NNodes, else ReqNodes): Slurm's
    per-node request times the nodes, so the total over them (rounded up; no nodes known: all)."""
    if total <= 0:
        return 0
    return math.ceil(total / nodes) if nodes > 0 else total
