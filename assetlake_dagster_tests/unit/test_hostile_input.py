"""No file content crashes or hangs the loader: every hostile input is a located error.

Each case was seen crash (a traceback) or hang in a fuzzing run of mutated annotated
files; the property test below keeps the class closed: any header made of grammar words
and arbitrary text gives a spec or located errors, never an exception.
"""

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assetlake_dagster.project.load import parse_file

PARTITIONED = "-- materialize delta://a/b\n-- partitioned daily start=2024-01-01 {}\nSELECT 1 AS x\n"
LOCATED = re.compile(r"^f\.sql:(\d+):(\d+): ")


def located_errors(text: str) -> list[str]:
    spec, problems = parse_file("f.sql", text)
    assert spec is None, "expected the file to be rejected"
    rendered = [p.render().splitlines()[0] for p in problems]
    assert rendered and all(LOCATED.match(line) for line in rendered), rendered
    return rendered


@pytest.mark.parametrize(
    "text, expected",
    [
        pytest.param(PARTITIONED.format("batch=²"), "f.sql:2:39: batch= must be a whole number", id="superscript-digit-batch"),
        pytest.param(PARTITIONED.format("batch=１２"), "f.sql:2:39: batch= must be a whole number", id="full-width-batch"),
        pytest.param(PARTITIONED.format("tz=America"), "f.sql:2:39: unknown time zone 'America'", id="zone-folder"),
        pytest.param(PARTITIONED.format("tz=" + "A" * 300), "f.sql:2:39: unknown time zone", id="zone-too-long"),
        pytest.param(PARTITIONED.format("tz=../../etc/passwd"), "f.sql:2:39: unknown time zone", id="zone-path"),
        pytest.param(
            "-- materialize delta://a/b\n-- partitioned daily start=２０２４-01-01\nSELECT 1 AS x\n",
            "f.sql:2:22: start= '２０２４-01-01' is not a date.",
            id="full-width-date",
        ),
        pytest.param(
            "-- materialize delta://a/b\n-- $n (int) = １２\nSELECT :n AS x\n", "f.sql:2:15: default '１２' is not a valid int.", id="full-width-int-default"
        ),
        pytest.param(
            "-- materialize delta://a/b\n-- $n (float) = ٣.5\nSELECT :n AS x\n", "f.sql:2:17: default '٣.5' is not a valid float.", id="arabic-indic-float"
        ),
        pytest.param(
            "-- materialize delta://a/b\n-- $d (date) = 2024-0١-01\nSELECT :d AS x\n", "f.sql:2:16: default '2024-0١-01' is not a valid date.", id="mixed-digit-date"
        ),
        pytest.param(
            "-- materialize delta://a/b\nSELECT " + "(" * 60 + "1" + ")" * 60 + " AS x\n",
            "f.sql:2:1: the statement nests too deeply",
            id="deep-parentheses",
        ),
        pytest.param(
            "-- materialize delta://a/b\nSELECT 1 AS x FROM s.t " + " ".join(f"JOIN s.t{i}" for i in range(40)) + "\n",
            "f.sql:2:146: more than 12 JOINs without ON or USING in one statement.",
            id="joins-without-on",
        ),
        pytest.param("-- materialize delta://a/b\nELSE\n", "f.sql:2:1: the file must end with one SELECT", id="stray-keyword-statement"),
    ],
)
def test_hostile_input_is_a_located_error(text, expected):
    errors = located_errors(text)
    assert any(line.startswith(expected) for line in errors), errors


def test_many_joins_with_conditions_still_load():
    joins = " ".join(f"JOIN s.t{i} ON s.t{i}.id = s.t.id" for i in range(40))
    spec, problems = parse_file("f.sql", f"-- materialize delta://a/b\nSELECT 1 AS x FROM s.t {joins}\n")
    assert problems == [] and len(spec.upstreams) == 41


_WORDS = st.sampled_from(
    [
        "materialize", "delta://a/b", "delta://", "key=id", "history", "append", "track=a", "deletes=close",
        "partitioned", "daily", "hourly", "static", "dynamic", "start=2024-01-01", "end=2024-02-01", "tz=UTC",
        "batch=3", "on", "window=7d", "data_test", "unique", "not_null", "accepted_values", "=", "a,b",
        "relationships", "->", "delta://s/t.c", "warn", "$n", "(int)", "(date)", "group", "owner", "tags",
        "k=v", "description", "kinds", "manual", "scd2", "{partition}", "x", ",", "'", '"', "\\", "²", "１",
    ]
)
_NOISE = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
_LINE = st.lists(st.one_of(_WORDS, _NOISE), min_size=1, max_size=8).map(lambda words: "-- " + " ".join(words))
_BODY = st.sampled_from(
    [
        "SELECT 1 AS x",
        "SELECT id, name FROM s.t WHERE d = '{partition}'",
        "SET a = 1;\nSELECT * FROM s.t",
        "SELECT (((1))) AS x FROM s.t JOIN s.u",
        "",
        "INSERT INTO s.t VALUES (1)",
    ]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(header=st.lists(_LINE, min_size=1, max_size=6), body=_BODY, noise=_NOISE)
def test_any_header_gives_a_spec_or_located_errors(header, body, noise):
    text = "\n".join(header) + "\n\n" + body + noise
    spec, problems = parse_file("f.sql", text)  # must not raise
    assert (spec is None) == bool(problems)
    for problem in problems:
        first = problem.render().splitlines()[0]
        match = LOCATED.match(first)
        assert match, first
        assert 1 <= int(match.group(1)) <= len(text.splitlines()) + 1
