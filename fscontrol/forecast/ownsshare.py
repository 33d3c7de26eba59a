"""The user's own rows of `sshare -l -P`, as the forecast reads them (fscontrol.forecast.service).

Standard library only: this is on the `fscontrol forecast` cold-start path. The sshare a user runs
on a large site shows every account (6,800 rows at 100,000 associations), and a recording of an
admin's `sshare -a` every association; the forecast reads only its user's rows and the accounts
above them (own_lines), found by searching the text, not by parsing each row.
"""

from __future__ import annotations

from fscontrol.records import ShareRow


def parse_own_sshare(text: str, user: str | None = None) -> tuple[ShareRow, ...]:
    """The rows of `sshare -l -P` run as a normal user.

    Without PrivateData that is root, the accounts and the user's own rows: a tree, read by
    fscontrol.slurm.parse.parse_sshare. With PrivateData=usage slurmctld returns only the user's own
    associations (no root, no accounts), which parse_sshare rejects as a tree; then only the
    user rows are read (account, user, shares, usage columns), without the tree checks.

    `user` (the forecast's): only the rows its forecast reads are parsed (own_lines: root, `user`'s
    rows and the accounts above them), as the published file's are; the other rows are found
    around, not read, so a garbled line of someone else's goes unnoticed. Where those lines do not
    read as a tree, every row is read as without `user` (the same rows, or the same error)."""
    from fscontrol.errors import ParseError
    from fscontrol.slurm.parse import parse_sshare

    if user:
        part = own_lines(text, user)
        if part is not None:
            try:
                return parse_sshare(part, "sshare -l -P")
            except ParseError:
                pass  # read whole: the error then names its line in the whole output
    try:
        return parse_sshare(text, "sshare -l -P")
    except ParseError:
        lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("CLUSTER: ")]
        if not lines:
            raise
        header = lines[0].split("|")
        need = ("Account", "User", "RawShares", "NormShares", "RawUsage", "EffectvUsage")
        if any(c not in header for c in need):
            raise
        ix = {c: i for i, c in enumerate(header)}
        out = []
        for no, line in enumerate(lines[1:], 2):
            f = line.split("|")
            if len(f) != len(header):
                raise ParseError("sshare -l -P", f"expected {len(header)} fields, got {len(f)}", no, line) from None
            name = f[ix["User"]].strip()
            if not name:
                continue
            raw_acc = f[ix["Account"]]
            acc = raw_acc.strip()

            def num(col: str, kind: type = float, f=f, no=no, line=line):
                return _cell(f, ix, col, kind, no, line)

            shares_txt = f[ix["RawShares"]].strip()
            out.append(
                ShareRow(
                    account=acc,
                    user=name,
                    parent=acc,
                    depth=len(raw_acc) - len(raw_acc.lstrip(" ")),
                    raw_shares=None if shares_txt in ("", "parent") else num("RawShares", int),
                    shares_parent=shares_txt == "parent",
                    norm_shares=num("NormShares"),
                    raw_usage=int(num("RawUsage", int) or 0),
                    norm_usage=num("NormUsage"),
                    effective_usage=num("EffectvUsage"),
                    fairshare=num("FairShare"),
                )
            )
        return tuple(out)  # may be empty: no association at all is an unknown user, not garbage


def _cell(f: list[str], ix: dict[str, int], col: str, kind: type, no: int, line: str):
    from fscontrol.errors import ParseError

    v = f[ix[col]].strip() if col in ix else ""
    if v == "":
        return None
    try:
        return kind(v)
    except ValueError:
        raise ParseError("sshare -l -P", f"{col} is not a number: {v!r}", no, line) from None




def own_lines(text: str, user: str) -> str | None:
    """The lines of `sshare -l -P` output that `user`'s forecast reads, in the output's order: the
    header, root, each of `user`'s rows and the account rows above it up to root (each the nearest
    line before it indented less: its parent in sshare's tree). Found by searching for the
    user's name between the first two '|' and walking up from each row found; no other row is
    split. None when the output is not in that shape (a CLUSTER: line first, Account and User not
    the first two columns, no root row right after the header, no row of `user`'s, a user row at
    the top level): then the caller reads every row."""
    if not user or user != user.strip() or "|" in user or "\n" in user or text.startswith("CLUSTER: "):
        return None
    head_end = text.find("\n")
    if head_end < 0:
        return None
    first_two = text[:head_end].split("|", 2)[:2]
    if [c.strip() for c in first_two] != ["Account", "User"] or not text.startswith("root|", head_end + 1):
        return None
    root_end = text.find("\n", head_end + 1)
    if root_end < 0:
        return None
    keep: dict[int, int] = {}  # where each line kept starts -> where it ends
    needle = f"|{user}|"
    at = text.find(needle, root_end)
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        if text.find("|", start, at + 1) == at:  # the name is the User field (the second), not a later one
            if not _with_ancestors(text, start, end, root_end, keep):
                return None
        at = text.find(needle, end)
    if not keep:
        return None
    return "".join([text[:root_end + 1], *(text[s:e] + "\n" for s, e in sorted(keep.items()))])


def _with_ancestors(text: str, start: int, end: int, root_end: int, keep: dict[int, int]) -> bool:
    """Keep the line text[start:end] and the account lines above it up to root's children (root
    itself is always kept); False when the walk meets no parent (a row at the top level)."""
    keep[start] = end
    depth = _indent(text, start)
    while depth > 1:
        pad = " " * depth
        pos = start
        while True:  # the nearest line before, indented less
            if pos <= root_end + 1:
                return False
            pos = text.rfind("\n", 0, pos - 1) + 1
            if not text.startswith(pad, pos):
                break
        if pos in keep:
            return True  # that line's ancestors are kept already
        keep[pos] = text.find("\n", pos)
        start, depth = pos, _indent(text, pos)
    return depth == 1


def _indent(text: str, start: int) -> int:
    """How many spaces the line at `start` begins with (its depth in sshare's tree)."""
    n = start
    while text.startswith(" ", n):
        n += 1
    return n - start
