"""Layer 4: accepted_values compares values bound as literals (never spliced into SQL), so
quotes, commas, spaces and injection payloads in a value match only themselves."""

from assetlake_dagster.annotations import parse_header
from assetlake_dagster.run.data_tests import run_test
from assetlake_dagster.errors import SourceText
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.spec import DataTestKind, DataTestSpec

TRICKY = ("it's", 'say "hi"', "a,b", "two words", " padded ", "x' OR '1'='1", "a\\' OR 1=1 --", "'); DROP TABLE t; --")


def test_accepted_values_with_quotes_commas_and_spaces_match_only_themselves(spark, lake_root):
    rows = [(v,) for v in TRICKY] + [("it s",), ("a",), ("padded",), ("anything",), (None,)]
    scope = spark.createDataFrame(rows, "status STRING")
    test = DataTestSpec(DataTestKind.ACCEPTED_VALUES, ("status",), values=TRICKY)
    outcome = run_test(spark, Lake(lake_root), test, scope, "staged table", {})
    # NULL passes (not_null is its own test); each near miss fails, no payload widens the match.
    assert outcome.failing == 4
    assert sorted(outcome.samples) == sorted(repr(v) for v in ("it s", "a", "padded", "anything"))


def test_accepted_values_written_in_a_file_bind_byte_for_byte(spark, lake_root):
    line = "-- data_test accepted_values status = it's, \"x' OR '1'='1\", two words, a\\' OR 1=1 --"
    header, problems = parse_header(SourceText.of("f.sql", f"-- materialize delta://a/t\n{line}\n"))
    assert problems == []
    test = header.data_tests[0]
    scope = spark.createDataFrame([("it's",), ("x' OR '1'='1",), ("two words",), ("a\\' OR 1=1 --",), ("x",)], "status STRING")
    outcome = run_test(spark, Lake(lake_root), test, scope, "staged table", {})
    assert (outcome.failing, outcome.samples) == (1, ("'x'",))
