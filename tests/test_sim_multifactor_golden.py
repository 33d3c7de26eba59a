"""The multifactor engine reproduces its reference runs (tests/mf_golden_cases.py, recorded before
the speed-up of issue #15): start times, order and counters identical; usage, F and the pass
records to 1e-9 relative."""

from __future__ import annotations

import gzip
import json
import math

import pytest

from tests.mf_golden_cases import GOLDEN, cases, summary

REL = 1e-9
_CASES = cases()


def _close(a, b, path: str) -> None:
    if isinstance(a, float) or isinstance(b, float):
        assert a is not None and b is not None, (path, a, b)
        assert math.isclose(a, b, rel_tol=REL, abs_tol=1e-300), (path, a, b)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), (path, len(a), len(b) if isinstance(b, list) else b)
        for k, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{path}[{k}]")
    else:
        assert a == b, (path, a, b)


@pytest.fixture(scope="module")
def golden() -> dict:
    with gzip.open(GOLDEN, "rt") as f:
        return json.load(f)


@pytest.mark.parametrize("name", sorted(_CASES))
def test_engine_reproduces_its_reference_run(name, golden):
    want = golden[name]
    got = json.loads(json.dumps(summary(_CASES[name]())))
    # exact: when each job started and ended, the order, the counters, the notes
    for key in ("start", "end", "order", "counters", "notes"):
        assert got[key] == want[key], (name, key)
    for key in ("s_ref", "records", "trace", "final_usage"):
        _close(got[key], want[key], f"{name}.{key}")
