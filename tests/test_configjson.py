"""`scontrol show config --json` (Slurm 26.05) read as the text is (fscontrol/slurm/configjson.py).

The recordings: tests/data/captures/tb-26.05/show_config.txt and show_config_json.txt, the text and
the JSON of the same testbed a few seconds apart (classic fair-share, NO_FAIR_TREE); the same
testbed's `scontrol --json show config` from 24.11 (the text) and 22.05 (refused) beside them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fscontrol.errors import ParseError
from fscontrol.slurm import configjson, parse

DATA = Path(__file__).parent / "data" / "captures"
TB26 = DATA / "tb-26.05"

# the keys fscontrol reads from `raw` beside SlurmConfig's own fields (agent.pipeline, forecast.why)
READ_RAW = ("StateSaveLocation", "PriorityMaxAge", "PriorityFavorSmall", "PriorityWeightFairShare",
            "PriorityUsageResetPeriod", "PriorityType", "AccountingStorageEnforce", "ClusterName")


def _pair():
    return (TB26 / "show_config.txt").read_text(), (TB26 / "show_config_json.txt").read_text()


def test_the_recordings_are_26_05_text_and_json():
    text, js = _pair()
    assert "from slurm-wlm 26.05.5," in (TB26 / "show_config_json.cmd").read_text()
    assert "scontrol --json show config" in (TB26 / "show_config_json.cmd").read_text()
    assert configjson.looks_like_json(js) and not configjson.looks_like_json(text)
    doc = json.loads(js)
    assert doc["meta"]["slurm"]["release"] == "26.05.5" and doc["errors"] == []
    # the trap: classic prints NO_FAIR_TREE in the text, nothing in the JSON's PriorityFlags
    assert "PriorityFlags           = NO_FAIR_TREE" in text and doc["slurm_conf"]["PriorityFlags"] == []


def test_json_and_text_give_the_same_config():
    text, js = _pair()
    a, b = parse.parse_config(text), parse.parse_config(js)
    assert a == b  # every compared field: cluster, version, mode, flags, d, half-life, period, enforce, weights
    assert (b.mode, b.priority_flags, b.slurm_version, b.damping_factor) == ("classic", ("NO_FAIR_TREE",), "26.05.5", 1)
    assert b.weights == a.weights and b.weights["fairshare"] == 100000
    for key in READ_RAW:
        assert a.raw[key] == b.raw[key], key


def test_every_key_both_print_reads_alike_where_fscontrol_could_use_it():
    """Of the keys both forms print, those that differ differ only in how the text spells an empty or a
    unit ("(null)" vs "", "10 sec" vs "10", "root(0)" vs "root"): none fscontrol reads."""
    text, js = _pair()
    pt, pj = parse.parse_config_pairs(text), parse.parse_config_pairs(js)
    common = set(pt) & set(pj)
    assert len(common) > 190
    for k in sorted(common):
        t, j = pt[k], pj[k]
        if t == j:
            continue
        assert k not in READ_RAW, k
        assert (t in ("(null)", "none", "(null type)") and j == "") or t.split(" ")[0] == j or t.startswith(j) \
            or k in ("BOOT_TIME", "CpuFreqGovernors", "PreemptExemptTime", "PreemptMode", "GroupUpdateForce",
                     "JobFileAppend", "JobRequeue", "KillOnBadExit", "PropagatePrioProcess", "ReturnToService",
                     "SrunPortRange"), (k, t, j)


@pytest.mark.parametrize("flags, text", [
    ([], "NO_FAIR_TREE"),
    (["FAIR_TREE"], ""),
    (["MAX_TRES", "FAIR_TREE"], "MAX_TRES"),
    (["MAX_TRES_GRES"], "NO_FAIR_TREE,MAX_TRES_GRES"),
    (["INCR_ONLY", "ACCRUE_ALWAYS", "CALCULATE_RUNNING"], "ACCRUE_ALWAYS,CALCULATE_RUNNING,NO_FAIR_TREE,INCR_ONLY"),
    (["FAIR_TREE", "NO_NORMAL_ASSOC", "NO_NORMAL_PART", "NO_NORMAL_QOS", "NO_NORMAL_TRES"], "NO_NORMAL_ALL"),
    (["FAIR_TREE", "SOME_LATER_FLAG"], "SOME_LATER_FLAG"),
])
def test_priority_flags_in_the_texts_words(flags, text):
    """priority_flags_string()'s words and order (slurm_protocol_defs.c, 26.05)."""
    assert configjson.priority_flags_text(flags) == text


def test_fair_tree_recorded_as_text_and_json():
    """The same testbed under Fair Tree (show_config_fairtree / show_config_json_fairtree): the text
    prints no flag, the JSON lists FAIR_TREE; both read as Fair Tree, and as the same config."""
    text = (TB26 / "show_config_fairtree.txt").read_text()
    js = (TB26 / "show_config_json_fairtree.txt").read_text()
    assert json.loads(js)["slurm_conf"]["PriorityFlags"] == ["FAIR_TREE"]
    assert "PriorityFlags           = \n" in text
    a, b = parse.parse_config(text), parse.parse_config(js)
    assert a == b and b.mode == "fair_tree" and b.priority_flags == ()


def test_fair_tree_json_reads_as_fair_tree():
    _, js = _pair()
    doc = json.loads(js)
    doc["slurm_conf"]["PriorityFlags"] = ["FAIR_TREE"]
    cfg = parse.parse_config(json.dumps(doc))
    assert cfg.mode == "fair_tree" and cfg.priority_flags == ()
    doc["slurm_conf"]["PriorityFlags"] = ["MAX_TRES"]
    assert parse.parse_config(json.dumps(doc)).mode == "classic"


def test_cluster_line_before_the_json():
    """-M CLUSTER puts a `CLUSTER: name` line first, as it does before the text."""
    _, js = _pair()
    assert parse.parse_config("CLUSTER: tbcluster\n" + js).cluster == "tbcluster"


def test_bad_json_is_one_clear_error():
    with pytest.raises(ParseError, match="not JSON"):
        parse.parse_config('{"slurm_conf": {')
    with pytest.raises(ParseError, match="without a slurm_conf"):
        parse.parse_config('{"jobs": []}')
    with pytest.raises(ParseError, match="reported 1 error"):
        parse.parse_config('{"slurm_conf": {}, "errors": [{"description": "Unable to query"}]}')
    with pytest.raises(ParseError, match="no FairShareDampeningFactor"):
        parse.parse_config('{"slurm_conf": {"ClusterName": "x"}}')


def test_other_releases_answer_the_json_question_with_text_or_a_refusal():
    """What source.LiveSlurm.config falls back from: 24.11 prints the text, 22.05 refuses --json."""
    t24 = (DATA / "tb-24.11" / "show_config_json.txt").read_text()
    assert not configjson.looks_like_json(t24)
    assert parse.parse_config(t24).slurm_version == "24.11.5"
    assert "(exit 1)" in (DATA / "tb" / "show_config_json.cmd").read_text()
    assert "unrecognized option '--json'" in (DATA / "tb" / "show_config_json.txt").read_text()


def test_the_simulator_reads_a_captured_json_config(tmp_path):
    """A 26.05 capture's config.txt is the JSON (samples/testbed-2605-classic): the simulator's
    multifactor settings read from it are those of the text."""
    from fscontrol.sim.mfconfig import priority_config_from_slurm_conf

    text, js = _pair()
    assert priority_config_from_slurm_conf(js) == priority_config_from_slurm_conf(text)
