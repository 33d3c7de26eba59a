"""The simulator's research runners on typer (fscontrol.sim.cmdline), as the fscontrol command is:
each one's -h/--help names its options and exits 0, and a bad option or value is one line on
stderr with exit 2, no traceback, nothing run."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fscontrol.sim import controlexp, experiment, moldable_experiment

RUNNERS = {
    "fscontrol.sim.experiment": (experiment.main, ("--seeds", "--backfill", "--gate-interval", "--format")),
    "fscontrol.sim.controlexp": (controlexp.main, ("--swf", "--days", "--u-star", "--control", "--half-life-days",
                                                   "--calc-period-min", "--no-static", "--reconfigure-every-days",
                                                   "--down-every-days", "--json", "--png")),
    "fscontrol.sim.moldable_experiment": (moldable_experiment.main, (
        "--log", "--limit", "--sigma", "--rf", "--lf", "--avg-par", "--xfactor", "--estimates", "--backfill",
        "--share-over", "--strategies", "--sizes", "--from-json", "--only", "--png", "--json", "--format")),
}


@pytest.mark.parametrize("module", sorted(RUNNERS))
def test_help_names_every_option(module, capsys):
    main, options = RUNNERS[module]
    for flag in ("--help", "-h"):
        assert main([flag]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"Usage: python -m {module} [OPTIONS]"), out
        for opt in options:
            assert opt in out, (opt, out)


@pytest.mark.parametrize("module", sorted(RUNNERS))
def test_a_bad_option_is_one_line(module, capsys):
    main, _ = RUNNERS[module]
    assert main(["--bogus"]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    err = cap.err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"python -m {module}: error: No such option: --bogus"), err
    assert err[0].endswith("(-h lists the options)"), err


@pytest.mark.parametrize("argv, word", [
    (("--seeds", "many"), "'--seeds': 'many' is not a valid int"),
    (("--seeds",), "'--seeds' requires an argument"),
])
def test_a_bad_value_is_one_line(argv, word, capsys):
    assert experiment.main(list(argv)) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and word in err[0], err


def test_a_bad_choice_is_one_line_naming_the_choices(capsys):
    assert controlexp.main(["--control", "pid"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "'pid' is not one of" in err[0] and "'hybrid-pulse'" in err[0], err


@pytest.mark.parametrize("module", sorted(RUNNERS))
def test_python_m_bad_option_exit_2_no_traceback(module):
    """The `python -m` entry point itself: exit code 2, the one line, no traceback."""
    r = subprocess.run([sys.executable, "-m", module, "--bogus"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == "", r
    err = r.stderr.splitlines()
    assert len(err) == 1 and err[0].startswith(f"python -m {module}: error: No such option: --bogus"), r.stderr
