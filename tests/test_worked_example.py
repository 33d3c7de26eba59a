"""docs/worked-example.md is executable: its python blocks must print its text blocks, and its
table must agree with an independent numerical solution of Yalim's ODE."""

from __future__ import annotations

import contextlib
import io
import itertools
import math
import re
from pathlib import Path

import pytest
from scipy.integrate import solve_ivp

DOC = Path(__file__).parent.parent / "docs" / "worked-example.md"
BLOCK = re.compile(r"```(python|text)\n(.*?)```", re.DOTALL)


def blocks() -> list[tuple[str, str]]:
    return BLOCK.findall(DOC.read_text())


def test_doc_code_prints_the_doc_output():
    found = blocks()
    assert [lang for lang, _ in found] == ["python", "text"] * 3
    namespace: dict = {}
    printed = ""
    for lang, body in found:
        if lang == "python":
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                exec(compile(body, str(DOC), "exec"), namespace)  # noqa: S102 - the doc is the test
            printed = buf.getvalue()
        else:
            assert printed == body


def table() -> list[tuple[float, float, float]]:
    text = blocks()[1][1]
    return [tuple(float(x) for x in line.split()) for line in text.splitlines()[1:]]


def c_of_t(week: float) -> float:
    """Yalim's c(t), in cores, transcribed from the paper's cases."""
    if 0 <= week <= 2:
        return 28.0
    if 2.5 <= week < 4:
        return 56.0
    if 4 <= week < 5:
        return 84.0
    if 5 <= week <= 6.5:
        return 28.0
    return 0.0


def test_table_matches_a_numerical_solution():
    """RK45 on du/dt = c(t) - lambda u, in core-hours and weeks, piece by piece, with
    lambda = -ln(1 - 0.693/T) (DESIGN: Slurm's decay) and F = 2^(-u/10,000)."""
    week_s = 7 * 86400
    lam_per_week = -math.log(1 - 0.693 / week_s) * week_s
    hours_per_week = 168.0
    edges = [0.0, 2.0, 2.5, 4.0, 5.0, 6.5, 9.0]
    rows = table()
    assert [w for w, _, _ in rows] == [k / 2 for k in range(19)]
    u, expect = 0.0, {0.0: 0.0}
    for a, b in itertools.pairwise(edges):
        rate = c_of_t((a + b) / 2) * hours_per_week  # core-hours per week
        sol = solve_ivp(lambda t, y, r=rate: [r - lam_per_week * y[0]], (a, b), [u], rtol=1e-11, atol=1e-9, dense_output=True)
        for w, _, _ in rows:
            if a < w <= b:
                expect[w] = float(sol.sol(w)[0])
        u = float(sol.y[0][-1])
    for w, usage, f in rows:
        assert usage == pytest.approx(expect[w], abs=0.05 + 1e-9), w  # printed to 0.1
        assert f == pytest.approx(2 ** (-expect[w] / 10_000), abs=5e-5 + 1e-9), w


def test_the_doc_states_the_disagreement_with_the_paper():
    text = DOC.read_text()
    low = float(re.search(r"lowest F (\d\.\d+) at week 5\.00 \(", blocks()[3][1]).group(1))
    assert low < 0.85  # the maths contradicts "never goes below 0.85"
    assert f"lowest F of {low:.4f}" in text
    fast = float(re.search(r"with lambda = 7/week: lowest F (\d\.\d+)", blocks()[5][1]).group(1))
    assert fast >= 0.85
