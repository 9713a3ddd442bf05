"""Hypothesis strategies that turn a valid input into a malformed one: documents, tables and raw text.

Each strategy starts from a *valid* seed (so most examples get past the first check and reach the deeper ones)
and applies one to three mutations drawn from what a hostile or careless user produces: a hostile value at a
random place (NaN and infinities spelled every way, 1e308, 1e21, negative and huge integers, 4300-digit
numbers, empty strings, wrong types, names that other parsers read: matplotlib's mathtext, rich's markup,
HTML), deleted or extra keys and columns, duplicated rows and list items, nesting 30 to 300 levels deep, and
byte-level damage (truncation, a stray quote, NUL, a BOM, invalid UTF-8).
"""

from __future__ import annotations

import copy
import csv
import io
import json
from typing import Any

import yaml
from hypothesis import strategies as st

# Names that other parsers read: matplotlib's mathtext, rich's markup, HTML, format strings, a lone backslash.
TEXT_FOR_PARSERS = [r"$x\frac$", "$", "[/]", "[bold]x", "_x", "<script>x</script>", "{0}", "%s", "\\"]
HOSTILE_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    2**31,
    2**63,
    10**30,
    -(10**30),
    1e308,
    -1e308,
    1e-308,
    0.5,
    -0.0,
    1e10,
    1e21,
    "",
    " ",
    "x",
    "-1",
    "nan",
    "inf",
    "1e308",
    "\x00",
    "A" * 3000,
    [],
    {},
    [[]],
    {"": None},
    [1, 2, 3],
    {"a": {"b": {"c": 1}}},
    *TEXT_FOR_PARSERS,
]
HOSTILE_CELLS = [
    "",
    " ",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "Infinity",
    "1e308",
    "-1e308",
    "1e309",
    "1e21",
    "1e300",
    "-1",
    "0",
    "-0",
    "0.0",
    "1e-320",
    "4294967296",
    "99999999999999999999999",
    "1.5",
    "abc",
    '"',
    "a,b",
    "\t",
    "１２",
    "0x1F",
    "1_000",
    "x" * 300,
    "9" * 5000,
    *TEXT_FOR_PARSERS,
]
INSERTED_BYTES = [b"\x00", b"\xff", b'"', b"\n", b",", b"\t", b"{", b"[", b"}", b"]", b"\r", b"\xef\xbb\xbf", b"#"]


def _hostile(draw) -> Any:
    """A hostile value, copied: a drawn list or dict may be mutated later and must not change the pool."""
    return copy.deepcopy(draw(st.sampled_from(HOSTILE_VALUES)))


def _containers(node: Any, path: tuple = ()) -> list[tuple]:
    """Paths to every container of ``node`` (iteratively; documents are small)."""
    out, stack = [], [(node, path)]
    while stack:
        cur, p = stack.pop()
        if isinstance(cur, (dict, list)):
            out.append(p)
            items = cur.items() if isinstance(cur, dict) else enumerate(cur)
            stack.extend((v, (*p, k)) for k, v in items)
    return out


def _at(node: Any, path: tuple) -> Any:
    for key in path:
        node = node[key]
    return node


@st.composite
def mutated_document(draw, seed: Any, *, max_mutations: int = 3) -> Any:
    """``seed`` (JSON-like) with 1-3 structural mutations."""
    doc = json.loads(json.dumps(seed))
    for _ in range(draw(st.integers(1, max_mutations))):
        paths = _containers(doc)
        if not paths:
            return _hostile(draw)
        path = draw(st.sampled_from(paths))
        node = _at(doc, path)
        op = draw(st.sampled_from(["replace", "replace", "replace", "delete", "add", "duplicate", "nest", "retype"]))
        keys = list(node.keys()) if isinstance(node, dict) else list(range(len(node)))
        if op == "replace" and keys:
            node[draw(st.sampled_from(keys))] = _hostile(draw)
        elif op == "delete" and keys:
            del node[draw(st.sampled_from(keys))]
        elif op == "add":
            value = _hostile(draw)
            if isinstance(node, dict):
                node[draw(st.sampled_from(["x", "", "extra", "1", "tok", *map(str, keys)]))] = value
            else:
                node.insert(draw(st.integers(0, len(node))), value)
        elif op == "duplicate" and isinstance(node, list) and node:
            item = node[draw(st.integers(0, len(node) - 1))]
            node.extend(json.loads(json.dumps(item)) for _ in range(draw(st.sampled_from([1, 5, 60]))))
        elif op == "nest" and keys:
            depth = draw(st.sampled_from([30, 70, 300]))
            value: Any = draw(st.sampled_from([1, "x", None]))
            for _ in range(depth):
                value = [value]
            node[draw(st.sampled_from(keys))] = value
        elif op == "retype" and keys:
            key = draw(st.sampled_from(keys))
            node[key] = draw(st.sampled_from([str(node[key]), [node[key]], {"v": node[key]}, float("nan")]))
    return doc


def dump_json(doc: Any) -> bytes:
    """JSON as a user's tool might write it: ``NaN``/``Infinity`` included (they are not JSON)."""
    return json.dumps(doc, allow_nan=True).encode("utf-8")


def dump_yaml(doc: Any) -> bytes:
    try:
        return yaml.safe_dump(doc, sort_keys=False).encode("utf-8")
    except (yaml.YAMLError, RecursionError):
        return json.dumps(doc, allow_nan=True).encode("utf-8")


@st.composite
def mutated_table(
    draw, header: list[str], rows: list[list[str]], *, max_mutations: int = 3, delimiter: str = ","
) -> bytes:
    """A CSV table (``header`` + ``rows``) with 1-3 cell, row or column mutations, written with csv quoting
    (``delimiter``: tab for Gavel's traces; an empty header writes the rows only)."""
    table = [list(header), *(list(r) for r in rows)] if header else [list(r) for r in rows]
    for _ in range(draw(st.integers(1, max_mutations))):
        op = draw(st.sampled_from(["cell", "cell", "cell", "short", "long", "duprow", "dropcol", "rename", "blank"]))
        r = draw(st.integers(1, len(table) - 1)) if len(table) > 1 else 0
        row = table[r]
        if op == "cell" and row:
            row[draw(st.integers(0, len(row) - 1))] = draw(st.sampled_from(HOSTILE_CELLS))
        elif op == "short" and row:
            row.pop()
        elif op == "long":
            row.append(draw(st.sampled_from(HOSTILE_CELLS)))
        elif op == "duprow":
            table.extend(list(row) for _ in range(draw(st.sampled_from([1, 10, 300]))))
        elif op == "dropcol" and table[0]:
            c = draw(st.integers(0, len(table[0]) - 1))
            for line in table:
                if c < len(line):
                    line.pop(c)
        elif op == "rename" and table[0]:
            table[0][draw(st.integers(0, len(table[0]) - 1))] = draw(st.sampled_from(["", "x", "1", "0", "-1", "9999"]))
        elif op == "blank":
            table.insert(r, [])
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n", delimiter=delimiter)
    for line in table:
        writer.writerow(line)
    return buffer.getvalue().encode("utf-8")


@st.composite
def damaged_bytes(draw, data: bytes) -> bytes:
    """``data`` with byte-level damage: truncated, a byte inserted, a BOM, CRLF, emptied or replaced by garbage."""
    op = draw(st.sampled_from(["truncate", "insert", "insert", "bom", "crlf", "empty", "garbage"]))
    if op == "truncate" and data:
        return data[: draw(st.integers(0, len(data) - 1))]
    if op == "insert":
        at = draw(st.integers(0, len(data)))
        return data[:at] + draw(st.sampled_from(INSERTED_BYTES)) + data[at:]
    if op == "bom":
        return b"\xef\xbb\xbf" + data
    if op == "crlf":
        return data.replace(b"\n", b"\r\n")
    if op == "empty":
        return b""
    return draw(st.binary(min_size=1, max_size=200))


def document_bytes(seed: Any, *, as_yaml: bool = False) -> st.SearchStrategy[bytes]:
    """A mutated document serialised (JSON or YAML), sometimes damaged after serialising."""
    dump = dump_yaml if as_yaml else dump_json
    docs = mutated_document(seed).map(dump)
    return st.one_of(docs, docs, docs, docs.flatmap(damaged_bytes))


def table_bytes(header: list[str], rows: list[list[str]], delimiter: str = ",") -> st.SearchStrategy[bytes]:
    tables = mutated_table(header, rows, delimiter=delimiter)
    return st.one_of(tables, tables, tables, tables.flatmap(damaged_bytes))
