"""The machine of a capture: its nodes.txt (`sinfo -h -N -o %N|%P|%c|%T|%G`, parse.NODES_ARGS).

Each node's CPUs, partitions and GPUs, in sinfo's order (the replay's nodes: mfcore indexes them
so), the nodes that take no new job, and the workload's meta "machine" (history.read_history)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fscontrol.slurm import parse
from ..errors import ConfigError, ParseError
from .gres import node_gpus

__all__ = ["parse_nodes", "nodes_out", "nodes_powered_down", "read_machine", "gpu_misfits"]


def parse_nodes(text: str, command: str = " ".join(parse.NODES_ARGS)) -> dict[str, tuple[int, frozenset[str]]]:
    """`sinfo -h -N -o %N|%P|%c|%T[|%G]`: node -> (CPUs, partitions). A node shows once per partition.
    Its GPUs (%G): gres.node_gpus."""
    out: dict[str, tuple[int, set[str]]] = {}
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        f = line.split("|")
        if len(f) not in (4, 5):
            raise ParseError(command, f"{len(f)} fields, expected 4 or 5 (node|partition|cpus|state[|gres])", no, line)
        try:
            cpus = int(f[2])
        except ValueError:
            raise ParseError(command, f"CPUs {f[2]!r} is not an integer", no, line) from None
        if cpus < 0:
            raise ParseError(command, f"CPUs {cpus} is negative", no, line)
        node, part = f[0].strip(), f[1].strip().rstrip("*")
        if "[" in node or "," in node:
            raise ParseError(command, f"node {node!r} is a host list: sinfo -N prints one node a line", no, line)
        prev = out.setdefault(node, (cpus, set()))
        if prev[0] != cpus:
            raise ParseError(command, f"node {node} has {prev[0]} CPUs on one line and {cpus} on this one", no, line)
        prev[1].add(part)
    return {k: (c, frozenset(p)) for k, (c, p) in out.items()}


# sinfo %T states in which a node takes no new job (a trailing * : not responding; + or ~ etc. dropped)
_NODE_OUT = ("down", "drain", "fail", "future", "inval", "maint", "reboot", "power")


def nodes_out(text: str) -> list[str]:
    """The nodes of a `sinfo -N` text (parse.NODES_ARGS, parsed by parse_nodes first) whose state
    takes no new job: down, drained or draining, failing, future, maintenance, rebooting, powered off."""
    out: list[str] = []
    for line in text.splitlines():
        f = line.split("|")
        if len(f) >= 4 and f[3].strip().lower().rstrip("*~#!%$@^-+").startswith(_NODE_OUT) and f[0].strip() not in out:
            out.append(f[0].strip())
    return out


def nodes_powered_down(text: str) -> list[str]:
    """The nodes of a `sinfo -N` text that were powered down (power saving: a `~` on the state,
    `idle~`; POWERED_DOWN, POWERING_UP `#`) and would take a job: slurmctld boots such a node for it
    (ResumeTimeout)."""
    out: list[str] = []
    for line in text.splitlines():
        f = line.split("|")
        if len(f) >= 4 and f[0].strip() not in out:
            st = f[3].strip().lower()
            if ("~" in st or "#" in st) and not st.rstrip("*~#!%$@^-+").startswith(_NODE_OUT):
                out.append(f[0].strip())
    return out


def read_machine(path: Path, command: str, parts: frozenset[str] | None
                 ) -> tuple[dict[str, Any], dict[str, tuple[int, frozenset[str]]], list[str]]:
    """(the meta "machine", the nodes kept: name -> (CPUs, partitions), those of them that take no
    new job) of a nodes.txt, over the partitions `parts` (None: all). A node of no CPUs holds no
    job and is left out. "machine": nodes, cpus, node_cpus (the sizes); node_cpus_each (nodes of
    different sizes), node_gpus_each (nodes with GPUs), partition_nodes (several nodes)."""
    try:
        ntext = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path} holds bytes that are not UTF-8 (at byte {e.start})") from None
    nodes = parse_nodes(ntext, command)
    nodes = {k: v for k, v in nodes.items() if v[0] > 0 and (parts is None or v[1] & parts)}  # (no CPUs: no job)
    down = [x for x in nodes_out(ntext) if x in nodes]
    node_info: dict[str, Any] = {"nodes": len(nodes), "cpus": sum(c for c, _ in nodes.values()),
                                 "node_cpus": sorted({c for c, _ in nodes.values()})}  # (one size: [C])
    if len(node_info["node_cpus"]) > 1:  # of different sizes: each one's CPUs, in sinfo's order (the engine's nodes)
        node_info["node_cpus_each"] = [c for c, _ in nodes.values()]
    try:
        ngpu = node_gpus(ntext)
    except ValueError as e:
        raise ConfigError(f"{path}: {e}") from None
    if any(ngpu.get(k, 0) for k in nodes):  # each node's GPUs, in that order (the engine places GPU jobs by them)
        node_info["node_gpus_each"] = [ngpu.get(k, 0) for k in nodes]
    off = [x for x in nodes_powered_down(ntext) if x in nodes]
    if off:  # (named in the output: replayed as up)
        node_info["powered_down"] = off
    if len(nodes) > 1:  # each partition's nodes, by their index in that order
        pn: dict[str, list[int]] = {}
        for k, (_, ps) in enumerate(nodes.values()):
            for pname in ps:
                pn.setdefault(pname, []).append(k)
        node_info["partition_nodes"] = {k: pn[k] for k in sorted(pn)}
    return node_info, nodes, down


def gpu_misfits(jobs: list, machine: dict[str, Any]) -> list:
    """The jobs that ask for more GPUs a node than the nodes they may run on can give with their
    CPUs (`--gpus=N` for a whole job, read as N on its one requested node, is such a job: Slurm
    spreads it over nodes, which the replay does not model). The replay leaves them out."""
    ge = machine.get("node_gpus_each") or []
    if not ge:
        return []
    from .nodeplace import place

    ce = machine.get("node_cpus_each") or [(machine.get("node_cpus") or [0])[0]] * len(ge)
    pn = machine.get("partition_nodes") or {}
    out = []
    for j in jobs:
        g = getattr(j, "gpus", 0)
        if not g:
            continue
        listed = (j.partition or "").split(",")
        ks = {k for p in listed for k in pn.get(p, [])} if pn and all(p in pn for p in listed) else set(range(len(ge)))
        empty = [ce[k] if k in ks and ge[k] >= g else 0 for k in range(len(ge))]
        if place(empty, j.size, min_nodes=max(1, getattr(j, "gpu_nodes", 0))) is None:
            out.append(j)
    return out
