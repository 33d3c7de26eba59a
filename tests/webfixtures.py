"""Published snapshots of the recorded samples for the web pages' tests (no Slurm needed):
classic (testbed-basic), classic under PrivateData=usage (the agent's recording with the config
changed, and carol's own `sshare` as Slurm shows it to her then: her rows only), and Fair Tree."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"


def fscontrol(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fscontrol", *args], cwd=ROOT, capture_output=True, text=True,
                          check=check, timeout=120)


def publish(sample: Path, folder: Path, cluster: str = "tbcluster") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "history.db"
    fscontrol("collect", "--source", str(sample), "--db", str(db))
    out = folder / "public"
    out.mkdir(exist_ok=True)
    fscontrol("publish", "--db", str(db), "--out", str(out / f"{cluster}.json"))
    return out


def private_samples(tmp: Path) -> tuple[Path, Path]:
    """(the agent's recording with PrivateData=usage, carol's own view of sshare under it)."""
    agent = tmp / "agent-private"
    shutil.copytree(SAMPLES / "testbed-basic", agent)
    cfg = agent / "config.txt"
    lines = [("PrivateData             = usage" if ln.startswith("PrivateData") else ln) for ln in cfg.read_text().splitlines()]
    cfg.write_text("\n".join(lines) + "\n")
    carol = tmp / "carol-private"
    shutil.copytree(agent, carol)
    sshare = (carol / "sshare.txt").read_text().splitlines()
    own = [sshare[0]] + [ln for ln in sshare[1:] if ln.split("|")[1] == "carol"]
    (carol / "sshare.txt").write_text("\n".join(own) + "\n")
    return agent, carol


def cli_forecast(published: Path, source: Path | str, user: str, *extra: str) -> dict:
    r = fscontrol("forecast", "--published", str(published), "--source", str(source), "-u", user, "--json", *extra)
    return json.loads(r.stdout)


OTHER_USERS = ("alice", "bob", "dave", "fsdummy")
