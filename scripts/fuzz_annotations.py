"""Fuzz the loader: generated and mutated annotated SQL files never crash or hang it.

Each input is one ``f.sql`` file in its own temporary folder, beside ``up.sql`` (a
partitioned table it may read), loaded the way ``assetlake validate`` loads it
(``load_project``) under a wall-clock timeout. Every outcome is classified:

- loaded: the folder loads cleanly;
- located: a ``ProjectError`` whose every message starts ``<path>:<line>:<col>: ``;
- traceback: any other exception (or an unlocated message);
- hang: the load took longer than ``--timeout-s``.

A clean load is also built into Dagster definitions (``build_definitions``, the code
location's path), with each partitions definition's first and last window and the
mapping of its first and last partitions to the upstream's, so that what validate
accepts does not crash later (``--no-build`` skips this).

With ``--run N``, the first N clean loads are also *run*: ``up.sql``'s first partition,
then ``f.sql``'s, materialized on a real local Spark + Delta (in-process), each in a lake
of its own. A run may succeed or fail with a data error (Spark refusing the SQL or the
data, or the product's own message: an audit, a key violation, a missing argument);
any other exception is a crash, and over ``--run-timeout-s`` a hang: both are findings.

Inputs, mixed: grammar-aware headers (well-formed annotation lines with edge-case
values, or keywords, options and hostile text: non-ASCII digits, control characters,
quotes, braces) over a few SQL bodies; character-level mutations of the demo's and the
tests' files; and, for 15% of them, byte-level edits (bit flips, invalid UTF-8, a BOM,
CR/NEL/LS line ends). Usage::

    python scripts/fuzz_annotations.py --files 3000 --seed 1 --timeout-s 10 [--run 200]

Prints ``fuzz: N files, L loaded, E located errors, T tracebacks, H hangs (seed S, X s)``
(and, with ``--run``, what the runs gave) and exits 1 when any traceback, crash or hang
was found, after saving the offending inputs (with the traceback) to a folder it names.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED_DIRS = (ROOT / "assetlake_dagster" / "demo" / "project", ROOT / "assetlake_dagster_tests" / "projects")

WORDS = [
    "materialize", "delta://a/b", "delta://s/t", "delta://", "delta://A/B", "key=id", "key=a,b", "history",
    "append", "manual", "track=a", "deletes=close", "partitioned", "daily", "hourly", "weekly", "monthly",
    "static", "dynamic", "start=2024-01-01", "start=1900-01-01", "start=2999-12-31", "start=0000-01-01",
    "end=2024-02-01", "end=2024-01-01T06:00", "tz=UTC", "tz=Europe/Berlin", "tz=America", "batch=3",
    "batch=²", "batch=0", "on", "window=7d", "window=24h", "data_test", "unique", "not_null",
    "accepted_values", "relationships", "->", "delta://s/t.c", "tests/x.sql", "warn", "error", "$n", "$d",
    "(int)", "(date)", "(float)", "(string)", "=", "a,b", "a,,b", "group", "owner", "tags", "k=v",
    "description", "kinds", "schedule", "0 2 * * *", "automation", "eager", "on_cron", "on_missing",
    "freshness", "fail=26h", "warn=24h", "warn=0m", "fail=1x", "cron", "lower_bound=1h", "lower_bound=2d",
    "{partition}", "'{partition}'", "{partition_end}", "{partitio_end}", "x", ",", "'", '"', "\\", "²",
    "１２", "٣", "\t", "\x01", "\x00", "\u200b", "\ufeff", "…", "...", "|", "[", "]", "(", ")", "{", "}",
]
BODIES = [
    "SELECT 1 AS x",
    "SELECT 1 AS x, 2 AS id",
    "SELECT 1 AS x, :n AS n",
    "SELECT x FROM s.t WHERE d >= {partition_start} AND d < {partition_end}",
    "SELECT id, name FROM s.t WHERE d = '{partition}'",
    "SELECT id FROM s.t WHERE d >= {partition_start} AND d < {partition_end}",
    "SET a = 1;\nSELECT * FROM s.t",
    "SELECT (((1))) AS x FROM s.t JOIN s.u",
    "SELECT :n AS n, :d AS d FROM s.t",
    "WITH c AS (SELECT 1 AS id) SELECT id FROM c",
    "SELECT map('a', 1) AS m, named_struct('k', 1) AS s, '{' AS brace",
    "INSERT INTO s.t VALUES (1)",
    "CREATE TABLE s.t AS SELECT 1 AS x;\nSELECT * FROM s.t",
    "",
]
HOSTILE = ["(" * 80, "JOIN s.u " * 30, "'", "/*", "--", "`", "\x00", "\r", "\u2028", "${x}", ";" * 5]
LOCATED_AT = r"^{folder}/(f|up)\.sql:\d+:\d+: "
#: Each folder also holds up.sql, a partitioned table that the generated files read
#: (``FROM s.t``, ``-- on delta://s/t window=…``, relationships), its kind cycling with the index.
UPSTREAM = "-- materialize delta://s/t\n-- partitioned {kind} start=2024-01-01\n\nSELECT 1 AS x, 2 AS id, 3 AS c\n"
UPSTREAM_KINDS = ("daily", "hourly", "weekly", "monthly")


def seed_files() -> list[str]:
    texts = []
    for folder in SEED_DIRS:
        for path in sorted(folder.rglob("*.sql")):
            try:
                texts.append(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
    return texts


def noise(rng: random.Random, size: int) -> str:
    pools = [
        lambda: chr(rng.randrange(32, 127)),
        lambda: chr(rng.randrange(0, 32)),
        lambda: chr(rng.randrange(0x80, 0x3000)),
        lambda: rng.choice(["²", "１", "٣", "\u200b", "\ufeff", "ß", "İ", "\u2028", "\x85"]),
    ]
    return "".join(rng.choice(pools)() for _ in range(size))


def _pick(rng: random.Random, name: str) -> str:
    return rng.choice(VALUES[name]) if rng.random() < 0.9 else noise(rng, rng.randrange(1, 6))


def template_line(rng: random.Random) -> str:
    """A well-formed annotation line whose values are drawn from edge cases."""
    kind = rng.choice(["daily", "hourly", "weekly", "monthly"])
    options = [f"start={_pick(rng, 'start')}"]
    for name in ("end", "tz", "batch"):
        if rng.random() < 0.4:
            options.append(f"{name}={_pick(rng, name)}")
    key = lambda: rng.choice(["a", "b", "x y", "ü", "日本", "'", '"', "\\", "$x", "{x}", noise(rng, 3)])  # noqa: E731
    return rng.choice(
        [
            f"-- partitioned {kind} " + " ".join(options),
            "-- partitioned static " + ",".join(key() for _ in range(rng.randrange(1, 5))),
            f"-- partitioned dynamic {rng.choice(['d', 'my_set', 'x-y', noise(rng, 3)])}",
            f"-- on delta://s/t window={_pick(rng, 'window')}",
            f"-- data_test {rng.choice(['unique', 'not_null'])} {rng.choice(['x', 'id', 'x,x', noise(rng, 2)])}",
            f"-- data_test accepted_values x = {rng.choice(['a,b', '1,2', noise(rng, 4)])}",
            "-- data_test relationships x -> delta://s/t.x",
            f"-- $n ({rng.choice(['int', 'date', 'float', 'string', 'bool'])}) = {rng.choice(['1', '2024-01-01', '1.5', 'x', noise(rng, 3)])}",
            f"-- schedule {rng.choice(['0 2 * * *', '*/5 * * * *', '0 25 * * *', noise(rng, 5)])}",
            f"-- automation {rng.choice(['eager', 'on_missing', 'on_cron 0 2 * * *', 'on_cron 0 2 * * * tz=Local'])}",
            f"-- freshness {rng.choice(['fail=26h warn=24h', 'fail=1d', 'cron 0 9 * * * lower_bound=1h', 'cron 0 9 * * * lower_bound=2d', 'fail=' + noise(rng, 3)])}",
        ]
    )


def generated(rng: random.Random) -> str:
    """A header of annotation lines (well-formed with edge-case values, or grammar words and noise) over a SQL body."""
    lines = []
    if rng.random() < 0.8:
        lines.append("-- materialize " + rng.choice(["delta://a/b", "delta://s/x", "manual delta://a/b", f"delta://a/b key={_pick(rng, 'key')}"]))
    well_formed = rng.random() < 0.35  # only template lines: many of these load, then build
    for _ in range(rng.randrange(0, 4 if well_formed else 6)):
        if well_formed or rng.random() < 0.6:
            lines.append(template_line(rng))
            continue
        words = [rng.choice(WORDS) if rng.random() < 0.8 else noise(rng, rng.randrange(1, 8)) for _ in range(rng.randrange(1, 7))]
        prefix = rng.choice(["-- ", "-- ", "-- ", "--", "// ", "-- -- "])
        lines.append(prefix + " ".join(words))
    body = rng.choice(BODIES)
    if rng.random() < 0.2:
        body += " " + rng.choice(HOSTILE)
    return "\n".join(lines) + "\n\n" + body + "\n"


def loading_seeds(seeds: list[str]) -> list[str]:
    """The seed files that parse cleanly on their own (the light mutations start from these)."""
    from assetlake_dagster.project.load import parse_file

    return [text for text in seeds if not parse_file("f.sql", text)[1]] or seeds


def mutated(rng: random.Random, seeds: list[str], good: list[str]) -> str:
    """A seed file with one value swapped (light), or a few character-level edits."""
    if rng.random() < 0.4:  # light: one value swapped, so that many mutants still load
        return _swap_value(rng, rng.choice(good))
    text = rng.choice(seeds)
    for _ in range(rng.randrange(1, 6)):
        text = _edit(rng, text)
    return text


VALUES = {
    "start": ["1900-01-01", "2999-12-31", "2024-03-31T02:30", "2024-03-10T02:00", "2024-01-01T06:30", "2024-02-29", "2023-02-29", "2024-01-01T23:00", "2024-01-01T24:00", "1899-12-31"],
    "end": ["1900-01-02", "3000-01-01", "2024-01-01", "2024-01-02", "2024-01-08", "2024-02-01", "2024-03-10T02:00", "2024-04-01"],
    "tz": ["UTC", "Europe/Berlin", "Pacific/Kiritimati", "Etc/GMT+12", "America/St_Johns", "Asia/Kathmandu", "Local"],
    "batch": ["1", "1000", "1001", "01", "-1"],
    "window": ["1d", "7d", "24h", "0d", "1000000d", "36600d", "36601d", "878400h", "5300w", "1200mo", "2w", "3m"],
    "key": ["id", "id,id", "a,b", "_partition", "ID"],
}


def _swap_value(rng: random.Random, text: str) -> str:
    """Replace one ``name=value`` option's value, or one header word, with another valid-looking one."""
    options = list(re.finditer(r"\b(start|end|tz|batch|window|key)=(\S+)", text))
    if options and rng.random() < 0.7:
        match = rng.choice(options)
        value = rng.choice(VALUES[match.group(1)])
        return text[: match.start(2)] + value + text[match.end(2) :]
    words = list(re.finditer(r"(?m)(?<=^-- )\S+|(?<= )\S+", text.split("\n\n", 1)[0]))
    if not words:
        return _edit(rng, text)
    match = rng.choice(words)
    return text[: match.start()] + rng.choice(WORDS) + text[match.end() :]


def _edit(rng: random.Random, text: str) -> str:
    """One edit: replace, insert or delete characters, duplicate a line or splice a hostile piece."""
    op = rng.random()
    pos = rng.randrange(0, len(text) + 1)
    if op < 0.3 and text:  # replace one character
        pos = min(pos, len(text) - 1)
        text = text[:pos] + noise(rng, 1) + text[pos + 1 :]
    elif op < 0.5:  # insert noise or a grammar word
        piece = rng.choice(WORDS) if rng.random() < 0.5 else noise(rng, rng.randrange(1, 5))
        text = text[:pos] + piece + text[pos:]
    elif op < 0.7:  # delete a span
        text = text[:pos] + text[pos + rng.randrange(1, 20) :]
    elif op < 0.85:  # duplicate a line
        lines = text.split("\n")
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
        text = "\n".join(lines)
    else:  # splice a hostile piece
        text = text[:pos] + rng.choice(HOSTILE) + text[pos:]
    return text


def byte_mutated(rng: random.Random, data: bytes) -> bytes:
    """Byte-level edits: flipped bits, stray bytes (often invalid UTF-8), a BOM, CRLF line ends."""
    raw = bytearray(data)
    op = rng.random()
    if op < 0.2:
        return b"\xef\xbb\xbf" + bytes(raw)
    if op < 0.35:
        return bytes(raw).replace(b"\n", rng.choice([b"\r\n", b"\r", b"\x85", b"\xe2\x80\xa8"]))
    for _ in range(rng.randrange(1, 4)):
        pos = rng.randrange(0, len(raw) + 1)
        if rng.random() < 0.5 and raw:
            pos = min(pos, len(raw) - 1)
            raw[pos] ^= 1 << rng.randrange(8)
        else:
            raw[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4)))
    return bytes(raw)


def inputs(seed: int, count: int) -> Iterator[bytes]:
    """``count`` file contents, reproducible from ``seed``: 85% text-level, 15% byte-level edits."""
    rng = random.Random(seed)
    seeds = seed_files()
    good = loading_seeds(seeds) if seeds else []
    for _ in range(count):
        text = mutated(rng, seeds, good) if seeds and rng.random() < 0.5 else generated(rng)
        data = text.encode("utf-8", "surrogatepass")
        yield byte_mutated(rng, data) if rng.random() < 0.15 else data


class Hang(Exception):
    pass


def _alarm(signum, frame):  # noqa: ARG001
    raise Hang()


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`Hang` in the block once ``seconds`` of wall time have passed."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _build(folder: str) -> None:
    import warnings

    import dagster as dg

    from assetlake_dagster.defs.build import build_definitions

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        defs = build_definitions(folder, lake_root=os.path.join(os.path.dirname(folder), "lake"), load_python_files=False)
        graph = defs.resolve_asset_graph()
        for key in graph.get_all_asset_keys():
            node = graph.get(key)
            partitions = node.partitions_def
            if isinstance(partitions, dg.TimeWindowPartitionsDefinition):
                partitions.get_first_partition_window()
                partitions.get_last_partition_window()
            elif isinstance(partitions, dg.StaticPartitionsDefinition):
                partitions.get_partition_keys()
            if not isinstance(partitions, (dg.TimeWindowPartitionsDefinition, dg.StaticPartitionsDefinition)):
                continue
            # Map the first and last partitions to each partitioned upstream, as a run would.
            edges = {partitions.get_first_partition_key(), partitions.get_last_partition_key()} - {None}
            for edge in sorted(edges):
                for parent in node.parent_keys:
                    upstream = graph.get(parent).partitions_def
                    if upstream is None or isinstance(upstream, dg.DynamicPartitionsDefinition):
                        continue
                    graph.get_partition_mapping(key, parent).get_upstream_mapped_partitions_result_for_partitions(
                        partitions.subset_with_partition_keys([edge]), partitions, upstream
                    )


#: What a run may fail with: the user's SQL or data is wrong (Spark says so), or the
#: product refused with a message of its own (a ``dagster.Failure``: audit, key, config).
RUN_DATA_ERRORS = {"Failure", "AssetlakeError", "ProjectError", "ConfigError", "WriteError", "KeyViolationError"}
#: Dagster's wrappers around the exception a step raised: looked through, not judged.
RUN_WRAPPERS = {"DagsterExecutionStepExecutionError", "DagsterUserCodeExecutionError"}


def _spark_error_names() -> set[str]:
    """The exceptions PySpark raises for an error reported by Spark itself (bad SQL, bad data)."""
    from pyspark.errors.exceptions import captured

    found, todo = set(), [captured.CapturedException]
    while todo:
        cls = todo.pop()
        found.add(cls.__name__)
        todo.extend(cls.__subclasses__())
    return found


def _failure_kind(error, spark_errors: set[str]) -> tuple[str, str]:
    """('data error' | 'crash', text) for a step's SerializableErrorInfo."""
    chain, seen = [], error
    while seen is not None:
        chain.append(seen)
        seen = seen.cause or seen.context
    judged = ([e for e in chain if e.cls_name not in RUN_WRAPPERS] or chain)[0]
    text = f"{judged.cls_name}: {judged.message.strip()}\n\n" + "".join(e.to_string() for e in chain)
    if judged.cls_name in RUN_DATA_ERRORS or judged.cls_name in spark_errors:
        return "data error", text
    return "crash", text


def _first_key(instance, partitions) -> tuple[bool, str | None]:
    """(runnable, key): the first partition of ``partitions`` (a dynamic one gets ``k``)."""
    import dagster as dg

    if partitions is None:
        return True, None
    if isinstance(partitions, dg.DynamicPartitionsDefinition):
        instance.add_dynamic_partitions(partitions.name, ["k"])
        return True, "k"
    key = partitions.get_first_partition_key()
    return key is not None, key


def materialize(folder: str, lake_root: str, timeout_s: float) -> tuple[str, str]:
    """Run ``f.sql``'s asset on Spark after ``up.sql``'s first partition: (outcome, detail).

    Outcomes: ``ran`` (a new table version or a clean no-op), ``data error`` (Spark or the
    product refused the SQL or the data, with a message), ``crash`` (any other exception:
    a finding), ``hang`` (over ``timeout_s``), ``no partition`` (none to run yet).
    """
    import dagster as dg

    from assetlake_dagster.defs.build import build_definitions
    from assetlake_dagster.defs.dagster_internals import implicit_asset_job
    from assetlake_dagster.project.load import load_project
    from assetlake_dagster.defs.translator import AssetlakeTranslator

    spark_errors = _spark_error_names()
    specs = {os.path.basename(s.path): s for s in load_project(folder, load_python_files=False).assets}
    produced = {spec.uri for spec in specs.values()}
    outside = [str(u.uri) for spec in specs.values() for u in spec.upstreams if u.uri not in produced]
    if outside:  # no rows to read: the run would stop at "materialize them first"
        return "skipped", f"reads {', '.join(outside)}, which the folder does not produce"
    defs = build_definitions(folder, lake_root=lake_root, load_python_files=False)
    graph = defs.resolve_asset_graph()
    instance = dg.DagsterInstance.ephemeral()
    quiet = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
    outcome, detail = "ran", ""
    try:
        with _time_limit(timeout_s):
            for name in ("up.sql", "f.sql"):
                if name not in specs:
                    continue
                key = AssetlakeTranslator().get_asset_key(specs[name])
                runnable, partition = _first_key(instance, graph.get(key).partitions_def)
                if not runnable:
                    outcome, detail = ("no partition", "") if name == "f.sql" else (outcome, detail)
                    continue
                try:
                    result = implicit_asset_job(defs, [key]).execute_in_process(
                        instance=instance, asset_selection=[key], partition_key=partition,
                        run_config=quiet, raise_on_error=False,
                    )
                except dg.DagsterInvalidConfigError as err:  # a required argument: Dagster names it
                    outcome, detail = "data error", str(err)
                    break
                failures = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
                if failures:
                    outcome, detail = _failure_kind(failures[0].step_failure_data.error, spark_errors)
                    break
    except Hang:
        outcome, detail = "hang", f"the run took more than {timeout_s} s"
    except Exception:  # noqa: BLE001 - every other exception is a finding
        outcome, detail = "crash", traceback.format_exc()
    return outcome, detail


def classify(folder: str, text: bytes, timeout_s: float, build: bool = True, upstream: str = "daily") -> tuple[str, str]:
    """Write ``text`` as ``<folder>/f.sql`` beside an ``up.sql`` partitioned ``upstream``, load it; (outcome, detail)."""
    from assetlake_dagster.errors import ProjectError
    from assetlake_dagster.project.load import load_project

    path = os.path.join(folder, "f.sql")
    with open(path, "wb") as f:
        f.write(text)
    with open(os.path.join(folder, "up.sql"), "w", encoding="utf-8") as f:
        f.write(UPSTREAM.format(kind=upstream))
    try:
        with _time_limit(timeout_s):
            load_project(folder, load_python_files=False)
            if build:
                # What validate accepts must build: definitions, partitions and their first/last windows.
                _build(folder)
        outcome, detail = "loaded", ""
    except Hang:
        return "hang", f"load took more than {timeout_s} s"
    except ProjectError as err:
        located = re.compile(LOCATED_AT.format(folder=re.escape(folder)))
        bad = [d.render().splitlines()[0] for d in err.diagnostics if not located.match(d.render())]
        outcome, detail = ("located", "") if err.diagnostics and not bad else ("traceback", "unlocated: " + repr(bad))
    except Exception:  # noqa: BLE001 - every other exception is a finding
        outcome, detail = "traceback", traceback.format_exc()
    return outcome, detail


def run(
    files: int,
    seed: int,
    timeout_s: float,
    out_dir: str | None = None,
    quiet: bool = False,
    build: bool = True,
    runs: int = 0,
    run_timeout_s: float = 300.0,
) -> dict:
    """Load ``files`` inputs; run the first ``runs`` clean loads on Spark. Returns the counts."""
    counts = {"loaded": 0, "located": 0, "traceback": 0, "hang": 0}
    ran = {"ran": 0, "data error": 0, "no partition": 0, "crash": 0, "hang": 0}
    skipped = 0
    findings: list[tuple[int, str, bytes, str]] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="assetlake-fuzz-") as work:
        folder = os.path.join(work, "project")
        for index, text in enumerate(inputs(seed, files)):
            shutil.rmtree(folder, ignore_errors=True)
            os.mkdir(folder)
            upstream = UPSTREAM_KINDS[index % len(UPSTREAM_KINDS)]
            outcome, detail = classify(folder, text, timeout_s, build, upstream)
            counts[outcome] += 1
            if outcome in ("traceback", "hang"):
                findings.append((index, outcome, text, f"beside up.sql:\n{UPSTREAM.format(kind=upstream)}\n{detail}"))
            if outcome == "loaded" and sum(ran.values()) < runs:
                # What validate accepts runs to a data error at worst.
                lake = os.path.join(work, f"lake-{index}")
                outcome, detail = materialize(folder, lake, run_timeout_s)
                shutil.rmtree(lake, ignore_errors=True)
                if outcome == "skipped":
                    skipped += 1
                    continue
                ran[outcome] += 1
                if not quiet:
                    reason = " ".join(detail.split("\n\n")[0].split())[:240] if detail else ""
                    print(f"fuzz: run {sum(ran.values())}/{runs} (input {index}): {outcome} {reason}".rstrip(), flush=True)
                if outcome in ("crash", "hang"):
                    findings.append((index, f"run-{outcome}", text, f"beside up.sql:\n{UPSTREAM.format(kind=upstream)}\n{detail}"))
    seconds = time.monotonic() - started
    counts["seconds"] = seconds
    counts["findings"] = findings
    counts["runs"] = ran
    counts["run_skipped"] = skipped
    if findings:
        out = out_dir or tempfile.mkdtemp(prefix=f"assetlake-fuzz-findings-{seed}-")
        os.makedirs(out, exist_ok=True)
        for index, outcome, text, detail in findings:
            with open(os.path.join(out, f"{index:06d}-{outcome}.sql"), "wb") as f:
                f.write(text)
            with open(os.path.join(out, f"{index:06d}-{outcome}.txt"), "w", encoding="utf-8") as f:
                f.write(detail)
        counts["out"] = out
    if not quiet:
        print(
            f"fuzz: {files} files, {counts['loaded']} loaded, {counts['located']} located errors, "
            f"{counts['traceback']} tracebacks, {counts['hang']} hangs (seed {seed}, {seconds:.0f} s)"
        )
        if runs:
            print(
                f"fuzz: {sum(ran.values())} loaded folders run on Spark: {ran['ran']} ran, {ran['data error']} data errors, "
                f"{ran['no partition']} with no partition yet, {ran['crash']} crashes, {ran['hang']} hangs "
                f"({skipped} more not run: they read tables the folder does not produce)"
            )
        if findings:
            print(f"fuzz: the offending inputs and their tracebacks are in {counts['out']}", file=sys.stderr)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=3000, help="how many files to generate (default 3000)")
    parser.add_argument("--seed", type=int, default=1, help="random seed: the same seed gives the same files")
    parser.add_argument("--timeout-s", type=float, default=10.0, help="per-file load budget in seconds (default 10)")
    parser.add_argument("--no-build", action="store_true", help="skip building Dagster definitions of clean loads")
    parser.add_argument("--run", type=int, default=0, metavar="N", help="also materialize the first N clean loads on Spark (default 0)")
    parser.add_argument("--run-timeout-s", type=float, default=300.0, help="per-folder run budget in seconds (default 300)")
    parser.add_argument("--out", help="folder for the offending inputs (default: a new temporary folder)")
    args = parser.parse_args(argv)
    if args.run:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ.setdefault("ASSETLAKE_SPARK_MODE", "local")  # one in-process Spark session for every run
    counts = run(args.files, args.seed, args.timeout_s, args.out, build=not args.no_build, runs=args.run, run_timeout_s=args.run_timeout_s)
    return 1 if counts["findings"] else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
