"""matplotlib in the tests: one marker, `plot`, on every test that needs it (conftest.py wires this).

* A test marked `plot` is skipped when matplotlib (the 'plot' extra) is not installed, and FAILS
  instead under FSCONTROL_REQUIRE_PLOT=1 (scripts/test.sh sets it: CI runs every PNG test).
* Every test NOT marked `plot` runs with matplotlib hidden in its process (`import matplotlib`
  raises ImportError, importlib.util.find_spec finds nothing), installed or not: a test that
  reaches matplotlib without the marker fails everywhere, not only on a machine without it.
  (A child process the test starts still sees it.)
* `hide_matplotlib` is the same hiding for a test of what fscontrol says when matplotlib is missing.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
REQUIRE_PLOT = os.environ.get("FSCONTROL_REQUIRE_PLOT") == "1"


def hide_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if matplotlib were not installed, for the rest of the test (monkeypatch undoes it)."""
    for name in [n for n in sys.modules if n == "matplotlib" or n.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import raises, find_spec returns None


def check_plot_marker(item: pytest.Item) -> None:
    """pytest_runtest_setup: a `plot` test without matplotlib is skipped (failed under REQUIRE_PLOT)."""
    if item.get_closest_marker("plot") is None or HAVE_MATPLOTLIB:
        return
    if REQUIRE_PLOT:
        pytest.fail("FSCONTROL_REQUIRE_PLOT=1 but matplotlib is not installed: scripts/bootstrap.sh test,plot", pytrace=False)
    pytest.skip("needs matplotlib (the 'plot' extra)")


@pytest.fixture(autouse=True)
def _matplotlib_only_where_marked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("plot") is None:
        hide_matplotlib(monkeypatch)
