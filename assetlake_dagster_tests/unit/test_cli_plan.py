"""`assetlake plan`: the query, Delta operation and predicate, without running anything."""

import os

from assetlake_dagster.cli.main import main
from assetlake_dagster.demo import DEMO_PROJECT_DIR
from assetlake_dagster_tests.helpers import PROJECTS

INVALID = os.path.join(PROJECTS, "invalid")


def test_plan_merge_file(capsys, tmp_path):
    lake = tmp_path / "lake"
    assert main(["plan", os.path.join(DEMO_PROJECT_DIR, "customers.sql"), "--lake-root", str(lake)]) == 0
    out = capsys.readouterr().out.splitlines()
    path = os.path.join(os.path.realpath(lake), "analytics", "customers")
    assert out[0] == "asset       analytics/customers (delta://analytics/customers)"
    assert out[2] == f"table path  {path}"
    assert out[3] == "strategy    merge on key (customer_id)"
    assert out[4] == "upstreams   delta://raw/customers"
    assert f"  MERGE INTO delta.`{path}` AS t" in out
    assert "predicate: t.`customer_id` = s.`customer_id`" in out
    assert out[-1] == "(plan only: nothing was run or written)"
    assert not lake.exists()  # nothing created


def test_plan_on_a_bucket_names_the_table_url_and_touches_no_store(capsys):
    # No S3 server: planning reads nothing, so an unreachable bucket does not matter.
    assert main(["plan", os.path.join(DEMO_PROJECT_DIR, "customers.sql"), "--lake-root", "s3a://bucket/lake"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2] == "table path  s3a://bucket/lake/analytics/customers"
    assert "  MERGE INTO delta.`s3a://bucket/lake/analytics/customers` AS t" in out
    # Another spelling of the same prefix plans the same table path (one lake, one identity).
    assert main(["plan", os.path.join(DEMO_PROJECT_DIR, "customers.sql"), "--lake-root", "S3://Bucket//lake/"]) == 0
    assert capsys.readouterr().out.splitlines()[2] == "table path  s3a://bucket/lake/analytics/customers"
    assert main(["plan", os.path.join(DEMO_PROJECT_DIR, "customers.sql"), "--lake-root", "s3a://bucket/../lake"]) == 1
    assert "climbs above the bucket with '..'" in capsys.readouterr().err


def test_plan_shows_setup_arguments_and_append(capsys, tmp_path):
    assert main(["plan", os.path.join(DEMO_PROJECT_DIR, "top_customers.sql"), "--lake-root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "arguments   :top_n (int) = 20" in out
    assert "setup (line 8):\n  SET spark.sql.ansi.enabled = true" in out
    assert "Delta operation: Delta WRITE (mode=Overwrite, overwriteSchema=true): one commit" in out
    assert main(["plan", os.path.join(DEMO_PROJECT_DIR, "load_log.sql"), "--lake-root", str(tmp_path)]) == 0
    assert "mode('append').option('txnAppId', 'assetlake:<run id>:ops/load_log:')" in capsys.readouterr().out


def test_plan_of_a_broken_file_prints_the_error(capsys):
    assert main(["plan", os.path.join(INVALID, "bad_default.sql")]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[0].endswith(
        "bad_default.sql:2:19: default 'ten' is not a valid int. Write a whole number, e.g. '= 10'."
    )


def test_plan_of_a_missing_file(capsys, tmp_path):
    assert main(["plan", str(tmp_path / "nope.sql")]) == 1
    assert "cannot read the file" in capsys.readouterr().err


def test_plan_history_file_prints_the_merge(capsys, tmp_path):
    sql = os.path.join(PROJECTS, "history", "dim_customer.sql")
    assert main(["plan", sql, "--lake-root", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    path = os.path.join(os.path.realpath(tmp_path), "dim", "customer")
    assert out[3] == "strategy    history on key (id), track name, tier, deletes close, versions start at the run's time"
    assert f"  MERGE INTO delta.`{path}` AS t" in out
    # deletes=close: the staged changes include the current keys absent from the snapshot.
    assert (
        "  WHERE s.`__assetlake_key_rows` > 1 OR s.`id` IS NULL AND s.`__assetlake_key_rows` IS NOT NULL OR t.`id` IS NULL "
        "OR s.`__assetlake_key_rows` IS NULL OR NOT (t.`name` <=> s.`name`) OR NOT (t.`tier` <=> s.`tier`);"
    ) in out
    assert "  WHEN MATCHED THEN UPDATE SET `valid_to` = :run_ts, `is_current` = false" in out


def test_plan_marks_the_partition_range_end_and_window_end_exclusive(capsys, tmp_path):
    sql = os.path.join(PROJECTS, "partitioned", "event_log.sql")
    assert main(["plan", sql, "--lake-root", str(tmp_path), "--partition", "2024-01-10"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[5] == (
        "partitions  daily from 2024-01-01 to 2024-01-11 (exclusive) (UTC); backfills write 5 partitions per run and commit"
    )
    assert out[7] == (
        "window      partition_start = 2024-01-10 00:00:00+00:00, partition_end = 2024-01-11 00:00:00+00:00 (exclusive)"
    )


def test_plan_of_a_static_partition_has_no_window(capsys, tmp_path):
    sql = os.path.join(PROJECTS, "partitioned", "region_events.sql")
    assert main(["plan", sql, "--lake-root", str(tmp_path)]) == 0
    assert not [line for line in capsys.readouterr().out.splitlines() if line.startswith("window")]
