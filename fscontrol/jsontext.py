"""json.loads, and json.dumps of one string, without importing the json package.

`fscontrol forecast` reads a few JSON lines of the published file and writes none (its text
report). Importing `json` compiles six regular expressions (its decoder's and its encoder's) and
was ~5 M instructions of each forecast's start, 1.4% of it (issue #31 item 5). The parse itself
is CPython's own C scanner (`_json.make_scanner`, what json.loads runs), set up as json's default
decoder sets it up, so a value read here is the value json.loads reads: the same objects, the same
floats, the last of a repeated key. Anything the plain path does not take (a text json.loads
would refuse, a byte-order mark, UTF-16 or UTF-32 bytes, a Python without `_json`) goes to
json.loads itself, which gives its own value or raises its own error (json.JSONDecodeError, a
ValueError). Standard library only.
"""

from __future__ import annotations

try:  # CPython's accelerator of the json package (absent on some other Pythons: json.loads then)
    from _json import encode_basestring_ascii as _quoted
    from _json import make_scanner as _make_scanner
except ImportError:  # pragma: no cover - not CPython
    _quoted = _make_scanner = None

_WS = " \t\n\r"  # JSON's white space (json.decoder.WHITESPACE)
_INF = float("inf")


class _Decoding:
    """The attributes json.scanner reads from a JSONDecoder(), as json.loads's default one has them."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": -_INF, "Infinity": _INF, "NaN": float("nan")}.__getitem__  # json's _CONSTANTS
    memo: dict = {}


try:
    _scan = _make_scanner(_Decoding()) if _make_scanner is not None else None
except Exception:  # pragma: no cover - an accelerator that wants another decoder: json.loads then
    _scan = None


def loads(s: str | bytes | bytearray):
    """json.loads(s): the same value, or json.loads's own error."""
    text = s
    if _scan is None:
        return _json_loads(s)
    if isinstance(s, str):
        if s.startswith("\ufeff"):
            return _json_loads(s)
    elif isinstance(s, (bytes, bytearray)):
        if 0 in s[:4] or s.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):  # not plain UTF-8 (json.detect_encoding)
            return _json_loads(s)
        try:
            text = s.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            return _json_loads(s)
    else:
        return _json_loads(s)
    start = len(text) - len(text.lstrip(_WS))
    try:
        value, end = _scan(text, start)
    except Exception:  # noqa: BLE001 - json.loads raises its own error for the same text
        # (StopIteration where no value starts; a text the scanner refuses deeper in raises
        # json's JSONDecodeError, which the C scanner finds only where json.decoder is imported:
        # without it, CPython 3.11 raises SystemError; RecursionError; MemoryError)
        return _json_loads(s)
    if end != len(text) and text[end:].strip(_WS):  # more than white space after the value
        return _json_loads(s)
    return value


def dumps_str(s: str) -> str:
    """json.dumps(s) of a str (ensure_ascii, as json.dumps's default)."""
    if _quoted is None or not isinstance(s, str):  # pragma: no cover - not CPython
        import json

        return json.dumps(s)
    return _quoted(s)


def _json_loads(s):
    import json

    return json.loads(s)
