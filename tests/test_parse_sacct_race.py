"""sacct -T on 22.05 lists a job that started in the second after -E with Start after End (seen on
the testbed: it killed the agent's tick with a ParseError). A running job's truncated End is no
end: it ran nothing in the window. Any other job with End before Start is still refused."""

from __future__ import annotations

import pytest

from fscontrol.errors import ParseError
from fscontrol.slurm.parse import parse_sacct

HEAD = "JobID|User|Account|Partition|QOS|State|AllocCPUS|AllocTRES|NNodes|ElapsedRaw|Submit|Start|End\n"


def test_a_running_job_started_just_after_the_window_ran_nothing_in_it():
    (job,) = parse_sacct(HEAD + "487|alice|flat|normal|normal|RUNNING|2|billing=2,cpu=2,node=1|1|0|1795696072|1795696075|1795696074\n")
    assert job.start == job.end == 1795696075


def test_a_finished_job_with_end_before_start_is_still_refused():
    with pytest.raises(ParseError, match="End is before Start"):
        parse_sacct(HEAD + "488|alice|flat|normal|normal|COMPLETED|2|billing=2,cpu=2,node=1|1|0|1795696072|1795696075|1795696074\n")
