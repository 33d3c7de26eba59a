"""Issue #33 D6 and D6b, without Slurm (the testbed tests: tests/test_integration_tres.py
test_a_plan_without_qos_bills_the_association_s_default_qos, tests/test_integration_start.py
test_start_an_array_task_and_a_heterogeneous_component).

D6: a plan without -q is billed at the QOS Slurm gives the job (slurmctld's _determine_and_validate_qos:
the association's DefaultQOS, else its only QOS, else root's DefaultQOS, else `normal`), for the
account given with -A or the user's default account, published where PrivateData lets users see it.
D6b: `fscontrol start -j` takes an array task (123_4) and a het component (123+1) as `why` does."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from fscontrol.cli.app import app
from fscontrol.errors import NotFoundError
from fscontrol.export import jobqos as ejq
from fscontrol.export import privacy
from fscontrol.export import publish as pub
from fscontrol.forecast import start as startmod
from fscontrol.slurm import jobid, privatedata
from fscontrol.slurm import jobqos

# as the 22.05 testbed printed them (sacctmgr -P show assoc format=Cluster,Account,User,DefaultQOS,QOS;
# sacctmgr -P show user format=User,DefaultAccount), after `modify account physics set qos+=dq2 defaultqos=dq2`
ASSOC = """Cluster|Account|User|Def QOS|QOS
tbcluster|root|||normal
tbcluster|root|root||normal
tbcluster|flat|||normal
tbcluster|flat|alice||normal
tbcluster|physics||dq2|dq2,normal
tbcluster|physics|alice|dq2|dq2,normal
tbcluster|physics|bob|dq2|dq2,normal
tbcluster|chem|carol||fast,normal
other|chem|carol|dq2|dq2,normal
"""
USERS = "User|Def Acct\nalice|flat\nbob|physics\ncarol|chem\nroot|root\n"


def test_the_qos_slurm_gives_a_job_without_qos():
    assocs = jobqos.parse_assoc_qos(ASSOC, "tbcluster")
    assert assocs[("physics", "alice")] == ("dq2", ("dq2", "normal")) and ("chem", "carol") in assocs
    assert assocs[("chem", "carol")] == ("", ("fast", "normal"))  # the other cluster's row is not this one's
    assert jobqos.parse_default_accounts(USERS) == {"alice": "flat", "bob": "physics", "carol": "chem", "root": "root"}
    # slurmctld's order: DefaultQOS, the only QOS, root's DefaultQOS, normal
    assert jobqos.job_qos("dq2", ("dq2", "normal")) == ("dq2", "DefaultQOS")
    assert jobqos.job_qos("", ("long",)) == ("long", "only QOS")
    assert jobqos.job_qos("", ("a", "b"), "rootq") == ("rootq", "root's DefaultQOS")
    assert jobqos.job_qos("", ("a", "b")) == ("normal", "default")
    users = jobqos.users_job_qos(assocs, jobqos.parse_default_accounts(USERS))
    assert users["alice"] == {"default_account": "flat", "accounts": {"flat": {"qos": "normal", "from": "only QOS"},
                                                                     "physics": {"qos": "dq2", "from": "DefaultQOS"}}}
    assert users["carol"]["accounts"]["chem"] == {"qos": "normal", "from": "default"}
    with pytest.raises(Exception, match="Def QOS"):
        jobqos.parse_assoc_qos("Cluster|Account|User|QOS\n")


def _snap(private=()):
    from tests.test_forecast_cli import _snapshot

    s = _snapshot(private)
    return replace(s, usage_factors={"normal": 1.0, "dq2": 2.0})


YALIM = {"yalim": {"default_account": "yalim", "accounts": {"yalim": {"qos": "dq2", "from": "DefaultQOS"}}}}
PARTS = {"normal": {"weights": "CPU=1.0,GRES/gpu=8.0", "default": True, "cpus": 512, "gpus": 8}}


def test_published_where_privatedata_shows_it_and_always_in_the_users_own_file():
    rows = pub.build_published(_snap(), partitions=PARTS, job_qos=YALIM)["associations"]
    mine = [r for r in rows if r["user"] == "yalim"]
    assert mine[0]["job_qos"] == {"qos": "dq2", "from": "DefaultQOS", "default": True}
    assert all("job_qos" not in r for r in rows if r["user"] != "yalim")
    for hidden in (("associations",), ("users",), ("all",)):
        data = pub.build_published(_snap(hidden), partitions=PARTS, job_qos=YALIM)
        assert "dq2" not in json.dumps(data["associations"]), hidden  # PrivateData: not in the world-readable file
        own = pub.own_files(_snap(hidden), secret=None, job_qos=YALIM)
        assert own["yalim"]["job_qos"] == YALIM["yalim"] and set(own) == {"yalim"}
        merged = privacy.merge_own({**data, "own_files": True}, own["yalim"])
        assert ejq.for_plan(merged, "yalim", None) == ("dq2", "the DefaultQOS of yalim@yalim (yalim's default account)")
    assert privatedata.associations_public(()) and not privatedata.associations_public(("associations",))


def test_for_plan_picks_the_account_then_the_default_account():
    data = {"job_qos": {"default_account": "flat", "accounts": {"flat": {"qos": "normal", "from": "only QOS"},
                                                                "physics": {"qos": "dq2", "from": "DefaultQOS"}}}}
    assert ejq.for_plan(data, "alice", "physics") == ("dq2", "the DefaultQOS of alice@physics")
    assert ejq.for_plan(data, "alice", None) == ("normal", "the only QOS of alice@flat (alice's default account)")
    assert ejq.for_plan(data, "alice", "nosuch") is None
    assert ejq.for_plan({}, "alice", "physics") == ("normal", "Slurm's default QOS; the agent published no DefaultQOS "
                                                    "for alice@physics")


def test_a_plan_without_q_bills_the_default_qos_and_says_so(tmp_path, monkeypatch):
    """The CLI over a published file whose yalim@yalim has DefaultQOS dq2 (UsageFactor 2): a plan
    without -q bills 2 x, naming the QOS and why (the old code billed UsageFactor 1: 4 -> 4); -q
    normal bills 1 x; --json says which QOS and why."""
    from tests.test_forecast_cli import T0, _agave_rows, _sample, _sshare_text
    from fscontrol.forecast import service as uf

    monkeypatch.setattr(uf, "invoker", lambda: ("root", 0))
    data = pub.build_published(_snap(), target_core_hours=10_000, partitions=PARTS, job_qos=YALIM)
    (tmp_path / "public").mkdir()
    path = pub.write_published(data, tmp_path / "public" / "agave.json")
    sample = _sample(tmp_path / "s", _sshare_text(_agave_rows(), {"yalim"}))
    base = ["forecast", "--published", str(path), "--source", str(sample), "--now", str(T0 + 600), "-u", "yalim"]
    j = json.loads(CliRunner().invoke(app, [*base, "--plan", "4cpus:10h", "--json"]).output)
    assert j["plan"][0]["cores"] == 8.0 and j["billing"]["usage_factor"] == 2.0 and j["billing"]["qos"] == "dq2"
    assert j["billing"]["qos_from"] == "the DefaultQOS of yalim@yalim (yalim's default account)"
    r = CliRunner().invoke(app, [*base, "--plan", "4cpus:10h"])
    assert ("billed under partition normal: CPU=1.0,GRES/gpu=8.0: 4cpus -> 4 x UsageFactor 2 (QOS dq2: the DefaultQOS "
            "of yalim@yalim (yalim's default account)) per run = 8") in r.output, r.output
    j = json.loads(CliRunner().invoke(app, [*base, "--plan", "4cpus:10h", "-q", "normal", "--json"]).output)
    assert j["plan"][0]["cores"] == 4.0 and j["billing"]["qos_from"] == "--qos"
    # the web planner (same published file, REMOTE_USER yalim): the same line and the same F as the CLI
    from test_web import call

    from fscontrol.web.app import make_app

    web = make_app(published=str(path), source=str(sample), identity="remote_user", now=T0 + 600)
    status, _, body = call(web, "/api/forecast", "cpus=4&length=10&unit=h&runs=1&target=0.5", user="yalim")
    assert status == "200 OK", body
    got = json.loads(body)["forecast"]
    cli = json.loads(CliRunner().invoke(app, [*base, "--plan", "4cpus:10h", "--json"]).output)
    assert got["billing"]["lines"] == cli["billing"]["lines"] and got["billing"]["usage_factor"] == 2.0
    assert "QOS dq2: the DefaultQOS of yalim@yalim" in json.loads(body)["html"]
    a, b = got["associations"][0]["after_plan"], cli["associations"][0]["after_plan"]
    assert a["fairshare"] == b["fairshare"], (a, b)


# ---------------------------------------------------------------------------- D6b
# as the 22.05 testbed printed them: a pending array 2_[1-3], a pending hetjob 3 (components 3+0, 3+1 = job 4);
# %v (no reservation: "(null)") added before %A as start.SQUEUE_START_ARGS now asks
START_QUEUE = """1|alice|physics|normal|RUNNING|128|10:00|2026-11-27T04:50:00|1|None|2026-11-27T04:50:00|(null)|1
2_[1-3]|alice|physics|normal|PENDING|2|5:00|N/A|1|Resources|2026-11-27T04:50:01|(null)|2
3+0|alice|physics|normal|PENDING|1|5:00|N/A|1|None|2026-11-27T04:50:02|(null)|3
3+1|alice|physics|normal|PENDING|1|5:00|N/A|1|None|2026-11-27T04:50:02|(null)|4
"""
SQUEUE_J = {"2_2": "2|2_2\n", "2_9": "", "3+1": "4|3+1\n3|3+0\n", "4": "4|3+1\n", "1": "1|1\n"}
STATE_J = {"1": "RUNNING|None|physics|normal|1\n", "2_9": ""}


class _Recorded:
    """squeue's answers recorded on the testbed above, by the arguments asked."""

    def run(self, argv):
        from types import SimpleNamespace

        job = argv[argv.index("-j") + 1]
        table = SQUEUE_J if argv[-1] == "%A|%i" else STATE_J
        return SimpleNamespace(stdout=table[job])


def test_jobid_takes_the_row_that_is_the_job_asked():
    assert jobid.own_id(SQUEUE_J["3+1"], "3+1") == "4" and jobid.own_id(SQUEUE_J["3+1"], "3+0") == "3"
    assert jobid.own_id(SQUEUE_J["2_2"], "2_2") == "2" and jobid.own_id(SQUEUE_J["4"], "4") == "4"
    assert jobid.own_id("", "2_9") is None and jobid.own_id(SQUEUE_J["3+1"], "3+7") is None


def test_start_finds_an_array_task_and_a_het_component_as_why_does():
    jobs = startmod.parse_queue(START_QUEUE)
    assert [j.own_id for j in jobs] == ["1", "2", "3", "4"]
    assert startmod.parse_queue(START_QUEUE.replace("|(null)|1\n", "\n", 1))[0].own_id == ""  # an 11-field listing still reads
    src = _Recorded()
    assert startmod.pending_row(src, jobs, "2_2") == "2_[1-3]"  # was: "job 2_2 is not pending"
    assert startmod.pending_row(src, jobs, "3+1") == "3+1" and startmod.pending_row(src, jobs, "4") == "3+1"
    with pytest.raises(NotFoundError, match="job 1 is RUNNING: it is not pending"):
        startmod.pending_row(src, jobs, "1")
    with pytest.raises(NotFoundError, match="job 2_9 is not pending"):
        startmod.pending_row(src, jobs, "2_9")
