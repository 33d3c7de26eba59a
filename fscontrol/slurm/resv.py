"""The cluster's advance reservations: `scontrol -o show reservation`, one line each (issue #32 item 4).

Each line is `Key=value` pairs separated by spaces ("ReservationName=maint StartTime=... EndTime=...
Nodes=tbnode1 NodeCnt=1 CoreCnt=128 ... Flags=MAINT,SPEC_NODES TRES=cpu=128 ..."); with none,
scontrol prints "No reservations in the system". Times are scontrol's local, zone-less ISO times.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import tzinfo, timezone

from fscontrol.errors import ParseError
from fscontrol.slurm.parse import parse_time, scontrol_records

RESV_ARGS = ("scontrol", "-o", "show", "reservation")
_NULL = {"", "(null)", "N/A", "n/a"}


@dataclass(frozen=True, slots=True)
class Reservation:
    name: str
    start: float
    end: float
    nodes: str  # scontrol's host list ("tbnode[1-4]"), "" for none
    node_count: int
    cpus: int  # the CPUs it holds (TRES cpu=, else CoreCnt); 0 for a licence- or burst-buffer-only one
    flags: frozenset[str]
    users: str = ""
    accounts: str = ""
    partition: str = ""
    state: str = ""


def _int(v: str | None) -> int:
    try:
        return int(v) if v not in (None, *_NULL) else 0
    except ValueError:
        return 0


def parse_reservations(text: str, command: str = " ".join(RESV_ARGS), tz: tzinfo = timezone.utc) -> list[Reservation]:
    """The reservations in `scontrol -o show reservation`'s output (none: an empty list)."""
    out = []
    for no, line, kv in scontrol_records(text, command, "ReservationName", "No reservations"):
        name = kv["ReservationName"]
        try:
            start = parse_time(kv.get("StartTime", ""), tz)
            end = parse_time(kv.get("EndTime", ""), tz)
        except ValueError:
            start = end = None
        if start is None or end is None:
            raise ParseError(command, "StartTime or EndTime unreadable", no, line)
        cpus = 0
        m = re.search(r"(?:^|,)cpu=(\d+)", kv.get("TRES", ""))
        if m:
            cpus = int(m.group(1))
        else:
            cpus = _int(kv.get("CoreCnt"))
        nodes = kv.get("Nodes", "")
        flags = frozenset(f.strip().upper() for f in kv.get("Flags", "").split(",") if f.strip() not in _NULL)
        out.append(Reservation(name, start, end, "" if nodes in _NULL else nodes, _int(kv.get("NodeCnt")), cpus,
                               flags, "" if kv.get("Users", "") in _NULL else kv["Users"],
                               "" if kv.get("Accounts", "") in _NULL else kv["Accounts"],
                               "" if kv.get("PartitionName", "") in _NULL else kv["PartitionName"],
                               kv.get("State", "")))
    return out
