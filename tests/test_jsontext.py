"""fscontrol.jsontext reads JSON as json.loads does and quotes a string as json.dumps does, without
importing the json package (issue #31 item 5): on random values in every layout json.dumps
writes them, on text and bytes, and on damaged text, where it gives json.loads's own value or
its own error."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fscontrol import jsontext

SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text()
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
                      max_leaves=40)
LAYOUTS = [dict(), dict(indent=1), dict(separators=(",", ":")), dict(ensure_ascii=False), dict(indent="\t", sort_keys=True)]


def _same(a, b) -> bool:
    """Equal as JSON values, NaN equal to NaN, and of the same types (1 and 1.0 and True differ)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


def _outcome(f, s):
    try:
        return "value", f(s)
    except Exception as e:  # noqa: BLE001 - the error itself is compared
        return "error", (type(e), str(e))


@settings(max_examples=400, deadline=None)
@given(VALUES, st.sampled_from(LAYOUTS), st.sampled_from(["", " ", "\n", " \t\r\n "]))
def test_every_value_in_every_layout_reads_as_json_loads_reads_it(value, layout, pad):
    text = pad + json.dumps(value, **layout) + pad
    want = json.loads(text)
    for s in (text, text.encode(), bytearray(text.encode())):
        assert _same(jsontext.loads(s), want)


@settings(max_examples=600, deadline=None)
@given(st.one_of(st.text(max_size=40), st.binary(max_size=40),
                 VALUES.map(json.dumps).flatmap(lambda t: st.integers(0, len(t)).map(lambda i: t[:i] + t[i + 1:]))))
@example('{"a": 1} x')
@example('{"a": 1}{"b": 2}')
@example("\ufeff[1]")
@example(b"\xef\xbb\xbf[1]")
@example("[1, 2,]")
@example('{"a": 1, "a": 2}')
@example("NaN")
@example("-Infinity")
@example(b'"\xff"')
@example("[" * 100_000)
@example('"\\ud800"')
@example("1e999")
@example("  ")
def test_any_text_gives_json_loads_value_or_its_own_error(s):
    got, want = _outcome(jsontext.loads, s), _outcome(json.loads, s)
    assert got[0] == want[0] and (_same(got[1], want[1]) if got[0] == "value" else got[1] == want[1])


def test_utf16_and_utf32_bytes_and_other_types_go_to_json_loads():
    for enc in ("utf-16", "utf-16-le", "utf-32", "utf-32-be"):
        s = '{"x": [1, 2.5, "é"]}'.encode(enc)
        assert jsontext.loads(s) == json.loads(s) == {"x": [1, 2.5, "é"]}
    for bad in (None, 12, ["[1]"]):
        assert _outcome(jsontext.loads, bad) == _outcome(json.loads, bad)


@settings(max_examples=400, deadline=None)
@given(st.text())
@example("\u2028\x00\"\\/é\U0001f600")
def test_a_string_is_quoted_as_json_dumps_quotes_it(s):
    assert jsontext.dumps_str(s) == json.dumps(s)


def test_a_repeated_key_keeps_the_last_value_and_numbers_keep_their_types():
    assert jsontext.loads('{"a": 1, "a": 2.0, "b": [true, null, -0.0, 1e400]}') == {"a": 2.0, "b": [True, None, -0.0, math.inf]}
    assert type(jsontext.loads("5")) is int and type(jsontext.loads("5.0")) is float
    with pytest.raises(json.JSONDecodeError, match="Extra data"):
        jsontext.loads("[1] [2]")


def test_damaged_text_gives_json_s_error_in_a_process_that_never_imported_json():
    # the C scanner builds its errors from json.decoder, which it looks up only where it is
    # imported: the forecast's process has not (an outside tester's SystemError, before the fallback)
    import subprocess
    import sys

    cases = ["[1 2]", '{"a" 1}', '"abc', '{"a":1,}', "[1] x", "", "nul\x00", '{"a": [1, {"b": "c\td"}]}', "[" * 50_000]
    code = f"""
import sys
from fscontrol import jsontext
assert "json" not in sys.modules and "json.decoder" not in sys.modules
out = []
for s in {cases!r}:
    try:
        out.append(("value", repr(jsontext.loads(s))))
    except Exception as e:
        out.append(("error", type(e).__name__, str(e)))
print(repr(out))
"""
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    want = []
    for s in cases:
        try:
            want.append(("value", repr(json.loads(s))))
        except Exception as e:  # noqa: BLE001
            want.append(("error", type(e).__name__, str(e)))
    assert got.stdout.strip() == repr(want)


def test_nan_is_json_s_own():
    x = jsontext.loads("[NaN]")[0]
    assert math.isnan(x) and math.copysign(1.0, x) == math.copysign(1.0, json.loads("NaN"))
