"""The page as a CGI script, for a web folder the site already serves with authentication
(REMOTE_USER set by the server). Install as an executable script, e.g. /usr/lib/cgi-bin/fairshare:

    #!/opt/fscontrol/bin/python
    from fscontrol.web.cgi import main
    main()
"""

from __future__ import annotations


def main() -> None:
    from wsgiref.handlers import CGIHandler

    from fscontrol.web.app import make_app

    CGIHandler().run(make_app(identity="remote_user"))


if __name__ == "__main__":  # pragma: no cover
    main()
