"""Seeds: a small CSV file in the project becomes a Delta table, written by the managed write.

Every ``*.csv`` file under the project folder (recursively, sorted, hidden folders skipped, as
the SQL files) is a seed. Optional ``-- `` lines at its top say where it goes and how; the
first other line is the CSV header (the column names), the rest its rows::

    -- seed delta://ref/countries key=code
    -- column population BIGINT
    -- description ISO 3166 countries, by hand.
    code,name,population,joined
    FR,France,68000000,1958-01-01
    DE,Germany,84000000,1958-01-01

- ``-- seed delta://<schema>/<table> [key=a,b]``: the table (default ``delta://seeds/<file
  name>``); with ``key=``, a merge on the key (rows removed from the file stay in the table),
  else a replace of the whole table.
- ``-- column <name> <TYPE>``: a column's type; each other column's type is inferred from its
  values (:func:`infer_type`). Types: ``STRING``, ``BOOLEAN``, ``INT``, ``BIGINT``, ``DOUBLE``,
  ``DECIMAL(p,s)``, ``DATE``, ``TIMESTAMP``.
- ``-- description <text>``: the asset's description.

An empty cell is NULL. A ``TIMESTAMP`` cell (``2024-01-02 09:30:00``, no offset) is a wall time
in the Spark session's zone (``spark.sql.session.timeZone``, UTC by default), never in the zone
of the machine that runs it. The asset's code version is a hash of the file, so a changed file makes
the table stale. Every problem (a ragged row, a value that is not of its column's type, a NULL
or repeated key, a bad name) is located at ``path:line:col`` when the project loads, so
``assetlake validate`` reports it too, and nothing is written.

The rows are parsed into Python values here, at load time; the asset hands them to Spark with
the declared schema (no value is ever spliced into SQL).
"""

import csv
import datetime as dt
import decimal
import hashlib
import io
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Optional

import dagster as dg

from assetlake_dagster.project.dag import table_key
from assetlake_dagster.errors import Diagnostic, SourceText
from assetlake_dagster.project.folder import decode_utf8, discover_files, escaping_link, outside, read_bytes
from assetlake_dagster.project.python_assets import PythonTable
from assetlake_dagster.spec import RESERVED_COLUMNS, TableUri, is_identifier, quote_identifier

SEED_SUFFIX = ".csv"
DEFAULT_SEED_SCHEMA = "seeds"
_MAX_SEED_BYTES = 10 * 1024 * 1024
_HINT_TYPES = "Use STRING, BOOLEAN, INT, BIGINT, DOUBLE, DECIMAL(p,s), DATE or TIMESTAMP."
_DECIMAL_RE = re.compile(r"^DECIMAL\((\d+),\s*(\d+)\)$")
_INTEGER_RE = re.compile(r"^[+-]?\d+$")
_NUMBER_RE = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIMESTAMP_RE = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?$")
_INT_RANGE = {"INT": 2**31, "BIGINT": 2**63}


@dataclass(frozen=True)
class SeedSpec:
    """One seed file, parsed and checked.

    Attributes:
        path: the CSV file.
        uri: the Delta table it writes.
        key: the merge key (empty: the file replaces the table).
        columns: ``(name, type)`` per column, in file order.
        rows: the rows as Python values of their column's type (``None``: NULL).
        code_version: a hash of the file's bytes.
        description: the ``-- description`` line, if any.
    """

    path: str
    uri: TableUri
    key: tuple[str, ...]
    columns: tuple[tuple[str, str], ...]
    rows: tuple[tuple[Any, ...], ...]
    code_version: str
    description: Optional[str] = None

    @property
    def strategy(self) -> str:
        return "merge" if self.key else "replace"

    @property
    def ddl(self) -> str:
        """The Spark schema as DDL (every name is an allow-listed identifier).

        Example:
            >>> SeedSpec("c.csv", TableUri("ref", "c"), (), (("code", "STRING"), ("n", "BIGINT")), (), "x").ddl
            '`code` STRING, `n` BIGINT'
        """
        return ", ".join(f"{quote_identifier(name)} {kind}" for name, kind in self.columns)


def discover_seed_files(root: str) -> list[str]:
    """Every ``*.csv`` file under ``root``, recursively, sorted; hidden folders skipped."""
    return discover_files(root, SEED_SUFFIX)


def load_seeds(root: str) -> tuple[list[SeedSpec], list[Diagnostic]]:
    """Parse every seed file under ``root``; the specs of the good ones and every problem.

    A file that resolves outside ``root`` (a symlink) or is not a regular file is refused.
    """
    seeds: list[SeedSpec] = []
    problems: list[Diagnostic] = []
    real_root = os.path.realpath(root)
    for path in discover_seed_files(root):
        spec, found = read_seed(path) if not outside(path, real_root) else (None, [escaping_link(path)])
        problems.extend(found)
        if spec is not None:
            seeds.append(spec)
    return seeds, problems


def read_seed(path: str) -> tuple[Optional[SeedSpec], list[Diagnostic]]:
    """Read and parse one seed file (see :func:`parse_seed`); UTF-8, a byte-order mark allowed."""
    size = os.path.getsize(path) if os.path.isfile(path) else 0
    if size > _MAX_SEED_BYTES:
        return None, [Diagnostic(SourceText.of(path, "").location(1), f"the seed is {size} bytes, more than a seed's "
                                 f"{_MAX_SEED_BYTES // (1024 * 1024)} MB.",
                                 "Seeds are for small reference data; load a bigger file with a Python asset.")]
    data, problem = read_bytes(path, "a seed (CSV)")
    if data is None:
        return None, [problem]
    text, problem = decode_utf8(path, data.removeprefix(b"\xef\xbb\xbf"))
    if problem is not None:
        return None, [problem]
    return parse_seed(path, text, code_version=hashlib.sha256(data).hexdigest()[:16])


def parse_seed(path: str, text: str, code_version: str = "") -> tuple[Optional[SeedSpec], list[Diagnostic]]:
    """Parse a seed file's text: its ``-- `` lines, its CSV header and rows, typed.

    Example:
        >>> spec, problems = parse_seed("ref/countries.csv", "-- seed delta://ref/countries key=code\\ncode,pop\\nFR,68\\n")
        >>> str(spec.uri), spec.key, spec.columns, spec.rows, problems
        ('delta://ref/countries', ('code',), (('code', 'STRING'), ('pop', 'BIGINT')), (('FR', 68),), [])
    """
    src = SourceText.of(path, text.replace("\r\n", "\n"))
    problems: list[Diagnostic] = []
    header = _SeedHeader.parse(src, problems)
    uri = header.uri if header.declared else _default_uri(path, src, problems)
    body_start = header.body_start
    records = _records(src, body_start, problems)
    if not records:
        if not problems:
            problems.append(src.diagnostic(body_start, 1, "the seed has no header row (the column names).",
                                           "Put the column names on the first line after the '-- ' lines."))
        return None, problems
    (names_line, names), rows = records[0], records[1:]
    _check_names(src, names_line, names, problems)
    width = len(names)
    for line, values in rows:
        if len(values) != width:
            problems.append(src.diagnostic(line, 1, f"the row has {len(values)} field{'s' if len(values) != 1 else ''}, the header has {width}.",
                                           "Give every row one value per column (an empty value is NULL); "
                                           "quote values that hold a comma.", span=len(src.line(line)) or 1))
    good_rows = [(line, values) for line, values in rows if len(values) == width]
    for name, (line, col) in header.types.items():
        if name not in names:
            problems.append(src.diagnostic(line, col, f"'{name}' is not a column of the seed ({', '.join(names)}).",
                                           "Name a column of the header row.", span=len(name)))
    for name, (line, col) in header.key.items():
        if name not in names:
            problems.append(src.diagnostic(line, col, f"key column '{name}' is not a column of the seed "
                                           f"({', '.join(names)}).", "Name a column of the header row.", span=len(name)))
    columns = []
    typed_columns: list[list[Any]] = []
    for index, name in enumerate(names):
        kind = header.type_names.get(name) or infer_type([v[index] for _, v in good_rows])
        columns.append((name, kind))
        typed_columns.append(_typed_column(src, name, index, kind, good_rows, problems))
    typed_rows = [tuple(col[i] for col in typed_columns) for i in range(len(good_rows))]
    key = tuple(name for name in header.key if name in names)
    if key and len(key) == len(header.key):
        _check_keys(src, names, key, good_rows, typed_rows, problems)
    if problems or uri is None:
        return None, problems
    return SeedSpec(path, uri, key, tuple(columns), tuple(typed_rows), code_version, header.description), []


def seed_tables(seeds: Sequence[SeedSpec]) -> list[PythonTable]:
    """The table each seed writes, under its asset key ``[schema, table]``."""
    return [PythonTable(seed.uri, dg.AssetKey(seed.uri.asset_key_path), seed.path, kind="seed") for seed in seeds]


def seed_conflicts(seeds: Sequence[SeedSpec], python: Sequence[PythonTable]) -> list[Diagnostic]:
    """A table that a seed writes and another seed or a Python asset writes too, located in
    the (later) seed file. A SQL file writing a seed's table is reported at the SQL file
    (:func:`~assetlake_dagster.project.dag.check_project`)."""
    seen = {table_key(t.uri): t for t in python}
    problems = []
    for seed, table in zip(seeds, seed_tables(seeds)):
        name = table_key(seed.uri)
        if name in seen:
            problems.append(SourceText.of(seed.path, "").diagnostic(
                1, 1, f"{seed.uri} is also produced by {seen[name].describe()}.",
                "A table has exactly one producer: name another table with '-- seed delta://<schema>/<table>'."))
        else:
            seen[name] = table
    return problems


def infer_type(values: Sequence[str]) -> str:
    """The narrowest type all non-empty ``values`` parse as: ``BOOLEAN`` (true/false, any
    case), ``BIGINT``, ``DOUBLE``, ``DATE`` (``YYYY-MM-DD``), ``TIMESTAMP`` (``YYYY-MM-DD
    HH:MM[:SS[.ffffff]]``, a ``T`` allowed), else ``STRING``; ``STRING`` when all are empty.

    Example:
        >>> infer_type(["1", "", "-3"]), infer_type(["1", "2.5"]), infer_type(["2024-01-31"]), infer_type(["x", "1"])
        ('BIGINT', 'DOUBLE', 'DATE', 'STRING')
    """
    present = [v for v in values if v != ""]
    if not present:
        return "STRING"
    for kind in ("BOOLEAN", "BIGINT", "DOUBLE", "DATE", "TIMESTAMP"):
        if all(_parse(kind, v) is not _BAD for v in present):
            return kind
    return "STRING"


_BAD = object()


def _parse(kind: str, value: str) -> Any:
    """``value`` as a Python value of ``kind``, or ``_BAD``."""
    if kind == "STRING":
        return value
    text = value.strip()
    if kind == "BOOLEAN":
        return {"true": True, "false": False}.get(text.lower(), _BAD)
    if kind in _INT_RANGE:
        if not _INTEGER_RE.match(text):
            return _BAD
        number = int(text)
        return number if -_INT_RANGE[kind] <= number < _INT_RANGE[kind] else _BAD
    if kind == "DOUBLE":
        return float(text) if _NUMBER_RE.match(text) else _BAD
    if kind == "DATE":
        return _or_bad(dt.date.fromisoformat, text) if _DATE_RE.match(text) else _BAD
    if kind == "TIMESTAMP":
        return _or_bad(dt.datetime.fromisoformat, text) if _TIMESTAMP_RE.match(text) else _BAD
    match = _DECIMAL_RE.match(kind)
    if match and _NUMBER_RE.match(text):
        precision, scale = int(match.group(1)), int(match.group(2))
        number = decimal.Decimal(text)
        quantized = number.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_EVEN)
        digits = len(quantized.as_tuple().digits) if quantized else 1
        return quantized if quantized == number and digits <= precision else _BAD
    return _BAD


def _or_bad(parse: Callable[[str], Any], text: str) -> Any:
    try:
        return parse(text)
    except ValueError:
        return _BAD


def _normal_type(text: str) -> Optional[str]:
    upper = re.sub(r"\s+", "", text.upper())
    if upper in ("STRING", "BOOLEAN", "INT", "BIGINT", "DOUBLE", "DATE", "TIMESTAMP"):
        return upper
    match = _DECIMAL_RE.match(upper)
    if match and 0 < int(match.group(1)) <= 38 and int(match.group(2)) <= int(match.group(1)):
        return f"DECIMAL({match.group(1)},{match.group(2)})"
    return None


@dataclass
class _SeedHeader:
    """The ``-- `` lines at a seed's top."""

    declared: bool  # a '-- seed' line names the table (valid or not)
    uri: Optional[TableUri]
    key: dict[str, tuple[int, int]]  # name -> (line, col)
    types: dict[str, tuple[int, int]]
    type_names: dict[str, str]
    description: Optional[str]
    body_start: int

    @classmethod
    def parse(cls, src: SourceText, problems: list[Diagnostic]) -> "_SeedHeader":
        header = cls(False, None, {}, {}, {}, None, 1)
        number = 1
        while number <= len(src.lines) and src.line(number).startswith("--"):
            header._line(src, number, problems)
            number += 1
        header.body_start = number
        return header

    def _line(self, src: SourceText, number: int, problems: list[Diagnostic]) -> None:
        text = src.line(number)
        words = [(m.group(), m.start() + 1) for m in re.finditer(r"\S+", text[2:])]
        words = [(w, col + 2) for w, col in words]
        if not words:
            return
        keyword, col = words[0]
        rest = words[1:]
        if keyword == "seed":
            self.declared = True
            self._seed_line(src, number, col, rest, problems)
        elif keyword == "column":
            if len(rest) < 2 or (kind := _normal_type(" ".join(w for w, _ in rest[1:]))) is None:
                where = rest[1][1] if len(rest) > 1 else col
                problems.append(src.diagnostic(number, where, "expected '-- column <name> <TYPE>'.", _HINT_TYPES))
                return
            name, name_col = rest[0]
            self.types[name] = (number, name_col)
            self.type_names[name] = kind
        elif keyword == "description":
            self.description = text[2:].strip()[len("description"):].strip() or None
        else:
            problems.append(src.diagnostic(number, col, f"unknown seed line '-- {keyword}'.",
                                           "A seed's '-- ' lines are 'seed', 'column' and 'description'.",
                                           span=len(keyword)))

    def _seed_line(self, src: SourceText, number: int, col: int, rest: list, problems: list[Diagnostic]) -> None:
        if not rest:
            problems.append(src.diagnostic(number, col, "expected '-- seed delta://<schema>/<table> [key=a,b]'.",
                                           "Name the table, or remove the line for delta://seeds/<file name>."))
            return
        target, target_col = rest[0]
        try:
            self.uri = TableUri.parse(target)
        except ValueError as err:
            problems.append(src.diagnostic(number, target_col, f"{err}.", "Name the table as delta://<schema>/<table>.",
                                           span=len(target)))
        for word, word_col in rest[1:]:
            if not word.startswith("key="):
                problems.append(src.diagnostic(number, word_col, f"unknown seed option '{word}'.",
                                               "The option is key=<col>[,<col>…].", span=len(word)))
                continue
            offset = word_col + len("key=")
            for name in word[len("key="):].split(","):
                if not is_identifier(name):
                    problems.append(src.diagnostic(number, offset, f"'{name}' is not a column name.",
                                                   "Use letters, digits and underscores.", span=max(1, len(name))))
                self.key[name] = (number, offset)
                offset += len(name) + 1


def _default_uri(path: str, src: SourceText, problems: list[Diagnostic]) -> Optional[TableUri]:
    stem = os.path.basename(path)[: -len(SEED_SUFFIX)]
    if is_identifier(stem):
        return TableUri(DEFAULT_SEED_SCHEMA, stem)
    problems.append(src.diagnostic(1, 1, f"the file name '{stem}' is not a table name, and no '-- seed' line names "
                                   "the table.", "Add '-- seed delta://<schema>/<table>' as the first line, or rename "
                                   "the file (letters, digits and underscores)."))
    return None


def _records(src: SourceText, start: int, problems: list[Diagnostic]) -> list[tuple[int, list[str]]]:
    """The CSV records from line ``start`` on, each with its first line; blank lines skipped."""
    body = "\n".join(src.lines[start - 1:])
    reader = csv.reader(io.StringIO(body, newline=""), strict=True)
    records = []
    line = start
    try:
        for values in reader:
            first = line
            line = start + reader.line_num
            if values and any(v != "" for v in values) or len(values) > 1:
                records.append((first, values))
    except csv.Error as err:
        problems.append(src.diagnostic(start + reader.line_num - 1, 1, f"the CSV cannot be read: {err}.",
                                       "Close every quoted value, and double a quote inside one (\"\")."))
    return records


def _check_names(src: SourceText, line: int, names: list[str], problems: list[Diagnostic]) -> None:
    seen: dict[str, str] = {}
    for index, name in enumerate(names):
        col = _field_col(src.line(line), index)
        if not is_identifier(name):
            problems.append(src.diagnostic(line, col, f"column name '{name}' is not a plain identifier.",
                                           "Use letters, digits and underscores, not starting with a digit.",
                                           span=max(1, len(name))))
        elif name.lower() in RESERVED_COLUMNS:
            problems.append(src.diagnostic(line, col, f"column name '{name}' is reserved (managed by assetlake).",
                                           "Rename the column.", span=len(name)))
        elif name.lower() in seen:
            problems.append(src.diagnostic(line, col, f"columns '{seen[name.lower()]}' and '{name}' collide (Delta "
                                           "column names are case-insensitive).", "Rename one of them.",
                                           span=len(name)))
        seen.setdefault(name.lower(), name)


def _typed_column(src: SourceText, name: str, index: int, kind: str,
                  rows: list[tuple[int, list[str]]], problems: list[Diagnostic]) -> list[Any]:
    values = []
    for line, row in rows:
        raw = row[index]
        value = None if raw == "" else _parse(kind, raw)
        if value is _BAD:
            problems.append(src.diagnostic(line, _field_col(src.line(line), index),
                                           f"'{raw}' in column '{name}' is not of type {kind}.",
                                           f"Fix the value, or declare the column's type: '-- column {name} STRING'.",
                                           span=max(1, len(raw))))
            value = None
        values.append(value)
    return values


def _check_keys(src: SourceText, names: list[str], key: tuple[str, ...], rows: list[tuple[int, list[str]]],
                typed: list[tuple[Any, ...]], problems: list[Diagnostic]) -> None:
    positions = [names.index(k) for k in key]
    first_line: dict[tuple, int] = {}
    for (line, _), row in zip(rows, typed):
        value = tuple(row[i] for i in positions)
        if any(v is None for v in value):
            missing = key[[v is None for v in value].index(True)]
            problems.append(src.diagnostic(line, _field_col(src.line(line), names.index(missing)),
                                           f"the key column '{missing}' is empty (NULL).",
                                           "Every row of a keyed seed needs its key."))
        elif value in first_line:
            problems.append(src.diagnostic(line, _field_col(src.line(line), positions[0]),
                                           f"the key ({', '.join(key)}) = {value if len(value) > 1 else value[0]!r} "
                                           f"repeats the row at line {first_line[value]}.",
                                           "Each key appears once; remove or merge the rows."))
        else:
            first_line[value] = line


def _field_col(line: str, index: int) -> int:
    """The 1-based column where field ``index`` of a one-line CSV record starts."""
    field, quoted = 0, False
    for position, char in enumerate(line):
        if field == index:
            return position + 1
        if char == '"':
            quoted = not quoted
        elif char == "," and not quoted:
            field += 1
    return len(line) + 1 if field == index else 1  # an empty last field, or a record over several lines
