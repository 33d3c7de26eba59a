"""The `plot` marker (tests/plot_support.py), run on a small test file in a child pytest: an
unmarked test cannot reach matplotlib even where it is installed; a marked one runs where it is
installed, is skipped where it is not, and fails there under FSCONTROL_REQUIRE_PLOT=1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

TESTS = '''
import pytest

def test_unmarked():
    import matplotlib  # noqa: F401

@pytest.mark.plot
def test_marked():
    import matplotlib.pyplot  # noqa: F401
'''


def _run(tmp_path: Path, *, installed: bool, require: bool) -> dict[str, str]:
    hide = "" if installed else "sys.modules['matplotlib'] = None  # as if not installed\n"
    (tmp_path / "conftest.py").write_text(
        f"import sys\n{hide}sys.path.insert(0, {str(HERE)!r})\n"
        "from plot_support import _matplotlib_only_where_marked, check_plot_marker  # noqa: F401\n\n"
        "def pytest_runtest_setup(item):\n    check_plot_marker(item)\n")
    (tmp_path / "test_x.py").write_text(TESTS)
    env = {k: v for k, v in os.environ.items() if k != "FSCONTROL_REQUIRE_PLOT"}
    if require:
        env["FSCONTROL_REQUIRE_PLOT"] = "1"
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-v",
                        "-o", "markers=plot: x", "test_x.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    out = {}
    for line in p.stdout.splitlines():
        if line.startswith("test_x.py::test_"):
            name, word = line.split()[:2]
            out[name.removeprefix("test_x.py::test_")] = word
    return out


@pytest.mark.plot
def test_the_plot_marker(tmp_path):
    assert _run(tmp_path, installed=True, require=True) == {"unmarked": "FAILED", "marked": "PASSED"}


def test_the_plot_marker_without_matplotlib(tmp_path):
    assert _run(tmp_path, installed=False, require=False) == {"unmarked": "FAILED", "marked": "SKIPPED"}
    # pytest.fail in the setup: an error, the run fails
    assert _run(tmp_path, installed=False, require=True) == {"unmarked": "FAILED", "marked": "ERROR"}


def test_no_test_skips_itself_on_matplotlib():
    """pytest.importorskip("matplotlib") in a test skips it wherever matplotlib is hidden (every
    unmarked test) or missing, and CI would never see it fail: the marker is the one way."""
    import ast

    found = []
    for path in sorted(HERE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and ast.unparse(node.func).endswith("importorskip") and node.args
                    and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).startswith("matplotlib")):
                found.append(f"{path.name}:{node.lineno}")
    assert found == [], f"use @pytest.mark.plot instead of importorskip: {found}"
