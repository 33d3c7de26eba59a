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
