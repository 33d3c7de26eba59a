"""`status --json` streamed (issue #31 item 4): report.table.json_chunks gives json.dumps(data,
indent=2) of the table's rows, the same text, without holding the rows or the text whole."""

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
