"""The WSGI entry a site mounts behind its own authentication (Apache mod_wsgi, gunicorn, uwsgi):
the user is the REMOTE_USER the server sets; a request without one is refused. Settings:
FSCONTROL_PUBLISHED, FSCONTROL_SOURCE (live | published | a sample folder), FSCONTROL_CLUSTER,
from the environment or the server's per-request variables (Apache: SetEnv). FSCONTROL_WEB_ADMINS
(comma-separated REMOTE_USERs who may ask for anyone with ?user=) is read from the server
process's own environment alone, never from a request's.

    WSGIScriptAlias /fairshare /opt/fscontrol/lib/python3.11/site-packages/fscontrol/web/wsgi.py
"""

from fscontrol.web.app import make_app

import os

application = make_app(identity="remote_user",
                       admins=tuple(a.strip() for a in os.environ.get("FSCONTROL_WEB_ADMINS", "").split(",") if a.strip()))
