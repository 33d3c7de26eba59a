"""`status --json` streamed (issue #31 item 4): report.table.json_chunks gives json.dumps(data,
indent=2) of the table's rows, without holding the rows or the text whole: the same text, but for
the exponent form of floats below 1e-4 or from 1e16 in columns of numbers (orjson's, the same
values: test_a_column_of_numbers_reads_back_the_same_values)."""

from __future__ import annotations

import json
import math

import pytest

from fscontrol.report import table as rtable
from fscontrol.report.table import StatusTable


@pytest.mark.parametrize("n", [0, 1, 2, 1023, 1024, 1025, 2050])
def test_json_chunks_are_json_dumps(n):
    odd = ["x", "é\"\\\n", None, True, False, 0, -3, 2**70, 0.1, 1e-300, math.inf, -math.inf, math.nan, [1, {"a": None}], {"k": [2.5]}]
    columns = {"user": [f"u{i}" for i in range(n)], "value": [odd[i % len(odd)] for i in range(n)],
               "f": [i / 7 for i in range(n)]}
    data = {"cluster": "c", "table": StatusTable(columns), "after": [1, 2]}
    rows = {**data, "table": StatusTable(columns).rows()}
    assert "".join(rtable.json_chunks(data)) == json.dumps(rows, indent=2)


def test_a_table_of_rows_is_dumped_as_before():
    data = {"table": [{"a": 1}], "b": None}
    assert "".join(rtable.json_chunks(data)) == json.dumps(data, indent=2)


@pytest.mark.parametrize("n", [1, 1024, 1030])
def test_columns_of_scalars_alone_take_the_one_call_path_and_keep_the_text(n):
    """A column of scalars is encoded in one call, its values parted by NUL (issue #31): a NUL, a
    comma, a quote or a "%" inside a string, non-finite floats, bools and None give json.dumps's
    text all the same, and a key with "%" in it too (each row is one format of its cells)."""
    texts = ["a\0b", "x, y", 'q"', "%s", "%", "", "é", "\u2028", "\x7f"]
    scalars = [None, True, False, 0, 2**70, -0.0, 0.1, math.nan, math.inf, -math.inf, "z\0"]
    columns = {"user": [texts[i % len(texts)] for i in range(n)], "mixed": [scalars[i % len(scalars)] for i in range(n)],
               "%d key\0": [i * 0.25 for i in range(n)]}
    assert set(map(type, columns["mixed"])) <= rtable._SCALARS
    data = {"table": StatusTable(columns)}
    rows = {"table": StatusTable(columns).rows()}
    assert "".join(rtable.json_chunks(data)) == json.dumps(rows, indent=2)
    assert rtable._encoded(columns["mixed"]) == [json.dumps(v) for v in columns["mixed"]]


def _dumps_each(values) -> list[str]:
    return [json.dumps(v) for v in values]


@pytest.mark.parametrize("values", [
    [1.07525725529833e-05, 2.5e-06] * 700,  # NormShares: one value for all the users of an account
    [0.0] * 1000 + [0.1, 0.2],  # zeros alone: no -0.0 among them
    [0.0, -0.0] * 600,  # -0.0 equals 0.0: encoded whole, each its own text
    [-0.0] * 1000 + [1.5],
    [math.inf, -math.inf, 1e16, 1e-7, 123456789.0, 5e-324, 1.7976931348623157e308] * 200,
    [float("nan") for _ in range(600)] + [math.nan] * 600,  # NaNs: distinct objects, never equal
    [i / 7 for i in range(1200)],  # all distinct: encoded whole
    [(i % 300) / 7 for i in range(1200)],  # a quarter distinct: encoded whole (the rows repeat only after 300)
])
def test_a_column_of_floats_keeps_json_dumps_text(values):
    """A column of floats whose first rows repeat a few values has each distinct value encoded once
    (issue #31): the same text as json.dumps of each value, -0.0 and NaN included."""
    assert rtable._encoded(values) == _dumps_each(values)
    assert rtable._few_floats(values) == _dumps_each(values)
    data = {"table": StatusTable({"f": values})}
    assert "".join(rtable.json_chunks(data)) == json.dumps({"table": StatusTable({"f": values}).rows()}, indent=2)


def test_a_column_of_few_floats_takes_the_distinct_path(monkeypatch):
    """The NormShares-like column (a few values repeated) goes through _few_floats; one of distinct
    values, or a mixed one, does not."""
    seen = []
    real = rtable._few_floats
    monkeypatch.setattr(rtable, "_few_floats", lambda v: seen.append(len(v)) or real(v))
    few = [0.25, 0.5, 0.75] * 400
    assert rtable._encoded(few) == _dumps_each(few) and seen == [1200]
    assert rtable._encoded([i / 3 for i in range(1200)]) == _dumps_each([i / 3 for i in range(1200)]) and seen == [1200]
    mixed = [0.25, None] * 600
    assert rtable._encoded(mixed) == _dumps_each(mixed) and seen == [1200]


def _exact(a, b) -> bool:
    """Parsed JSON equal, floats to the bit (NaN equal to NaN)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b) or (a != a and b != b)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_exact(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_exact(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.parametrize("values", [
    [i * 1.37e-9 for i in range(1500)],  # EffectvUsage of a large tree: below 1e-4, Python writes 1.37e-09
    [1e-5 * (1 + i / 977) for i in range(1200)],  # 1e-5..1e-4: orjson writes 0.0000137, Python 1.37e-05
    [1e16 * (1 + i / 97) for i in range(300)] + [1e21, 1e300, 5e-324, -0.0, 0.0, 0.1, 2.5],
    [None, 0.25, None, 1e-7] * 300,  # a column with blanks
    [None, True, False, 3, -7, 0.5] * 200,  # numbers, bools and blanks
    [2**70, 1, 2.5] * 400,  # an int beyond 64 bits: json's encoder
    [math.nan, 1.5e-9, math.inf] * 400,  # non-finite: json's NaN / Infinity, never orjson's null
])
def test_a_column_of_numbers_reads_back_the_same_values(values):
    """A column of numbers is encoded by orjson (issue #31: Python's float repr was half of `status
    --json` at 100,000 associations): every value reads back the same, to the bit; the text differs
    from json.dumps's only in how a float below 1e-4 or from 1e16 is written (1.5e-7, not 1.5e-07);
    a NaN or an infinity keeps json's text."""
    got = rtable._encoded(values)
    want = _dumps_each(values)
    assert len(got) == len(values)
    for g, w, v in zip(got, want, values):
        assert _exact(json.loads(g), json.loads(w)), (g, w)
        if g != w:  # only a float's exponent form
            assert type(v) is float and v and not (1e-4 <= abs(v) < 1e16) and math.isfinite(v), (g, w)
    data = {"table": StatusTable({"x": values, "user": ["u"] * len(values)})}
    assert _exact(json.loads("".join(rtable.json_chunks(data))), json.loads(json.dumps({"table": StatusTable(
        {"x": values, "user": ["u"] * len(values)}).rows()}, indent=2)))
    if any(type(v) is float and not math.isfinite(v) for v in values) or any(type(v) is int and abs(v) >= 2**63 for v in values):
        assert got == want


def test_without_orjson_the_text_is_json_dumps(monkeypatch):
    """orjson is a dependency; a Python without it still writes the report, as json.dumps does."""
    import builtins

    values = [i * 1.37e-9 for i in range(1500)]
    assert rtable._encoded(values) != _dumps_each(values)  # orjson's texts (1.37e-9), the same values
    real = builtins.__import__

    def no_orjson(name, *a, **k):
        if name == "orjson":
            raise ImportError("no orjson")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_orjson)
    assert rtable._encoded(values) == _dumps_each(values)
