"""The forecast reads only its user's rows of sshare and the accounts above them (issue #31 item 5):
fscontrol.forecast.ownsshare finds them by searching the text instead of parsing every row. Each
check compares with the whole output parsed row by row (fscontrol.slurm.parse.parse_sshare): the
same rows on every recorded sample for every user, the same path weights (what the forecast reads
of them), the same error on a garbled row of the user's own, and the whole parse wherever the
output is not in the shape the search reads."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from fscontrol.errors import ParseError
from fscontrol.forecast.classic import path_weights
from fscontrol.forecast.ownsshare import own_lines, parse_own_sshare
from fscontrol.slurm.parse import parse_sshare

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted(p.parent for p in (ROOT / "samples").glob("*/sshare.txt"))


def _path_rows(rows, user: str) -> list:
    """root, `user`'s rows and every account above them, in the output's order: from the whole parse."""
    by_account = {r.account: r for r in rows if not r.is_user}
    keep = set()
    for r in rows:
        if r.user == user:
            keep.add(r.key)
            parent = r.account
            while parent:
                keep.add((parent, ""))
                parent = by_account[parent].parent
    return [r for r in rows if r.key in keep or r.depth == 0]


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_every_users_rows_are_the_whole_parses(sample):
    text = (sample / "sshare.txt").read_text()
    whole = parse_sshare(text, "sshare -l -P")
    users = sorted({r.user for r in whole if r.is_user})
    if len(users) > 300:  # the 2,500-user sample: a fixed draw of them, the first and the last
        users = sorted({users[0], users[-1], *random.Random(5).sample(users, 300)})
    for user in users:
        got = parse_own_sshare(text, user)
        assert list(got) == _path_rows(whole, user), user
        assert len(got) < len(whole) or len(whole) < 20
        for r in got:
            if r.user == user:
                assert path_weights(got, r.key) == path_weights(whole, r.key)


def _tree(users_per_account: int = 3) -> str:
    """A small tree with a sub-account, numeric names (a user called "1", as RawShares prints) and
    a user in two accounts."""
    h = "Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|GrpTRESMins|TRESRunMins"
    lines = [h, "root|||1.000000|1000||1.000000|0.500000||cpu=0", " root|root|1|0.250000|0|0.000000|0.000000|1.000000||cpu=0"]
    lines.append(" a||1|0.250000|600|0.600000|0.600000|0.190000||cpu=0")
    lines += [f"  a|1|1|0.083333|100|0.100000|0.200000|0.190000||cpu=0" for _ in range(1)]
    lines += [f"  a|u{i}|1|0.083333|100|0.100000|0.200000|0.190000||cpu=0" for i in range(users_per_account - 1)]
    lines.append("  a1||1|0.083333|300|0.300000|0.300000|0.100000||cpu=0")
    lines += [f"   a1|v{i}|1|0.041667|150|0.150000|0.150000|0.080000||cpu=0" for i in range(2)]
    lines.append(" b||1|0.250000|400|0.400000|0.400000|0.330000||cpu=0")
    lines.append("  b|v0|1|0.250000|400|0.400000|0.400000|0.330000||cpu=0")
    lines.append(" c||1|0.250000|0|0.000000|0.000000|1.000000||cpu=0")
    lines.append("  c|1|1|0.250000|0|0.000000|0.000000|1.000000||cpu=0")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("user", ["1", "u0", "u1", "v0", "v1", "root"])
def test_a_small_tree_every_user(user):
    text = _tree()
    whole = parse_sshare(text, "sshare -l -P")
    assert list(parse_own_sshare(text, user)) == _path_rows(whole, user)
    assert own_lines(text, user) is not None


def test_a_user_named_like_a_number_is_found_by_the_user_field_only():
    text = _tree()
    part = own_lines(text, "1")
    # "|1|" is also every row's RawShares: only the two rows of user "1" and their accounts are kept
    assert [ln.split("|")[:2] for ln in part.splitlines()[2:]] == [[" a", ""], ["  a", "1"], [" c", ""], ["  c", "1"]]


def test_no_row_of_the_user_reads_the_whole_output():
    text = _tree()
    assert own_lines(text, "nobody") is None
    assert parse_own_sshare(text, "nobody") == parse_own_sshare(text) == parse_sshare(text, "sshare -l -P")


def test_a_garbled_row_of_the_users_own_is_the_whole_parses_error():
    text = _tree().replace("   a1|v1|1|0.041667|150|", "   a1|v1|1|0.041667|1x0|")
    with pytest.raises(ParseError) as whole:
        parse_sshare(text, "sshare -l -P")
    with pytest.raises(ParseError) as own:
        parse_own_sshare(text, "v1")
    assert str(own.value) == str(whole.value) and "line 10" in str(own.value)


def test_a_row_out_of_its_tree_is_read_as_the_whole_output_is():
    """v0's row of account b moved above b's account row: the search's parent is a, not b; the
    tree does not parse, and the rows are the whole output's user rows, as without the search."""
    lines = _tree().splitlines()
    i = lines.index("  b|v0|1|0.250000|400|0.400000|0.400000|0.330000||cpu=0")
    lines.insert(i - 1, lines.pop(i))
    text = "\n".join(lines) + "\n"
    with pytest.raises(ParseError):
        parse_sshare(text, "sshare -l -P")
    assert parse_own_sshare(text, "v0") == parse_own_sshare(text)
    assert sum(r.user == "v0" for r in parse_own_sshare(text, "v0")) == 2


@pytest.mark.parametrize("text", [
    "CLUSTER: agave\n" + _tree(),  # -M: read whole
    _tree().replace("Account|User|", "User|Account|", 1),  # other columns first
    "\n".join(ln for ln in _tree().splitlines() if "||" not in ln.split("|", 2)[-1] or "|v0|" in ln) + "\n",
])
def test_other_shapes_are_read_whole(text):
    try:
        want = parse_own_sshare(text)
    except ParseError as e:
        with pytest.raises(ParseError, match=str(e).replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
            parse_own_sshare(text, "v0")
    else:
        assert parse_own_sshare(text, "v0") == want


def test_privatedata_usage_no_root_no_accounts():
    """PrivateData=usage: only the user's own rows, no tree: the rows as without a user."""
    h = "Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|GrpTRESMins|TRESRunMins"
    text = f"{h}\n  a|v0|1|0.250000|400|0.400000|0.400000|0.330000||cpu=0\n"
    assert own_lines(text, "v0") is None
    assert parse_own_sshare(text, "v0") == parse_own_sshare(text)
    assert [r.user for r in parse_own_sshare(text, "v0")] == ["v0"]
