"""The reports' tables: a Field per column (-o/--format names, -P headers), the column-wise status table and its text, sparklines and number formats. Pure."""

from __future__ import annotations

from array import array
from dataclasses import dataclass
import json
import math
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone



HOUR = 3600.0


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


SPARK = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float]) -> str:
    """A one-line chart: each value as one of eight block heights between the min and the max."""
    vals = [v for v in values if v is not None]
    if not vals:
        return ""
    lo, hi = min(vals), max(vals)
    span = hi - lo or 1.0
    return "".join(" " if v is None else SPARK[min(7, int((v - lo) / span * 7.999))] for v in values)


def _fmt(v, spec: str) -> str:
    if v is None:
        return "-"
    return format(v, spec)


def _duration(s: float) -> str:
    if s % 86400 == 0:
        return f"{s / 86400:g} d"
    if s % 3600 == 0:
        return f"{s / 3600:g} h"
    return f"{s / 60:g} min"


@dataclass(frozen=True, slots=True)
class Field:
    """One column of the status table: `name` is what -o/--format takes (any case) and what -P's
    header line prints, `header` the plain table's heading, `key` the row's key in status_data."""

    name: str
    header: str
    key: str
    spec: str | None  # format() spec for numbers (-P drops the thousands separator); None: text
    right: bool
    help: str
    idle_key: str | None = None  # the row's flag for an infinite value (Fair Tree's LevelFS with no usage)


def pick_fields(spec: str | None, table: Sequence[Field], default: Sequence[str]) -> tuple[Field, ...]:
    """-o/--format for any of the reports' tables: `spec`'s comma-separated field names in any
    case (as sshare -o and sacct -o take them), else the `default` names. An unknown name is a
    ConfigError (exit 2) listing the valid ones."""
    by_name = {f.name.lower(): f for f in table}
    if spec is None:
        return tuple(by_name[n.lower()] for n in default)
    names = [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n.lower() not in by_name]
    if unknown or not names:
        from fscontrol.errors import ConfigError

        what = f"unknown field{'s' if len(unknown) > 1 else ''} {', '.join(repr(n) for n in unknown)}" if unknown else "no field"
        raise ConfigError(f"--format: {what}; valid fields: {', '.join(f.name for f in table)}")
    return tuple(by_name[n.lower()] for n in names)


class StatusTable:
    """The status table as columns: `columns` maps each row key of status_data's table to a list,
    one entry a row. The text is made a column at a time from it; `rows()` gives the list of
    dicts --json prints (the same keys in the same order, the same values)."""

    __slots__ = ("columns", "_rows")

    def __init__(self, columns: dict[str, list], rows: list[dict] | None = None) -> None:
        self.columns = columns
        self._rows = rows

    @classmethod
    def from_rows(cls, rows: list[dict]) -> StatusTable:
        """A table of row dicts (Fair Tree's), its columns made when asked."""
        return cls({}, rows)

    def __len__(self) -> int:
        if self._rows is not None:
            return len(self._rows)
        return len(next(iter(self.columns.values()), ()))

    def column(self, key: str) -> list:
        col = self.columns.get(key)
        if col is None:
            col = [r.get(key) for r in self._rows] if self._rows is not None else [None] * len(self)
        return col

    def rows(self) -> list[dict]:
        if self._rows is not None:
            return self._rows
        keys = tuple(self.columns)
        return [dict(zip(keys, values)) for values in zip(*self.columns.values())]


def _cells(table: StatusTable, f: Field, parsable: bool, tree: bool) -> list[str]:
    """One column's texts, built a column at a time (one comprehension per column, no call per
    cell): None is "-" in the plain table ("" on --tree's account rows, as sshare leaves them
    blank) and "" with -P."""
    key = f.key
    if f.name == "Account" and tree:
        return [" " * dp + a for dp, a in zip(table.column("depth"), table.column("account"))]
    values = table.column(key)
    if f.spec == "d":  # an integer field (Fair Tree's RawUsage comes as an integral float)
        values = [int(v) if isinstance(v, float) and v.is_integer() else v for v in values]
    if f.idle_key is not None:
        values = [float("inf") if idle else v for idle, v in zip(table.column(f.idle_key), values)]  # prints "inf"
    spec = f.spec
    if spec is None:
        return [("" if parsable else "-") if v is None else v for v in values]
    if parsable:
        spec = spec.replace(",", "")
        return ["" if v is None else format(v, spec) for v in values]
    if tree:
        return [("-" if u else "") if v is None else format(v, spec) for u, v in zip(table.column("user"), values)]
    return ["-" if v is None else format(v, spec) for v in values]


def _inline_number(table: StatusTable, f: Field, tree: bool) -> tuple[str, int] | None:
    """For a column of fixed-point numbers, the %-conversion (".6f") that prints every value as
    format(value, f.spec) does, and the widest value's length; None when a value needs format()
    (a None, not finite, thousands separators, a negative zero among zeros). The length of a
    fixed-point number never shrinks as its magnitude grows, so the widest is the largest or the
    most negative."""
    spec = f.spec
    if spec is None or not f.right or f.idle_key is not None or (tree and f.name == "Account"):
        return None
    plain = spec.lstrip(",")
    if not (plain[:1] == "." and plain[-1:] == "f" and plain[1:-1].isdigit()):
        return None
    values = table.column(f.key)
    if not values or None in values:
        return None
    try:
        if not math.isfinite(sum(values)):
            return None
        hi, lo = max(values), min(values)
    except (TypeError, OverflowError):
        return None
    conv = plain
    widest = max(len(format(hi, spec)), len(format(lo, spec)))
    if spec != plain and "," in format(hi, spec) + format(lo, spec):
        return None  # a thousands separator somewhere: format() it is
    if lo == 0 and any(math.copysign(1.0, v) < 0 for v in values if v == 0):
        return None  # "-0.000000" is wider than its neighbours
    return conv, widest


def table_lines(rows: list[dict] | StatusTable, fields: Sequence[Field], *, parsable: bool = False, header: bool = True,
                tree: bool = False) -> Iterator[str]:
    """The status table, line by line, from status_data's rows or its StatusTable. Plain:
    tabulate's "simple" layout (two spaces between columns, a column as wide as its longest cell
    or its heading plus two, a line of dashes), built here because tabulate's per-cell type
    detection took 70% of `status` on 100,000 associations. -P (`parsable`): sshare -P's form,
    every field delimited by |, no padding, the field names as the header line. `header=False`
    (-n) leaves the header lines out."""
    table = rows if isinstance(rows, StatusTable) else StatusTable.from_rows(rows)
    if parsable:
        cols = [_cells(table, f, parsable, tree) for f in fields]
        if header:
            yield "|".join(f.name for f in fields)
        yield from map("|".join, zip(*cols))
        return
    cols, widths, convs = [], [], []
    for f in fields:
        inline = _inline_number(table, f, tree)
        if inline is None:  # texts: %s, padded
            c = _cells(table, f, parsable, tree)
            cols.append(c)
            widths.append(max(len(f.header) + 2, max(map(len, c), default=0)))
            convs.append("s")
        else:  # the numbers themselves, converted by the line's own %-format
            conv, w = inline
            cols.append(table.column(f.key))
            widths.append(max(len(f.header) + 2, w))
            convs.append(conv)
    last = len(fields) - 1
    # one %-format a line pads every cell (right: %Ws, left: %-Ws, a left last column unpadded)
    specs = [f"%{w}{cv}" if f.right else (f"%-{w}{cv}" if i < last else f"%{cv}")
             for i, (f, w, cv) in enumerate(zip(fields, widths, convs))]
    if header:
        yield "  ".join(f.header.rjust(w) if f.right else (f.header.ljust(w) if i < last else f.header)
                        for i, (f, w) in enumerate(zip(fields, widths)))
        yield "  ".join("-" * w for w in widths)
    lines = map("  ".join(specs).__mod__, zip(*cols))
    yield from (map(str.rstrip, lines) if tree else lines)  # an account row's blank last cells


_TABLE = "\0fscontrol-table\0"


def json_chunks(data: dict) -> Iterator[str]:
    """json.dumps(data, indent=2) with data["table"] as its rows, the same text, in pieces: the
    table's rows are made and encoded one at a time from its columns (report.table.StatusTable),
    never all held as dicts nor as one string (issue #31: at 100,000 associations the rows and
    the whole text took ~440 MiB)."""
    table = data.get("table")
    if not hasattr(table, "columns"):
        yield json.dumps(data, indent=2)
        return
    head = json.dumps({**data, "table": _TABLE}, indent=2)
    before, after = head.split(json.dumps(_TABLE), 1)
    yield before
    n = len(table)
    if not n:
        yield "[]"
    else:
        # each column's values encoded at once (as json.dumps encodes them), then each row made
        # by one format of its cells (the keys written once, in the format)
        columns = list(table.columns.values())
        row = "    {\n" + ",\n".join("      " + json.dumps(k).replace("%", "%%") + ": %s"
                                         for k in table.columns) + "\n    }"
        yield "[\n"
        step = 1024  # rows a piece: memory bounded by it, not by the table
        for i in range(0, n, step):
            rows = map(row.__mod__, zip(*[_encoded(vals[i:i + step]) for vals in columns]))
            yield ",\n".join(rows) + (",\n" if i + step < n else "\n  ]")
    yield after


_SCALARS = frozenset((str, int, float, bool, type(None)))
_FLOAT = {float}
_BOOLS = frozenset((bool, type(None)))
_BOOL_TEXT = {True: "true", False: "false", None: "null"}
_NUMBERS = frozenset((int, float, bool, type(None)))


def _numbers(values: list, types: set) -> list[str] | None:
    """JSON texts of a column of numbers (None and bools among them) by orjson, one C call (~25 ns
    a float where Python's repr takes ~250: float repr was half of `status --json` at 100,000
    associations, issue #31). A float is orjson's shortest round-trip digits, the same digits and
    the same value as json.dumps's; only where Python's repr writes an exponent (below 1e-4, from
    1e16) orjson may write it another way ("1.5e-7" for "1.5e-07", "0.00005" for "5e-05"): the
    same number to any JSON reader. None where orjson cannot give json.dumps's meaning: without
    orjson installed, a NaN or an infinity (orjson writes null; json.dumps NaN/Infinity, which
    the column keeps), an int beyond 64 bits."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - a dependency; json's encoder then
        return None
    try:
        text = orjson.dumps(values)
    except TypeError:  # an int beyond 64 bits (orjson.JSONEncodeError)
        return None
    if float in types and text.count(b"null") != values.count(None):  # a NaN or an infinity: json's text
        return None
    return text.decode()[1:-1].split(",")
_NUL_LIST = json.JSONEncoder(separators=("\0", ":"), check_circular=False)
_NEGATIVE_ZERO = -(1 << 63)  # -0.0's bits read as a signed 64-bit integer


def _encoded(values: list) -> list[str]:
    """json.dumps(v) of each value of a column (the scalars the table holds by their own
    encoders; anything else through json.dumps with the rows' indentation).

    A column of scalars alone (the usual) is encoded by json's C encoder in one call, the values
    parted by NUL: json.dumps writes a NUL inside a string as \\u0000 (ensure_ascii), so a raw
    NUL is only ever the separator; the same text a value as json.dumps(v) (issue #31: a call a
    cell was most of `status --json` at 100,000 associations). A column of floats whose first
    rows repeat a few values: each distinct value encoded once (_few_floats)."""
    if values:
        types = set(map(type, values))
        if types == _FLOAT and len(set(values[:512])) * 8 <= len(values[:512]):
            return _few_floats(values)
        if types <= _BOOLS:  # true/false/null by a look-up
            return list(map(_BOOL_TEXT.__getitem__, values))
        if types <= _NUMBERS:
            fast = _numbers(values, types)
            if fast is not None:
                return fast
        if types <= _SCALARS:
            return _NUL_LIST.encode(values)[1:-1].split("\0")
    from json.encoder import encode_basestring_ascii as text

    def one(v) -> str:
        if v is None:
            return "null"
        if v is True:
            return "true"
        if v is False:
            return "false"
        t = type(v)
        if t is str:
            return text(v)
        if t is int:
            return int.__repr__(v)
        if t is float:
            return float.__repr__(v) if v == v and v not in (math.inf, -math.inf) else json.dumps(v)
        return json.dumps(v, indent=2).replace("\n", "\n      ")

    return [one(v) for v in values]


def _few_floats(values: list[float]) -> list[str]:
    """json.dumps(v) of each of a column of floats, each distinct value's text made once.

    Float repr (the shortest text that reads back the same) was most of what was left of `status
    --json` at 100,000 associations (issue #31), and some columns hold a few values: NormShares is
    one value for all the users of an account (4 values in 93,000 rows of the synthetic site: 64
    ms of repr -> 5). The distinct values are encoded in one call, and each value takes its text
    by a look-up (a NaN is its own key: a dict finds a key by identity first). -0.0 equals 0.0
    and would take its text: a column holding -0.0 (seen in the values' bits) is encoded whole,
    and so is one with more than a quarter of its values distinct (there the hashing costs what
    the repr saves: measured at 40% distinct)."""
    distinct = set(values)
    if len(distinct) * 4 > len(values) or (0.0 in distinct and _NEGATIVE_ZERO in array("q", array("d", values).tobytes())):
        return _NUL_LIST.encode(values)[1:-1].split("\0")
    keys = list(distinct)
    text = dict(zip(keys, _NUL_LIST.encode(keys)[1:-1].split("\0")))
    return list(map(text.__getitem__, values))
