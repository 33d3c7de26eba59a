"""Parser fuzz: mutations of a real capture (samples/testbed-basic, Slurm 22.05.8) through every
parser, the agent's read of a whole snapshot, and `status` (collect into a history, report).

Mutations, for each of the six command outputs: a cut at every byte and at every line boundary,
each line deleted and each line doubled, lines shuffled, every number replaced by a corrupt one
(nan, inf, negative, 5_908, another script's digits, empty, huge), undecodable bytes, CRLF and a
byte-order mark. Each mutated snapshot must either be refused with one named error (FscontrolError:
a line, an exit code) or be read, in which case `status` must render it; never a traceback. And
no accepted mutation may lose a row that the capture had: sshare's tree is checked whole (the
children's NormShares add up), so a cut anywhere in it, a lost or doubled association is refused.
A cut of squeue, sprio or sacct exactly at a line boundary reads as a queue with fewer jobs, and
the only user of an account lost from sshare, when it had no usage, reads as an account whose user
an admin removed: no text format can tell those apart (no footer, no total that changes), and the
test counts them separately.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from fscontrol.slurm import parse
from fscontrol.agent import pipeline
from fscontrol.report import status as rstatus
from fscontrol.store import history as store
from fscontrol.errors import FscontrolError
from fscontrol.slurm.source import RecordedSlurm

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "testbed-basic"
NAMES = ("config", "sshare", "squeue", "sprio", "qos", "sacct")
CORRUPT = ("nan", "inf", "-7", "5_908", "\u0663\u0664", "", "1e999", "-0.5", "0x10", "1.2.3")
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")


class Mutated(RecordedSlurm):
    """The recorded sample with one command's output replaced (the real RecordedSlurm otherwise)."""

    def __init__(self, folder: Path, name: str, text: str | bytes):
        super().__init__(folder)
        self._name, self._text = name, text

    def _get(self, name: str):
        out = super()._get(name)
        if name != self._name:
            return out
        text = self._text
        if isinstance(text, bytes):
            from fscontrol.errors import SlurmCommandError

            try:
                text = text.decode()
            except UnicodeDecodeError as e:  # what the live source does with such bytes
                raise SlurmCommandError(f"`{name}` printed bytes that are not UTF-8 (at byte {e.start})") from None
        return type(out)(out.argv, text, out.started_at, out.finished_at)


def mutations(text: str, rng: random.Random):
    lines = text.splitlines(keepends=True)
    for i in range(len(text)):
        yield "cut at byte", text[:i]
    for i in range(len(lines)):
        yield "cut at line", "".join(lines[:i])
        yield "line deleted", "".join(lines[:i] + lines[i + 1:])
        yield "line doubled", "".join(lines[: i + 1] + lines[i:])
    for _ in range(20):
        body = lines[1:]
        rng.shuffle(body)
        yield "lines shuffled", "".join(lines[:1] + body)
    for m in NUMBER.finditer(text):
        for bad in CORRUPT:
            yield "number corrupted", text[: m.start()] + bad + text[m.end():]
    raw = text.encode()
    for i in range(0, len(raw), max(1, len(raw) // 20)):
        yield "undecodable byte", raw[:i] + b"\xff\xfe" + raw[i:]
    yield "CRLF", text.replace("\n", "\r\n")
    yield "byte-order mark", "\ufeff" + text


def rows_of(name: str, text: str) -> int:
    """How many records the capture's own parser gives for the output (None: not a row table)."""
    return {"sshare": lambda t: len(parse.parse_sshare(t)), "squeue": lambda t: len(parse.parse_squeue(t)),
            "sprio": lambda t: len(parse.parse_sprio(t)), "sacct": lambda t: len(parse.parse_sacct(t)),
            "qos": lambda t: len(parse.parse_qos(t))}.get(name, lambda t: 0)(text)


def test_ten_thousand_mutations_are_refused_cleanly_or_read_whole(tmp_path):
    rng = random.Random(20261123)
    original = {n: (SAMPLE / f"{n}.txt").read_text() for n in NAMES}
    base = pipeline.read_snapshot(RecordedSlurm(SAMPLE))
    want_keys = {r.key for r in base.shares}
    usage = {r.key: r.raw_usage for r in base.shares}
    db = store.open_db(tmp_path / "h.db")
    counts = {"refused": 0, "read": 0, "fewer jobs at a line cut": 0, "emptied account, no usage": 0}
    total = 0
    for name in NAMES:
        want_rows = rows_of(name, original[name])
        for kind, text in mutations(original[name], rng):
            total += 1
            try:
                snap = pipeline.read_snapshot(Mutated(SAMPLE, name, text))
            except FscontrolError as e:
                assert str(e) and "\n" not in str(e), (name, kind, str(e))
                counts["refused"] += 1
                continue
            # read: nothing the capture had may be missing without a word, but for one case no
            # text can tell: the only user of an account, with no usage, gone (an account whose
            # user an admin removed reads the same); that loses no usage and no other row's share
            lost = want_keys - {r.key for r in snap.shares}
            if lost:
                got_accounts = {r.account for r in snap.shares if r.user}
                assert all(usage[k] == 0 and k[1] and k[0] not in got_accounts for k in lost), (name, kind, lost)
                counts["emptied account, no usage"] += 1
            if name in ("squeue", "sprio", "sacct", "qos"):
                got = rows_of(name, text)
                if got < want_rows:
                    assert kind in ("cut at line", "line deleted", "cut at byte") and text.endswith("\n"), (name, kind)
                    counts["fewer jobs at a line cut"] += 1
            counts["read"] += 1
            if counts["read"] % 7 == 0 or kind == "number corrupted":  # and through status, as an admin sees it
                with store.transaction(db):
                    sid = store.write_snapshot(db, snap, source="fuzz")
                out = rstatus.format_status(rstatus.status_data(store.load_snapshot(db, sid)))
                assert "F" in out
    print(f"{total} mutations: {counts}")
    assert total >= 10_000
    assert counts["refused"] > counts["read"] > 0


@pytest.mark.parametrize("bad", ["5_908", "\u0663", "nan", "inf", "-3", "1e999"])
def test_sshare_numbers_are_plain_ascii_and_in_range(bad):
    text = (SAMPLE / "sshare.txt").read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith("  ") and "|" in ln)
    fields = line.split("|")
    fields[4] = bad  # RawUsage
    with pytest.raises(FscontrolError):
        parse.parse_sshare(text.replace(line, "|".join(fields)))


def test_a_config_with_a_damping_factor_slurm_would_never_hold_is_refused():
    text = (SAMPLE / "config.txt").read_text()
    for bad in ("0", "-3", "70000", "2.5"):
        with pytest.raises(FscontrolError):
            parse.parse_config(re.sub(r"FairShareDampeningFactor\s*=\s*\d+", f"FairShareDampeningFactor = {bad}", text))
