"""The site install every Unix user can run (scripts/install-site.sh), tested as a user: the
testbed's carol (a plain Unix user, not root) runs `fscontrol --version`, her own forecast and
`fscontrol why` on her pending job from the install, through the BINDIR link and through the
module file's PATH."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slurm  # needs root and the testbed's Unix users

ROOT = Path(__file__).resolve().parent.parent


def test_a_plain_user_runs_the_site_install(slurm, tmp_path_factory):
    base = Path("/tmp") / f"fscontrol-site-{os.getpid()}"
    prefix, bindir = base / "opt", base / "bin"
    try:
        p = subprocess.run([str(ROOT / "scripts" / "install-site.sh"), str(prefix), str(bindir)], capture_output=True,
                           text=True, timeout=900, check=False)
        assert p.returncode == 0, p.stderr[-2000:]
        base.chmod(0o755)
        as_carol = ["runuser", "-u", "carol", "--"]
        v = subprocess.run([*as_carol, str(bindir / "fscontrol"), "--version"], capture_output=True, text=True, timeout=60)
        assert v.returncode == 0 and v.stdout.startswith("fscontrol "), v.stderr
        module = next((prefix / "modulefiles" / "fscontrol").glob("*.lua"))
        path = re.search(r'prepend_path\("PATH", "([^"]+)"\)', module.read_text()).group(1)
        if (slurm.dir / "bin").is_dir():  # Slurm 24.11: the testbed's client wrappers, before the host's 22.05 ones
            path = f"{path}:{slurm.dir / 'bin'}"
        # carol's own forecast, from the recorded series (as of its time), as the module's PATH gives it
        public = base / "public"
        public.mkdir()
        db = base / "h.db"
        series = sorted(q for q in (ROOT / "samples" / "testbed-series").iterdir() if q.is_dir())
        sample = base / "sample"
        subprocess.run(["cp", "-r", str(series[-1]), str(sample)], check=True)
        subprocess.run([str(prefix / "bin" / "fscontrol"), "collect", "--source", str(sample), "--db", str(db)], check=True,
                       capture_output=True, timeout=120)
        subprocess.run([str(prefix / "bin" / "fscontrol"), "publish", "--db", str(db), "--out", str(public / "tbcluster.json")],
                       check=True, capture_output=True, timeout=120)
        subprocess.run(["chmod", "-R", "a+rX", str(sample), str(public)], check=True)
        f = subprocess.run([*as_carol, "env", f"PATH={path}:/usr/bin:/bin", "fscontrol", "forecast", "--published", str(public),
                            "-A", "chem", "--source", str(sample), "--plan", "8cpus:1:00:00", "--json"],
                           capture_output=True, text=True, timeout=120)
        assert f.returncode == 0, f.stderr
        assert '"user": "carol"' in f.stdout
        # "why is my job waiting?", as carol, on the live testbed, from the same install
        job = slurm.probe("carol", "chem")
        w = subprocess.run([*as_carol, "env", f"PATH={path}:/usr/bin:/bin", f"SLURM_CONF={slurm.conf}", "fscontrol", "why",
                            job], capture_output=True, text=True, timeout=120)
        assert w.returncode == 0, w.stderr
        assert f"job {job} (carol, account chem" in w.stdout and "fair-share" in w.stdout
        # her own page, served as her (`fscontrol web`, loopback, a secret token), with her live sshare
        # row, from a snapshot of the live testbed that root collects and publishes with the install
        # (the page forecasts as of now: a recorded snapshot older than a day is refused, as it should
        # be); and the public page `publish` wrote beside the JSON matches it
        live = base / "live"
        live.mkdir()
        for cmd in (["collect", "--db", str(base / "live.db")],
                    ["publish", "--db", str(base / "live.db"), "--out", str(live / "tbcluster.json")]):
            p = subprocess.run([str(prefix / "bin" / "fscontrol"), *cmd], capture_output=True, text=True, timeout=120,
                               env=slurm.env)
            assert p.returncode == 0, (cmd, p.stderr)
        subprocess.run(["chmod", "-R", "a+rX", str(live)], check=True)
        web = subprocess.Popen([*as_carol, "env", f"PATH={path}:/usr/bin:/bin", f"SLURM_CONF={slurm.conf}", "fscontrol",
                                "web", "--port", "0", "--published", str(live)], stderr=subprocess.PIPE, text=True)
        try:
            line = web.stderr.readline()
            assert line.startswith("serving http://127.0.0.1:"), line
            url = line.split()[1]
            import json
            import urllib.request

            with urllib.request.urlopen(url, timeout=60) as r:
                page = r.read().decode()
            api = url.replace("/?token=", "/api/forecast?token=") + "&cpus=8&length=1&unit=h"
            opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
            opener.open(url, timeout=60).read()
            with opener.open(api, timeout=60) as r:
                fc = json.loads(r.read().decode())["forecast"]
            # her own forecast (the browser tests check the page's numbers against the CLI's)
            assert fc["user"] == "carol" and "carol" in page and "alice" not in page
            chem = next(a for a in fc["associations"] if a["account"] == "chem")
            assert 0 < chem["fairshare"] <= 1 and chem["fairshare_sshare"] is not None  # her live sshare row
        finally:
            web.terminate()
            web.wait(timeout=30)
        pub_json = json.loads((public / "tbcluster.json").read_text())
        html = (public / "tbcluster.html").read_text()
        assert pub_json["cluster"] in html and "<script" not in html
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=False)
