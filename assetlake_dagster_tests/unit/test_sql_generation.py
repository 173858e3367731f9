"""Layer 3: SQL built by the write strategies, compared as exact strings (no Spark)."""

import json
import re

import pytest

from assetlake_dagster.spec import MaterializeSpec, MergeOptions, TableUri, WriteStrategy, quote_identifier
from assetlake_dagster.writes import CommitStamp, WriteTarget, strategy_for
from assetlake_dagster.writes.merge import merge_statement
from assetlake_dagster.writes.sql import change_condition, key_condition


@pytest.mark.parametrize(
    "key, expected",
    [
        pytest.param(["id"], "t.`id` = s.`id`", id="one-column"),
        pytest.param(["id", "day"], "t.`id` = s.`id` AND t.`day` = s.`day`", id="two-columns"),
    ],
)
def test_key_condition(key, expected):
    assert key_condition(key) == expected


def test_change_condition_is_null_safe():
    assert change_condition(["name", "tier"]) == (
        "NOT (t.`name` <=> s.`name`) OR NOT (t.`tier` <=> s.`tier`)"
    )


def test_merge_statement():
    assert merge_statement("delta.`/lake/a/b`", ["id"], ["id", "name", "tier"]) == (
        "MERGE INTO delta.`/lake/a/b` AS t\n"
        "USING changed_rows AS s\n"
        "ON t.`id` = s.`id`\n"
        "WHEN MATCHED THEN UPDATE SET `name` = s.`name`, `tier` = s.`tier`\n"
        "WHEN NOT MATCHED THEN INSERT (`id`, `name`, `tier`) VALUES (s.`id`, s.`name`, s.`tier`)"
    )


def test_merge_statement_key_only_table_only_inserts():
    assert merge_statement("x", ["id"], ["id"]) == (
        "MERGE INTO x AS t\nUSING changed_rows AS s\nON t.`id` = s.`id`\n"
        "WHEN NOT MATCHED THEN INSERT (`id`) VALUES (s.`id`)"
    )


@pytest.mark.parametrize("name", ["a b", "x`; DROP TABLE t; --", "1abc", "", "é"])
def test_identifiers_outside_the_allow_list_are_never_quoted(name):
    with pytest.raises(ValueError, match="not an allowed identifier"):
        quote_identifier(name)
    with pytest.raises(ValueError):
        key_condition([name])


def _target(strategy, key=()):
    return WriteTarget(
        uri=TableUri("s", "t"),
        path="/lake/s/t",
        strategy=strategy,
        stamp=CommitStamp(run_id="run1", asset="s/t"),
        key=key,
    )


@pytest.mark.parametrize(
    "strategy, key, operation, statement",
    [
        pytest.param(
            WriteStrategy.REPLACE,
            (),
            "Delta WRITE (mode=Overwrite, overwriteSchema=true): one commit",
            "df.write.format('delta').mode('overwrite').option('overwriteSchema', 'true')"
            ".save('/lake/s/t')",
            id="replace",
        ),
        pytest.param(
            WriteStrategy.APPEND,
            (),
            "Delta WRITE (mode=Append, txnAppId per run and slice): one commit",
            "df.write.format('delta').mode('append').option('txnAppId', 'assetlake:run1:s/t:')"
            ".option('txnVersion', 1).save('/lake/s/t')",
            id="append",
        ),
    ],
)
def test_plans(strategy, key, operation, statement):
    plan = strategy_for(strategy).plan(_target(strategy, key))
    assert (plan.operation, plan.statement) == (operation, statement)


def test_merge_plan_uses_known_columns():
    plan = strategy_for(WriteStrategy.MERGE).plan(_target(WriteStrategy.MERGE, ("id",)), ["id", "v"])
    assert plan.predicate == "t.`id` = s.`id`"
    assert plan.statement == merge_statement("delta.`/lake/s/t`", ["id"], ["id", "v"])


def test_stamp_round_trip():
    stamp = CommitStamp(run_id="r1", asset="s/t", partition="2024-01-01'--", idempotency_id="r0")
    assert stamp.matches(stamp.user_metadata())
    assert stamp.txn_app_id == "assetlake:r0:s/t:2024-01-01'--"
    assert not CommitStamp(run_id="r2", asset="s/t", partition="2024-01-01'--").matches(
        stamp.user_metadata()
    )
    # A resumed run (root = the original run) finds the original run's commit...
    original = CommitStamp(run_id="r0", asset="s/t", partition="2024-01-01'--")
    assert stamp.matches(original.user_metadata())
    # ... and an earlier resumed attempt's, which carries the same root.
    earlier = CommitStamp(run_id="r0b", asset="s/t", partition="2024-01-01'--", idempotency_id="r0")
    assert stamp.matches(earlier.user_metadata())
    # Never another slice's or another asset's.
    assert not stamp.matches(CommitStamp("r1", "s/t", "other").user_metadata())
    assert not stamp.matches(CommitStamp("r1", "s/u", "2024-01-01'--").user_metadata())
    assert not stamp.matches("not json") and not stamp.matches(None)
    # The code version rides along (plan --changed reads it) and changes no match.
    versioned = CommitStamp("r1", "s/t", "2024-01-01'--", "r0", code_version="abc123")
    assert json.loads(versioned.user_metadata())["assetlake"]["code_version"] == "abc123"
    assert stamp.matches(versioned.user_metadata()) and versioned.matches(stamp.user_metadata())


def test_history_changes_are_staged_from_one_join_with_the_current_rows():
    from assetlake_dagster.writes.history import staged_changes_query

    query = staged_changes_query(
        "delta.`/lake/dim/customer`", ["id"], ["id", "name", "tier", "email"], ["name", "tier"], True, "snap"
    )
    assert query == (
        "SELECT CASE WHEN s.`__assetlake_key_rows` > 1 OR s.`id` IS NULL AND s.`__assetlake_key_rows` IS NOT NULL "
        "THEN 'invalid' WHEN t.`id` IS NULL THEN 'open' WHEN s.`__assetlake_key_rows` IS NULL THEN 'close' "
        "ELSE 'change' END AS `__assetlake_action`,\n"
        "  coalesce(s.`id`, t.`id`) AS `id`, s.`name`, s.`tier`, s.`email`, s.`__assetlake_key_rows`\n"
        "FROM (SELECT *, count(*) OVER (PARTITION BY `id`) AS `__assetlake_key_rows` FROM snap) AS s\n"
        "FULL OUTER JOIN (SELECT `id`, `name`, `tier` FROM delta.`/lake/dim/customer` WHERE `is_current`) AS t "
        "ON t.`id` = s.`id`\n"
        "WHERE s.`__assetlake_key_rows` > 1 OR s.`id` IS NULL AND s.`__assetlake_key_rows` IS NOT NULL "
        "OR t.`id` IS NULL OR s.`__assetlake_key_rows` IS NULL OR NOT (t.`name` <=> s.`name`) OR NOT (t.`tier` <=> s.`tier`)"
    )


def test_history_changes_soft_deletes_composite_key_key_only():
    from assetlake_dagster.writes.history import staged_changes_query

    # Without deletes=close absent keys are no change (a LEFT JOIN); without tracked
    # columns only new keys are.
    assert staged_changes_query("x", ["region", "id"], ["region", "id"], [], False, "snap") == (
        "SELECT CASE WHEN s.`__assetlake_key_rows` > 1 OR (s.`region` IS NULL OR s.`id` IS NULL) "
        "AND s.`__assetlake_key_rows` IS NOT NULL THEN 'invalid' WHEN t.`region` IS NULL THEN 'open' "
        "ELSE 'change' END AS `__assetlake_action`,\n"
        "  coalesce(s.`region`, t.`region`) AS `region`, coalesce(s.`id`, t.`id`) AS `id`, s.`__assetlake_key_rows`\n"
        "FROM (SELECT *, count(*) OVER (PARTITION BY `region`, `id`) AS `__assetlake_key_rows` FROM snap) AS s\n"
        "LEFT JOIN (SELECT `region`, `id` FROM x WHERE `is_current`) AS t ON t.`region` = s.`region` AND t.`id` = s.`id`\n"
        "WHERE s.`__assetlake_key_rows` > 1 OR (s.`region` IS NULL OR s.`id` IS NULL) "
        "AND s.`__assetlake_key_rows` IS NOT NULL OR t.`region` IS NULL"
    )


def test_history_merge_statement_reads_only_the_staged_changes():
    from assetlake_dagster.writes.history import history_merge_statement

    assert history_merge_statement("x", ["region", "id"], ["region", "id", "tier"], "chg") == (
        "MERGE INTO x AS t\n"
        "USING (\n"
        "  SELECT s.`region` AS `__assetlake_merge_key_0`, s.`id` AS `__assetlake_merge_key_1`, s.* "
        "FROM chg AS s WHERE s.`__assetlake_action` <> 'open'\n"
        "  UNION ALL\n"
        "  SELECT NULL AS `__assetlake_merge_key_0`, NULL AS `__assetlake_merge_key_1`, s.* "
        "FROM chg AS s WHERE s.`__assetlake_action` <> 'close'\n"
        ") AS s\n"
        "ON t.`region` = s.`__assetlake_merge_key_0` AND t.`id` = s.`__assetlake_merge_key_1` AND t.`is_current`\n"
        "WHEN MATCHED THEN UPDATE SET `valid_to` = :run_ts, `is_current` = false\n"
        "WHEN NOT MATCHED AND s.`__assetlake_action` <> 'close' THEN INSERT "
        "(`region`, `id`, `tier`, `valid_from`, `valid_to`, `is_current`) "
        "VALUES (s.`region`, s.`id`, s.`tier`, :run_ts, NULL, true)"
    )


def test_history_merge_on_a_source_timestamp_starts_and_closes_versions_at_it():
    from assetlake_dagster.writes.history import history_merge_statement

    statement = history_merge_statement("x", ["id"], ["id", "tier", "updated_at"], "chg", valid_from="updated_at")
    # A change closes the old version where the new one starts; a close row (an absent key,
    # deletes=close) carries no source values and closes at the run's time.
    assert (
        "WHEN MATCHED THEN UPDATE SET `valid_to` = coalesce(CAST(s.`updated_at` AS TIMESTAMP), :run_ts), "
        "`is_current` = false\n"
    ) in statement
    assert statement.endswith(
        "VALUES (s.`id`, s.`tier`, s.`updated_at`, CAST(s.`updated_at` AS TIMESTAMP), NULL, true)"
    )


def test_a_late_history_plan_places_each_row_among_its_keys_versions():
    tgt = WriteTarget(
        uri=TableUri("dim", "c"),
        path="/lake/dim/c",
        strategy=WriteStrategy.HISTORY,
        stamp=CommitStamp("r", "dim/c"),
        key=("id",),
        valid_from="updated_at",
        late_insert=True,
    )
    plan = strategy_for(WriteStrategy.HISTORY).plan(tgt, ["id", "tier", "updated_at"])
    assert plan.operation.startswith("Delta MERGE keeping SCD2 history on updated_at, each new start a version")
    assert plan.predicate == "t.`id` = ... AND t.`valid_from` = ..."
    changes, merge = plan.statement.split(";\n-- then:\n")
    assert "CAST(`updated_at` AS TIMESTAMP) AS `__assetlake_starts` FROM snapshot" in changes
    assert "max(CASE WHEN t.`valid_from` < s.`__assetlake_starts` THEN t.`valid_from` END) AS `__assetlake_prev_from`" in changes
    assert "count(CASE WHEN t.`valid_from` = s.`__assetlake_starts` AND (NOT (t.`tier` <=> s.`tier`) OR " in changes
    assert merge.splitlines()[-3:] == [
        "ON t.`id` = s.`__assetlake_merge_key_0` AND t.`valid_from` = s.`__assetlake_merge_from`",
        "WHEN MATCHED THEN UPDATE SET `valid_to` = s.`__assetlake_starts`, `is_current` = false",
        "WHEN NOT MATCHED AND s.`__assetlake_merge_from` IS NULL THEN INSERT (`id`, `tier`, `updated_at`, `valid_from`, "
        "`valid_to`, `is_current`) VALUES (s.`id`, s.`tier`, s.`updated_at`, s.`__assetlake_starts`, "
        "coalesce(s.`__assetlake_next_from`, CASE WHEN s.`__assetlake_prev_to` > s.`__assetlake_starts` THEN "
        "s.`__assetlake_prev_to` END), coalesce(s.`__assetlake_next_from`, CASE WHEN s.`__assetlake_prev_to` > "
        "s.`__assetlake_starts` THEN s.`__assetlake_prev_to` END) IS NULL)",
    ]
    assert strategy_for(WriteStrategy.HISTORY).describe(
        MaterializeSpec(TableUri("dim", "c"), WriteStrategy.HISTORY, ("id",), valid_from="updated_at", late_insert=True)
    ).endswith("versions start at updated_at, late versions inserted")


def test_history_plan_shows_the_merge():
    tgt = WriteTarget(
        uri=TableUri("dim", "c"),
        path="/lake/dim/c",
        strategy=WriteStrategy.HISTORY,
        stamp=CommitStamp("r", "dim/c"),
        key=("id",),
        track=("tier",),
    )
    plan = strategy_for(WriteStrategy.HISTORY).plan(tgt, ["id", "name", "tier"])
    assert plan.operation.startswith("Delta MERGE keeping SCD2 history")
    assert "absent keys stay current" in plan.operation
    assert "OR t.`id` IS NULL OR NOT (t.`tier` <=> s.`tier`);\n" in plan.statement
    assert "LEFT JOIN" in plan.statement and "'close'" not in plan.statement.split(";")[0]
    assert "MERGE INTO delta.`/lake/dim/c` AS t" in plan.statement
    assert plan.predicate == "t.`id` = ... AND t.`is_current`"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        pytest.param({"strategy": "history"}, "managed_write('history'): 'history' needs 'key=<c1,c2>'.", id="no-key"),
        pytest.param({"strategy": "merge", "key": ["id"], "track": ["a"]}, "'track=' applies to history, not to merge.", id="track-merge"),
        pytest.param({"strategy": "history", "key": ["id"], "deletes": "soft"}, "'deletes=soft' does not apply to a history.", id="deletes"),
        pytest.param({"strategy": "history", "key": ["id"], "deletes": "delete"}, "'deletes=delete' does not apply to a history.", id="deletes-delete-history"),
        pytest.param({"strategy": "merge", "key": ["id"], "deletes": "close"}, "'deletes=close' does not apply to a merge.", id="deletes-close-merge"),
        pytest.param({"strategy": "append", "deletes": "delete"}, "'deletes=' applies to merge and history, not to append.", id="deletes-append"),
        pytest.param({"strategy": "history", "key": ["id"], "track": ["ID"]}, "track column 'ID' is a key column.", id="track-key"),
        pytest.param({"strategy": "merge", "key": ["id"], "valid_from": "at"}, "'valid_from=' applies to history, not to merge.", id="valid-from-merge"),
        pytest.param({"strategy": "history", "key": ["id"], "valid_from": "ID"}, "valid_from column 'ID' is a key column.", id="valid-from-key"),
        pytest.param({"strategy": "history", "key": ["id"], "valid_from": "a b"}, "valid_from column 'a b' is not an allowed identifier.", id="valid-from-bad"),
    ],
)
def test_managed_write_history_validation(kwargs, message):
    from assetlake_dagster.defs.write_contract import managed_write

    with pytest.raises(ValueError, match=re.escape(message)):
        managed_write(**kwargs)


def test_managed_write_history_metadata():
    import dagster as dg

    from assetlake_dagster.defs.write_contract import managed_write, materialize_spec_for
    from assetlake_dagster.spec import MaterializeSpec

    key = dg.AssetKey(["s", "t"])
    metadata = managed_write("history", key=["id"], track=["tier"], deletes="close")
    assert materialize_spec_for(key, metadata) == MaterializeSpec(
        TableUri("s", "t"), WriteStrategy.HISTORY, key=("id",), track=("tier",), close_deletes=True
    )
    plain = materialize_spec_for(key, managed_write("history", key=["id"]))
    assert (plain.strategy, plain.key, plain.track, plain.close_deletes) == (WriteStrategy.HISTORY, ("id",), (), False)
    assert plain.valid_from is None and "valid_from" not in plain.to_metadata()["assetlake/write"]
    timed = materialize_spec_for(key, managed_write("history", key=["id"], valid_from="updated_at"))
    assert timed.valid_from == "updated_at"
    merged = materialize_spec_for(key, managed_write("merge", key=["id"], deletes="delete"))
    assert merged.merge == MergeOptions(deletes=True) and not merged.close_deletes
    assert merged.to_metadata()["assetlake/write"]["merge"] == {"deletes": "delete"}


@pytest.mark.parametrize(
    "key, metadata, expected",
    [
        pytest.param(["s", "t"], {}, ("delta://s/t", "replace"), id="no-contract-two-part-key"),
        pytest.param(["lake", "s", "t"], {"assetlake/write": {"table": "delta://s/t", "strategy": "merge", "key": ["id"]}},
                     ("delta://s/t", "merge"), id="contract-names-the-table"),
        pytest.param(["lake", "s", "t"], {"assetlake/table": "delta://s/t"}, ("delta://s/t", "replace"), id="external-table"),
    ],
)
def test_the_table_comes_from_the_contract_not_the_key(key, metadata, expected):
    import dagster as dg

    from assetlake_dagster.defs.write_contract import materialize_spec_for

    spec = materialize_spec_for(dg.AssetKey(key), metadata)
    assert (str(spec.uri), spec.strategy.value) == expected


def test_a_prefixed_key_without_a_table_is_a_clear_error():
    import dagster as dg

    from assetlake_dagster.errors import ConfigError
    from assetlake_dagster.defs.write_contract import managed_write, materialize_spec_for

    with pytest.raises(ConfigError, match=re.escape("managed_write(..., table='delta://schema/table')")):
        materialize_spec_for(dg.AssetKey(["lake", "s", "t"]), managed_write("merge", key=["id"]))
