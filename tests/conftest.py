from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from testbed import Testbed, TestbedUnavailable, ensure_testbed, stop_testbed  # noqa: E402

REQUIRE_SLURM = os.environ.get("FSCONTROL_REQUIRE_SLURM") == "1" or os.environ.get("CI") == "true"


@pytest.fixture(scope="session")
def slurm() -> Testbed:
    """The real single-host Slurm. Skips on a laptop without it; FAILS in CI (FSCONTROL_REQUIRE_SLURM=1)."""
    try:
        tb = ensure_testbed()
    except TestbedUnavailable as e:
        if REQUIRE_SLURM:
            pytest.fail(f"real-Slurm tests must run here but the testbed is unavailable: {e}", pytrace=False)
        pytest.skip(f"Slurm testbed unavailable: {e}")
    yield tb
    tb.cancel_all()
    if tb.started_here and os.environ.get("FSCONTROL_KEEP_TESTBED") != "1":
        stop_testbed(tb)
