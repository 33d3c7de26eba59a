"""fscontrol's web pages: the user's own forecast (a WSGI app that runs as the user, e.g. under
Open OnDemand, or behind a site's authenticating web server) and the public page `fscontrol
publish` writes next to the published JSON. Standard library only; every page is self-contained
(inline CSS, JS and SVG; no request leaves it)."""
