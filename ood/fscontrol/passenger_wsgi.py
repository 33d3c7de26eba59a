"""Open OnDemand's entry for the fscontrol page (a Passenger WSGI app: Passenger loads this file
and serves its `application`). OnDemand runs it in the user's own per-user NGINX, as the logged-in
Unix user, so the page is that user's `fscontrol forecast`: identity "process", never REMOTE_USER.

Python: bin/python in this folder starts fscontrol's site install (scripts/install-site.sh). Where
Passenger starts another Python, this file re-executes itself under the site install's Python
(Passenger's documented INTERP pattern). Settings, from the environment (e.g. in bin/python):
FSCONTROL_PUBLISHED, FSCONTROL_SOURCE (default live: the user's own `sshare`), FSCONTROL_CLUSTER.
"""

import importlib.util
import os
import sys

INTERP = os.path.join(os.environ.get("FSCONTROL_PREFIX", "/opt/fscontrol"), "bin", "python")
if importlib.util.find_spec("fscontrol") is None and os.path.exists(INTERP) and sys.executable != INTERP:
    os.execl(INTERP, INTERP, *sys.argv)

from fscontrol.web.app import make_app  # noqa: E402

application = make_app(identity="process")
