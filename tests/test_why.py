"""`fscontrol why`: sprio's breakdown of one job read and put in words. The data is a real sprio
line (tests/data/why/sprio-22.05.txt, the command and settings in its first line); the real-Slurm
check of the whole command is tests/test_integration_why.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from fscontrol.forecast import why
from fscontrol.errors import ParseError

DATA = Path(__file__).parent / "data" / "why" / "sprio-22.05.txt"
WEIGHTS = {"age": 1000, "fairshare": 100000, "jobsize": 20000, "partition": 500, "qos": 0, "assoc": 0}


def _line():
    text = "\n".join(ln for ln in DATA.read_text().splitlines() if not ln.startswith("#"))
    return why.parse_sprio_why(text, "2")


def test_the_real_sprio_line_is_read_term_by_term():
    ln = _line()
    assert (ln.job_id, ln.user, ln.partition, ln.priority) == ("2", "carol", "parked", 118000.0)
    assert ln.weighted == {"age": 0.0, "association": 0.0, "fair-share": 100000.0, "job size": 17500.0,
                           "partition": 500.0, "QOS": 0.0}
    assert ln.normalized["job size"] == 0.875
    # Slurm's sum: the terms add up to the priority, each term its factor x its weight
    assert sum(ln.weighted.values()) + ln.site - ln.nice == ln.priority
    for name, _, _, key in why.TERMS:
        assert ln.weighted[name] == pytest.approx(ln.normalized[name] * WEIGHTS[key], abs=1)


def test_explained_in_words():
    d = why.explain(_line(), weights=WEIGHTS, max_age_s=3600, favor_small=False, mode="classic",
                    ahead=0, pending_in_partition=1, reason="PartitionDown", account="chem")
    assert d["dominant"] == "fair-share"
    shares = {t["factor"]: t["share"] for t in d["terms"]}
    assert shares["fair-share"] == pytest.approx(100000 / 118000) and shares["job size"] == pytest.approx(17500 / 118000)
    text = why.format_why(d)
    assert "priority 118,000" in text and "waiting for: PartitionDown" in text
    assert "job size" in text and "17,500 (15%)" in text and "= 0.8750 x weight 20,000" in text
    assert "(weight 0 here, so they do not count: association, QOS)" in text
    assert "+1,000.0 an hour of waiting" in text and "counts only while the job is eligible" in text
    assert "larger jobs score higher" in text
    assert "0 of the 1 other pending job(s) in parked" in text
    fair_tree = why.explain(_line(), weights=WEIGHTS, max_age_s=3600, favor_small=True, mode="fair_tree",
                            fairshare_detail="rank 7 of 9")
    assert any("rank 7 of 9" in x and "only as others use the machine" in x for x in fair_tree["levers"])
    assert any("smaller jobs score higher" in x for x in fair_tree["levers"])


def test_no_line_for_the_job_and_garbled_lines():
    text = "JOBID|USER\n"
    assert why.parse_sprio_why(text, "2") is None
    with pytest.raises(ParseError):
        why.parse_sprio_why("H\n2|carol|parked|x|0|0|0|0|0|0|0|0|0|0|0|0|0|0\n", "2")
    with pytest.raises(ParseError):
        why.parse_sprio_why("H\n2|carol|parked\n", "2")
    assert why.count_ahead("1|110578\n2|118000\n3|120000\n", "2", 118000.0) == (1, 2)
    assert why.parse_max_age("7-00:00:00") == 7 * 86400 and why.parse_max_age(None) == 7 * 86400
