"""The `slow` mark (tests/conftest.py SLOW): the fast suite's slowest tests, run by CI only."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import SLOW


def test_every_test_marked_slow_exists():
    """SLOW names tests by file and function; a name that no longer exists would mark nothing and
    say nothing."""
    root = Path(__file__).resolve().parent.parent
    for key in SLOW:
        path, func = key.split("::")
        tree = ast.parse((root / path).read_text())
        assert any(isinstance(n, ast.FunctionDef) and n.name == func for n in tree.body), key


def test_the_engines_reference_stays_in_the_fast_suite():
    """Issue #29 item 7: the multifactor engine is checked in the fast suite against an independent
    reference, not only against its own earlier output."""
    assert not any("test_sim_mf_reference.py" in k for k in SLOW)
    assert "tests/test_sim_accel.py::test_compiled_engine_matches_python_on_the_reference_cases" not in SLOW


def test_the_plot_marker_checks_stay_in_the_fast_suite():
    """Issue #29 item 7 (every test that needs matplotlib marked the same way): its checks run in
    the fast suite (an outside review found them moved out)."""
    assert not any("test_plot_marker.py" in k for k in SLOW)
