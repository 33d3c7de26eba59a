"""`scontrol show config --json` (Slurm 26.05 and later) read into the text's `Key = Value` pairs.

Slurm 26.05 added a JSON form of `scontrol show config` (data_parser v0.0.45: {"slurm_conf": {...},
"slurm_conf_meta": {...}, "meta": {...}, "errors": [...], "warnings": [...]}). Its keys are the text's
keys; this module turns each value into the string the text prints for it, so that one reader
(parse.parse_config) serves both forms and every caller sees the same `raw` pairs:

- lists ("AccountingStorageEnforce": ["associations", "limits", "qos"]) -> "associations,limits,qos";
  an empty list -> "" (parse reads "", "(null)" and "none" alike as empty);
- booleans -> "yes" / "no" (the text prints PriorityFavorSmall = no);
- numbers -> their decimal text; {"set", "infinite", "number"} -> the number, "INFINITE" or "N/A";
- PriorityFlags: the JSON lists the FAIR_TREE *bit* (set under Fair Tree, absent under classic),
  where the text prints NO_FAIR_TREE for classic and nothing for Fair Tree (priority_flags_string in
  slurm_protocol_defs.c). Recorded on the testbed: classic prints `PriorityFlags = NO_FAIR_TREE` in
  the text and `"PriorityFlags": []` in the JSON. Read as is, the JSON would make a classic cluster
  look like Fair Tree; the flags are rebuilt in the text's words and order;
- SLURM_VERSION and BOOT_TIME come from "slurm_conf_meta" (BOOT_TIME as the text's local ISO time
  is not needed by fscontrol: it stays the POSIX seconds the JSON gives).

The JSON is asked for where it exists (source.LiveSlurm.config); 24.11 prints the text for
`scontrol --json show config` and 22.05 refuses the option, and the text stays the fallback.
"""

from __future__ import annotations

import json
from typing import Any

from fscontrol.errors import ParseError

# priority_flags_string()'s order (Slurm 26.05, src/common/slurm_protocol_defs.c)
_FLAG_ORDER = ("ACCRUE_ALWAYS", "SMALL_RELATIVE_TO_TIME", "CALCULATE_RUNNING", "DEPTH_OBLIVIOUS", "NO_FAIR_TREE",
               "INCR_ONLY", "MAX_TRES", "MAX_TRES_GRES", "NO_NORMAL_ASSOC", "NO_NORMAL_PART", "NO_NORMAL_QOS",
               "NO_NORMAL_TRES")
# keys the JSON spells otherwise than the text (recorded on 26.05.5); both spellings are kept
_TEXT_NAMES = {"PriorityWeightFairshare": "PriorityWeightFairShare", "HashValue": "HASH_VAL",
               "SlurmctldHttpAuthParams": "SlurmctldHttpAuthParameters", "SlurmdHttpAuthParams": "SlurmdHttpAuthParameters"}
_NO_NORMAL = ("NO_NORMAL_ASSOC", "NO_NORMAL_PART", "NO_NORMAL_QOS", "NO_NORMAL_TRES")


def looks_like_json(text: str) -> bool:
    """True when `text` (after any `CLUSTER: name` line that -M adds) starts a JSON object."""
    return _strip_cluster_lines(text).lstrip().startswith("{")


def _strip_cluster_lines(text: str) -> str:
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines) and (lines[i].startswith("CLUSTER: ") or not lines[i].strip()):
        i += 1
    return "".join(lines[i:])


def priority_flags_text(flags: list[Any]) -> str:
    """The JSON's PriorityFlags list in the text's words: FAIR_TREE's bit -> NO_FAIR_TREE when absent."""
    have = {str(f).upper() for f in flags}
    words = [f for f in _FLAG_ORDER if f in have or (f == "NO_FAIR_TREE" and "FAIR_TREE" not in have)]
    if all(f in have for f in _NO_NORMAL):
        words = [w for w in words if w not in _NO_NORMAL] + ["NO_NORMAL_ALL"]
    # a flag a later release adds keeps its name (after the known ones)
    words += sorted(have - set(_FLAG_ORDER) - {"FAIR_TREE"})
    return ",".join(words)


def _text_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ",".join(_text_value(v) for v in value)
    if isinstance(value, dict):
        if "number" in value and ("set" in value or "infinite" in value):  # Slurm's optional number
            if value.get("infinite"):
                return "INFINITE"
            return _text_value(value["number"]) if value.get("set", True) else "N/A"
        return json.dumps(value, sort_keys=True)
    return str(value)


def config_pairs_from_json(text: str, command: str) -> dict[str, str]:
    """The `Key = Value` pairs of `scontrol show config` from its --json form (see the module doc).
    Raises ParseError on text that is not that JSON, or that reports errors."""
    try:
        doc = json.loads(_strip_cluster_lines(text))
    except json.JSONDecodeError as e:
        raise ParseError(command, f"not JSON at line {e.lineno}: {e.msg}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("slurm_conf"), dict):
        raise ParseError(command, "JSON without a slurm_conf object (not `scontrol show config --json`)")
    errors = doc.get("errors") or []
    if errors:
        first = errors[0]
        what = first.get("description") or first.get("error") if isinstance(first, dict) else str(first)
        raise ParseError(command, f"scontrol reported {len(errors)} error(s): {what}")
    pairs = {str(k): _text_value(v) for k, v in doc["slurm_conf"].items()}
    for json_key, text_key in _TEXT_NAMES.items():  # the few keys the text spells otherwise
        if json_key in pairs:
            pairs.setdefault(text_key, pairs[json_key])
    if "PriorityFlags" in doc["slurm_conf"]:
        raw_flags = doc["slurm_conf"]["PriorityFlags"]
        pairs["PriorityFlags"] = priority_flags_text(raw_flags if isinstance(raw_flags, list) else [raw_flags])
    meta = doc.get("slurm_conf_meta") if isinstance(doc.get("slurm_conf_meta"), dict) else {}
    for k, v in meta.items():
        pairs.setdefault(str(k), _text_value(v))
    if "SLURM_VERSION" not in pairs:
        release = ((doc.get("meta") or {}).get("slurm") or {}).get("release")
        if release:
            pairs["SLURM_VERSION"] = str(release)
    return pairs
