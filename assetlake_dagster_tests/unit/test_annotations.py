"""The header grammar: valid headers → spec fields; invalid headers → exact error text."""

import datetime as dt

import pytest

from assetlake_dagster.annotations import Word, header_length, parse_header
from assetlake_dagster.spec import convert_value
from assetlake_dagster.errors import SourceLocation, SourceText
from assetlake_dagster.spec import (
    ArgumentSpec,
    CatalogSpec,
    ArgumentType,
    MaterializeSpec,
    MergeOptions,
    TableUri,
    UpstreamSpec,
    WriteStrategy,
)

M = "-- materialize delta://a/t\n"  # a valid first line, for cases about other keywords


def _materialize(strategy, key=(), table="t"):
    return MaterializeSpec(TableUri("a", table), strategy, key)


def parse(text, path="f.sql"):
    return parse_header(SourceText.of(path, text))


COLUMN_FORMS = (
    "Write '-- column <out> <- delta://<schema>/<table>.<column>[, ...]' or '-- column <out> \"description\"'."
)


def _first_lines(text):
    _, diagnostics = parse(text)
    return [d.render().splitlines()[0] for d in diagnostics]


VALID = [
    pytest.param(M, {"materialize": _materialize(WriteStrategy.REPLACE)}, id="replace"),
    pytest.param(
        "-- materialize delta://a/t key=id\n",
        {"materialize": _materialize(WriteStrategy.MERGE, ("id",))},
        id="merge-key",
    ),
    pytest.param(
        "-- materialize delta://a/t key=region,order_id\n",
        {"materialize": _materialize(WriteStrategy.MERGE, ("region", "order_id"))},
        id="merge-composite-key",
    ),
    pytest.param(
        "-- materialize delta://a/t append\n", {"materialize": _materialize(WriteStrategy.APPEND)}, id="append"
    ),
    pytest.param(
        "-- materialize delta://a/t key=id append\n",
        {"materialize": _materialize(WriteStrategy.APPEND), "key_columns": ()},
        id="append-wins-over-key",
    ),
    pytest.param(
        "-- materialize manual delta://a/t\n",
        {"materialize": _materialize(WriteStrategy.MANUAL), "manual": True},
        id="manual",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id history\n",
        {"materialize": _materialize(WriteStrategy.HISTORY, ("id",))},
        id="history",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id history track=name,tier deletes=close\n",
        {
            "materialize": MaterializeSpec(
                TableUri("a", "t"), WriteStrategy.HISTORY, ("id",), ("name", "tier"), close_deletes=True
            )
        },
        id="history-track-deletes",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id deletes=delete\n",
        {
            "materialize": MaterializeSpec(
                TableUri("a", "t"), WriteStrategy.MERGE, ("id",), merge=MergeOptions(deletes=True)
            )
        },
        id="merge-deletes",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id history valid_from=updated_at\n",
        {
            "materialize": MaterializeSpec(
                TableUri("a", "t"), WriteStrategy.HISTORY, ("id",), valid_from="updated_at"
            )
        },
        id="history-valid-from",
    ),
    pytest.param(
        "-- materialize scd2 delta://a/t key=region,id track=name\n",
        {"materialize": MaterializeSpec(TableUri("a", "t"), WriteStrategy.HISTORY, ("region", "id"), ("name",))},
        id="scd2-alias",
    ),
    pytest.param(
        "// materialize delta://a/t key=id\n// group g\n",
        {"materialize": _materialize(WriteStrategy.MERGE, ("id",)), "catalog.group": "g"},
        id="slash-prefix",
    ),
    pytest.param(
        "-- pipeline\n--\n//\n  -- materialize delta://a/t\n",
        {"materialize": _materialize(WriteStrategy.REPLACE), "body_start": 5},
        id="pipeline-bare-and-indented-lines",
    ),
    pytest.param(
        M + "-- on delta://raw/orders\n-- on delta://a/dim_current\n",
        {
            "upstreams": (
                UpstreamSpec(TableUri("raw", "orders")),
                UpstreamSpec(TableUri("a", "dim_current")),  # reading the SCD2 view is fine
            )
        },
        id="on-repeated",
    ),
    pytest.param(
        M
        + "-- $s (string) = 'it is'\n-- $n (int) = -3\n-- $f (float) = 1.5e2\n-- $b (bool) = TRUE\n"
        + "-- $d (date) = 2024-01-31\n-- $ts (timestamp) = 2024-01-31T08:30:00\n-- $plain (string)\n",
        {
            "arguments": (
                ArgumentSpec("s", ArgumentType.STRING, "it is", True),
                ArgumentSpec("n", ArgumentType.INT, -3, True),
                ArgumentSpec("f", ArgumentType.FLOAT, 150.0, True),
                ArgumentSpec("b", ArgumentType.BOOL, True, True),
                ArgumentSpec("d", ArgumentType.DATE, dt.date(2024, 1, 31), True),
                ArgumentSpec("ts", ArgumentType.TIMESTAMP, dt.datetime(2024, 1, 31, 8, 30), True),
                ArgumentSpec("plain", ArgumentType.STRING),
            )
        },
        id="arguments-every-type",
    ),
    pytest.param(
        M + '-- $a (str) = "x"\n-- $b (INTEGER) = 1\n-- $c (bigint)\n-- $d (double) = 2\n'
        "-- $e (boolean) = false\n-- $f(date)='2024-02-29'\n",
        {
            "arguments": (
                ArgumentSpec("a", ArgumentType.STRING, "x", True),
                ArgumentSpec("b", ArgumentType.INT, 1, True),
                ArgumentSpec("c", ArgumentType.INT),
                ArgumentSpec("d", ArgumentType.FLOAT, 2.0, True),
                ArgumentSpec("e", ArgumentType.BOOL, False, True),
                ArgumentSpec("f", ArgumentType.DATE, dt.date(2024, 2, 29), True),
            )
        },
        id="argument-type-aliases-and-tight-spacing",
    ),
    pytest.param(
        M
        + "-- group sales/eu\n-- owner team:data-eng\n-- owner alice@example.com\n"
        + "-- tags tier=gold,pii=false\n-- tags domain=sales, empty=\n"
        + "-- description Cleaned orders,\n-- description one row per order.\n-- kinds spark, delta\n-- kinds silver\n",
        {
            "catalog.group": "sales/eu",
            "catalog.owners": ("team:data-eng", "alice@example.com"),
            "catalog.tags": (("tier", "gold"), ("pii", "false"), ("domain", "sales"), ("empty", "")),
            "catalog.description": "Cleaned orders, one row per order.",
            "catalog.kinds": ("spark", "delta", "silver"),
        },
        id="catalog-attributes-accumulate",
    ),
    pytest.param(
        M + "-- group g\n\n-- group not-an-annotation\nSELECT 1\n",
        {"catalog.group": "g", "body_start": 3},
        id="blank-line-ends-header",
    ),
    pytest.param(
        M + "SELECT 1\n-- kinds not-an-annotation\n",
        {"catalog.kinds": (), "body_start": 2},
        id="sql-line-ends-header",
    ),
]


@pytest.mark.parametrize("text, expected", VALID)
def test_valid_header(text, expected):
    header, diagnostics = parse(text)
    assert diagnostics == []
    assert {name: _value(header, name) for name in expected} == expected


def _value(header, name):
    """A header attribute, or a declared field's value by its path (absent: the spec's default)."""
    if name not in header.fields and "." in name:
        return getattr(CatalogSpec(), name.split(".", 1)[1])
    return header.fields[name] if name in header.fields else getattr(header, name)


def test_locations_point_at_the_words():
    text = "-- materialize delta://a/t key=id,region\n-- on delta://raw/x\n-- $n (int) = 1\n"
    header, _ = parse(text)
    assert header.materialize.location == SourceLocation("f.sql", 1, 16)
    assert header.key_columns == (Word("id", 1, 32), Word("region", 1, 35))
    assert header.upstreams[0].location == SourceLocation("f.sql", 2, 7)
    assert header.arguments[0].location == SourceLocation("f.sql", 3, 4)
    assert header.argument_names == frozenset({"n"})


INVALID = [
    # -- materialize
    pytest.param(
        "-- materialize delta://main/orders_daily kye=order_id\n",
        "f.sql:1:42: unknown option 'kye=order_id'. Did you mean 'key='?",
        id="option-typo",
    ),
    pytest.param(
        "-- materialize delta://a/t apend\n", "f.sql:1:28: unknown option 'apend'. Did you mean 'append'?", id="apend"
    ),
    pytest.param(
        "-- materialize delta://a/t frobnicate\n",
        "f.sql:1:28: unknown option 'frobnicate'. Options are 'append' and 'key=<c1,c2>'.",
        id="option-unknown",
    ),
    pytest.param(
        "-- materialize delta://a/t append append\n",
        "f.sql:1:35: option 'append' is given twice. Keep one 'append'.",
        id="option-twice",
    ),
    pytest.param(
        "-- materialize delta://a/t manual\n",
        "f.sql:1:28: 'manual' must come before the table URI. "
        "Write '-- materialize manual delta://<schema>/<table>'.",
        id="manual-after-uri",
    ),
    pytest.param(
        "-- materialize delta://a/t key=\n",
        "f.sql:1:28: 'key=' has an empty column name. Write 'key=<c1,c2>' without spaces.",
        id="key-empty",
    ),
    pytest.param(
        "-- materialize delta://a/t key=a,,b\n",
        "f.sql:1:28: 'key=a,,b' has an empty column name. Write 'key=<c1,c2>' without spaces.",
        id="key-empty-column",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id,1x\n",
        "f.sql:1:35: key column '1x' is not an allowed identifier. "
        "Use letters, digits and underscores, not starting with a digit.",
        id="key-bad-identifier",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id,ID\n",
        "f.sql:1:35: key column 'ID' is listed twice. Remove the repeated column.",
        id="key-twice",
    ),
    pytest.param(
        "-- materialize manual delta://a/t key=id\n",
        "f.sql:1:35: 'key=' applies to merge and history, not to manual. "
        "A manual script writes its own table; remove it or 'manual'.",
        id="manual-with-key",
    ),
    pytest.param(
        "-- materialize manual delta://a/t append\n",
        "f.sql:1:35: 'manual' cannot be combined with 'append'. "
        "A manual script writes its own table; remove 'append' or 'manual'.",
        id="manual-with-append",
    ),
    pytest.param(
        "-- materialize\n",
        "f.sql:1:4: '-- materialize' needs a table URI. "
        "Write '-- materialize delta://<schema>/<table> [append] [key=<c1,c2>]'.",
        id="materialize-no-uri",
    ),
    pytest.param(
        "-- materialize delta://a/t\n-- group g\n-- materialize delta://a/u\n",
        "f.sql:3:4: more than one '-- materialize' annotation. "
        "The first is on line 1; a file produces exactly one table.",
        id="materialize-twice",
    ),
    pytest.param(
        "-- group g\n",
        "f.sql:1:1: no '-- materialize' annotation. "
        "Add '-- materialize delta://<schema>/<table> [append] [key=<c1,c2>]' at the top of the file.",
        id="materialize-missing",
    ),
    pytest.param(
        "SELECT 1\n",
        "f.sql:1:1: no '-- materialize' annotation. "
        "Add '-- materialize delta://<schema>/<table> [append] [key=<c1,c2>]' at the top of the file.",
        id="no-header",
    ),
    # -- URIs
    pytest.param(
        "-- materialize s3://bucket/t\n",
        "f.sql:1:16: unsupported table URI 's3://bucket/t'. Write 'delta://<schema>/<table>'.",
        id="uri-scheme",
    ),
    pytest.param(
        "-- materialize analytics.orders\n",
        "f.sql:1:16: unsupported table URI 'analytics.orders'. Write 'delta://<schema>/<table>'.",
        id="uri-sql-name",
    ),
    pytest.param(
        "-- materialize delta://a/b/c\n",
        "f.sql:1:16: table URI 'delta://a/b/c' is not 'delta://<schema>/<table>'. "
        "Use exactly two segments, the schema and the table.",
        id="uri-three-segments",
    ),
    pytest.param(
        "-- materialize delta:///abs\n",
        "f.sql:1:16: table URI 'delta:///abs' is not 'delta://<schema>/<table>'. "
        "Use exactly two segments, the schema and the table.",
        id="uri-absolute",
    ),
    pytest.param(
        "-- materialize delta://../x\n",
        "f.sql:1:24: '..' in 'delta://../x' is not an allowed identifier. "
        "Use letters, digits and underscores, not starting with a digit.",
        id="uri-traversal",
    ),
    pytest.param(
        "-- materialize delta://a-b/c\n",
        "f.sql:1:24: 'a-b' in 'delta://a-b/c' is not an allowed identifier. "
        "Use letters, digits and underscores, not starting with a digit.",
        id="uri-bad-schema",
    ),
    pytest.param(
        "-- materialize delta://a/1t\n",
        "f.sql:1:26: '1t' in 'delta://a/1t' is not an allowed identifier. "
        "Use letters, digits and underscores, not starting with a digit.",
        id="uri-bad-table",
    ),
    pytest.param(
        "-- materialize delta://a/dim_customer_current\n",
        "f.sql:1:26: table name 'dim_customer_current' ends in '_current', which is reserved. "
        "The suffix names the SCD2 companion view; choose another table name.",
        id="uri-current-suffix",
    ),
    pytest.param(
        "-- materialize delta://a/DIM_CURRENT\n",
        "f.sql:1:26: table name 'DIM_CURRENT' ends in '_current', which is reserved. "
        "The suffix names the SCD2 companion view; choose another table name.",
        id="uri-current-suffix-uppercase",
    ),
    # -- column lineage and descriptions
    pytest.param(
        M + "-- column total\n",
        "f.sql:2:11: '-- column' needs an output column and what it says about it. " + COLUMN_FORMS,
        id="column-alone",
    ),
    pytest.param(
        M + "-- column 2x <- delta://a/o.amount\n",
        "f.sql:2:11: '2x' is not an allowed column name. Use letters, digits and underscores, not starting with a digit.",
        id="column-bad-name",
    ),
    pytest.param(
        M + "-- column total = delta://a/o.amount\n",
        "f.sql:2:17: expected '<-' or a quoted description after 'total'. " + COLUMN_FORMS,
        id="column-no-arrow",
    ),
    pytest.param(
        M + "-- column total <-\n",
        "f.sql:2:17: '<-' names no source column. " + COLUMN_FORMS,
        id="column-no-source",
    ),
    pytest.param(
        M + "-- column total <- delta://a/o\n",
        "f.sql:2:20: 'delta://a/o' does not name a table's column. "
        "Write '<table URI>.<column>', e.g. 'delta://sales/orders.amount'.",
        id="column-source-without-column",
    ),
    pytest.param(
        M + "-- column total <- delta://a/o.amount, s3://a/o.tax\n",
        "f.sql:2:40: unsupported table URI 's3://a/o'. Write 'delta://<schema>/<table>'.",
        id="column-source-bad-uri",
    ),
    pytest.param(
        M + "-- column total <- delta://a/o.1amount\n",
        "f.sql:2:32: '1amount' is not an allowed column name. "
        "Use letters, digits and underscores, not starting with a digit.",
        id="column-source-bad-column",
    ),
    pytest.param(
        M + "-- column total <- delta://a/o.amount\n-- column TOTAL <- delta://a/o.tax\n",
        "f.sql:3:17: the lineage of column 'TOTAL' is already declared on line 2. Keep one lineage line per column.",
        id="column-lineage-twice",
    ),
    pytest.param(
        M + '-- column total "Sum"\n-- column total "Total"\n',
        "f.sql:3:17: the description of column 'total' is already declared on line 2. "
        "Keep one description line per column.",
        id="column-described-twice",
    ),
    pytest.param(
        M + '-- column total "Sum\n',
        "f.sql:2:17: the description has no closing '\"'. Write the text in double quotes: \"Amount in EUR\".",
        id="column-description-unclosed",
    ),
    pytest.param(
        M + '-- column total ""\n',
        "f.sql:2:17: the description is empty. Write the text in double quotes: \"Amount in EUR\".",
        id="column-description-empty",
    ),
    # -- SCD2 history options
    pytest.param(
        "-- materialize delta://a/t history\n",
        "f.sql:1:28: 'history' needs 'key=<c1,c2>'. "
        "The key identifies an entity across its versions; add e.g. 'key=id'.",
        id="history-without-key",
    ),
    pytest.param(
        "-- materialize scd2 delta://a/t\n",
        "f.sql:1:16: 'history' needs 'key=<c1,c2>'. "
        "The key identifies an entity across its versions; add e.g. 'key=id'.",
        id="scd2-without-key",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id history append\n",
        "f.sql:1:43: 'history' cannot be combined with 'append'. "
        "History keeps versions itself; remove 'append' or 'history'.",
        id="history-append",
    ),
    pytest.param(
        "-- materialize manual delta://a/t history\n",
        "f.sql:1:35: 'manual' cannot be combined with 'history'. "
        "A manual script writes its own table; remove 'history' or 'manual'.",
        id="history-manual",
    ),
    pytest.param(
        "-- materialize scd2 manual delta://a/t\n",
        "f.sql:1:21: 'scd2' cannot be combined with 'manual'. Keep one of them before the table URI.",
        id="scd2-manual",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id track=name,tier\n",
        "f.sql:1:35: 'track=' applies to history, not to merge. "
        "It is a history option: add 'history' after 'key=<c1,c2>', or remove it.",
        id="track-without-history",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id deletes=close\n",
        "f.sql:1:35: 'deletes=close' does not apply to a merge. "
        "A merge deletes absent keys (there is no version to close); write 'deletes=delete', or add 'history'.",
        id="deletes-close-on-merge",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id history deletes=delete\n",
        "f.sql:1:43: 'deletes=delete' does not apply to a history. "
        "A history never deletes a version; write 'deletes=close' to close the current version of absent keys.",
        id="deletes-delete-on-history",
    ),
    pytest.param(
        "-- materialize delta://a/t append deletes=delete\n",
        "f.sql:1:35: 'deletes=' applies to merge and history, not to append. "
        "'deletes=delete' is a merge's (key=<c1,c2>) and 'deletes=close' a history's; remove it.",
        id="deletes-without-key",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id history deletes=soft\n",
        "f.sql:1:43: unknown deletes= value 'soft'. "
        "Write 'deletes=delete' on a merge (delete the keys the SELECT no longer returns) or "
        "'deletes=close' on a history (close their current version); without it they stay.",
        id="deletes-unknown-value",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id valid_from=updated_at\n",
        "f.sql:1:35: 'valid_from=' applies to history, not to merge. "
        "It is a history option: add 'history' after 'key=<c1,c2>', or remove it.",
        id="valid-from-without-history",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id history valid_from=ID\n",
        "f.sql:1:54: valid_from column 'ID' is a key column. "
        "Name the column holding when the source changed the row, e.g. valid_from=updated_at.",
        id="valid-from-key-column",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id history valid_from=a,b\n",
        "f.sql:1:54: valid_from= takes one column, not 'a,b'. Write 'valid_from=<column>'.",
        id="valid-from-two-columns",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id history valid_from=\n",
        "f.sql:1:43: 'valid_from=' names no column. Write 'valid_from=<column>', e.g. valid_from=updated_at.",
        id="valid-from-empty",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id history late=insert\n",
        "f.sql:1:43: 'late=insert' needs 'valid_from=<column>'. "
        "A late version is placed by its own timestamp: name the column holding it, e.g. valid_from=updated_at.",
        id="late-without-valid-from",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id history valid_from=at deletes=close late=insert\n",
        "f.sql:1:71: 'late=insert' cannot be combined with 'deletes=close'. "
        "A key closed at the run's time has no timestamp of the source's to be ordered by; keep one of them.",
        id="late-with-deletes-close",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id history valid_from=at late=later\n",
        "f.sql:1:57: unknown late= value 'later'. Write 'late=insert' (a version earlier than its key's latest is "
        "placed among its versions) or 'late=refuse' (the default: such a version fails the run).",
        id="late-unknown-value",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id late=insert\n",
        "f.sql:1:35: 'late=' applies to history, not to merge. "
        "It is a history option: add 'history' after 'key=<c1,c2>' and 'valid_from=<column>', or remove it.",
        id="late-on-merge",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id history updated_at=ts\n",
        "f.sql:1:43: unknown option 'updated_at='. Write 'valid_from=' (the same thing here): "
        "-- materialize delta://<schema>/<table> key=<c1,c2> history [track=<c1,c2>] [deletes=close] "
        "[valid_from=<column> [late=insert]].",
        id="valid-from-dbt-name",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id history track=ID,name\n",
        "f.sql:1:49: track column 'ID' is a key column. "
        "The key identifies the entity and never changes; track only non-key columns.",
        id="track-key-column",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id history track=name,\n",
        "f.sql:1:43: 'track=name,' has an empty column name. Write 'track=<c1,c2>' without spaces.",
        id="track-empty-item",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id history track=1x\n",
        "f.sql:1:49: track column '1x' is not an allowed identifier. "
        "Use letters, digits and underscores, not starting with a digit.",
        id="track-bad-identifier",
    ),
    pytest.param(
        "-- materialize scd2 delta://a/t key=id history\n",
        "f.sql:1:40: 'history' repeats 'scd2'. Keep one of them.",
        id="scd2-and-history",
    ),
    # -- unknown keywords
    pytest.param(M + "-- kind silver\n", "f.sql:2:4: unknown annotation 'kind'. Did you mean 'kinds'?", id="kind"),
    pytest.param(
        "-- materialise delta://a/t\n-- materialize delta://a/t\n",
        "f.sql:1:4: unknown annotation 'materialise'. Did you mean 'materialize'?",
        id="materialise",
    ),
    pytest.param(
        M + "// Orders, cleaned every day.\n",
        "f.sql:2:4: unknown annotation 'Orders,'. Separate free comments from the header with a blank line.",
        id="free-comment-in-header",
    ),
    # -- on
    pytest.param(
        M + "-- on\n", "f.sql:2:4: '-- on' needs a table URI. Write '-- on delta://<schema>/<table>'.", id="on-empty"
    ),
    pytest.param(
        M + "-- on delta://raw/a delta://raw/b\n",
        "f.sql:2:21: unknown option 'delta://raw/b'. Declare one table per '-- on' line.",
        id="on-two-uris",
    ),
    pytest.param(
        M + "-- on delta://raw/a\n-- on delta://raw/a\n",
        "f.sql:3:7: 'delta://raw/a' is already declared on line 2. Remove the repeated line.",
        id="on-twice",
    ),
    pytest.param(
        M + "-- on raw.orders\n",
        "f.sql:2:7: unsupported table URI 'raw.orders'. Write 'delta://<schema>/<table>'.",
        id="on-bad-uri",
    ),
    # -- $arguments
    pytest.param(
        M + "-- $1x (int)\n",
        "f.sql:2:5: argument name '1x' is not an allowed identifier. "
        "Use letters, digits and underscores, not starting with a digit.",
        id="arg-bad-name",
    ),
    pytest.param(
        M + "-- $ (int)\n", "f.sql:2:4: '$' needs an argument name. Write '-- $<name> (<type>) [= <default>]'.", id="arg-no-name"
    ),
    pytest.param(
        M + "-- $limit = 5\n",
        "f.sql:2:11: argument '$limit' needs a type in parentheses. "
        "Write '-- $limit (<type>) [= <default>]' with a type among: string, int, float, bool, date, timestamp.",
        id="arg-no-type",
    ),
    pytest.param(
        M + "-- $x (flaot)\n", "f.sql:2:8: unknown argument type 'flaot'. Did you mean 'float'?", id="arg-type-typo"
    ),
    pytest.param(
        M + "-- $x (blob)\n",
        "f.sql:2:8: unknown argument type 'blob'. Types are: string, int, float, bool, date, timestamp.",
        id="arg-type-unknown",
    ),
    pytest.param(
        M + "-- $x (int) = ten\n",
        "f.sql:2:15: default 'ten' is not a valid int. Write a whole number, e.g. '= 10'.",
        id="arg-bad-int",
    ),
    pytest.param(
        M + "-- $x (int) = 1.5\n",
        "f.sql:2:15: default '1.5' is not a valid int. Write a whole number, e.g. '= 10'.",
        id="arg-float-for-int",
    ),
    pytest.param(
        M + "-- $x (float) = abc\n",
        "f.sql:2:17: default 'abc' is not a valid float. Write a number, e.g. '= 0.5'.",
        id="arg-bad-float",
    ),
    pytest.param(
        M + "-- $x (bool) = yes\n",
        "f.sql:2:16: default 'yes' is not a valid bool. Write 'true' or 'false'.",
        id="arg-bad-bool",
    ),
    pytest.param(
        M + "-- $x (date) = 2024-02-30\n",
        "f.sql:2:16: default '2024-02-30' is not a valid date. Write a date as YYYY-MM-DD, e.g. '= 2024-01-31'.",
        id="arg-bad-date",
    ),
    pytest.param(
        M + "-- $x (timestamp) = yesterday\n",
        "f.sql:2:21: default 'yesterday' is not a valid timestamp. "
        "Write an ISO timestamp, e.g. '= 2024-01-31T08:00:00'.",
        id="arg-bad-timestamp",
    ),
    pytest.param(
        M + "-- $x (int) =\n",
        "f.sql:2:13: argument '$x' has '=' but no default. Write a value after '=', or remove '='.",
        id="arg-eq-without-default",
    ),
    pytest.param(
        M + "-- $x (int) 5\n",
        "f.sql:2:13: unexpected '5' after the type. Write '= <default>' to give a default value.",
        id="arg-junk-after-type",
    ),
    pytest.param(
        M + "-- $x (int)\n-- $x (string)\n",
        "f.sql:3:5: argument '$x' is declared twice. The first declaration is on line 2; remove one.",
        id="arg-twice",
    ),
    # -- catalog attributes
    pytest.param(
        M + "-- group sales-eu\n",
        "f.sql:2:10: group 'sales-eu' is not a valid group name. "
        "Use letters, digits and underscores, with '/' between segments.",
        id="group-invalid",
    ),
    pytest.param(
        M + "-- group a\n-- group b\n",
        "f.sql:3:4: group is already set on line 2. An asset belongs to one group; keep one '-- group' line.",
        id="group-twice",
    ),
    pytest.param(M + "-- group\n", "f.sql:2:4: '-- group' needs a value. Write '-- group <name>'.", id="group-empty"),
    pytest.param(
        M + "-- owner bob\n",
        "f.sql:2:10: owner 'bob' is not an email address or 'team:<name>'. "
        "Write e.g. '-- owner alice@example.com' or '-- owner team:data-eng'.",
        id="owner-invalid",
    ),
    pytest.param(
        M + "-- owner team:a team:b\n",
        "f.sql:2:17: '-- owner' takes one owner per line. Repeat '-- owner' for each owner.",
        id="owner-two-on-a-line",
    ),
    pytest.param(
        M + "-- owner team:a\n-- owner team:a\n",
        "f.sql:3:10: owner 'team:a' is listed twice. Remove the repeated owner.",
        id="owner-twice",
    ),
    pytest.param(
        M + "-- tags tier=gold\n-- tags pii=no,tier=silver\n",
        "f.sql:3:16: tag 'tier' is already set on line 2. Keep one value per tag key.",
        id="tags-duplicate-key",
    ),
    pytest.param(
        M + "-- tags tier\n", "f.sql:2:9: tag 'tier' has no value. Write 'key=value'.", id="tags-no-value"
    ),
    pytest.param(
        M + "-- tags a,b=1\n", "f.sql:2:9: tag 'a' has no value. Write 'key=value'.", id="tags-first-no-value"
    ),
    pytest.param(
        M + "-- tags a=1,,b=2\n", "f.sql:2:13: empty tag in the list. Write 'tags k=v,k2=v2'.", id="tags-empty-item"
    ),
    pytest.param(
        M + "-- tags t!er=gold\n",
        "f.sql:2:9: tag key 't!er' is not valid. Use letters, digits, '_', '-' and '.', at most 63 characters.",
        id="tags-bad-key",
    ),
    pytest.param(
        M + "-- tags tier=gold medal\n",
        "f.sql:2:14: tag value 'gold medal' is not valid. "
        "Use letters, digits, '_', '-' and '.', at most 63 characters.",
        id="tags-bad-value",
    ),
    pytest.param(
        M + "-- description\n",
        "f.sql:2:4: '-- description' needs a value. Write '-- description <text>'.",
        id="description-empty",
    ),
    pytest.param(
        M + "-- kinds spark,spark\n", "f.sql:2:16: kind 'spark' is listed twice. Remove the repeated kind.", id="kinds-twice"
    ),
    pytest.param(
        M + "-- kinds sp ark\n",
        "f.sql:2:10: kind 'sp ark' is not valid. Use letters, digits, '_', '-' and '.', at most 63 characters.",
        id="kinds-invalid",
    ),
    pytest.param(
        M + "-- kinds spark,\n", "f.sql:2:16: empty kind in the list. Write 'kinds a,b'.", id="kinds-empty-item"
    ),
]


@pytest.mark.parametrize("text, expected", INVALID)
def test_invalid_header(text, expected):
    assert _first_lines(text) == [expected]


def test_error_renders_source_line_and_carets():
    _, diagnostics = parse("-- materialize delta://main/orders_daily kye=order_id\n", "pipelines/orders_daily.sql")
    assert diagnostics[0].render() == (
        "pipelines/orders_daily.sql:1:42: unknown option 'kye=order_id'. Did you mean 'key='?\n"
        "  -- materialize delta://main/orders_daily kye=order_id\n"
        "                                           ^^^^^^^^^^^^"
    )


def test_every_problem_of_a_header_is_reported():
    text = "-- materialize delta://a/t kye=id\n-- kind x\n-- partitioned daily\n-- $x (flaot)\n-- owner bob\n"
    assert [line.split(": ", 1)[0] for line in _first_lines(text)] == [
        "f.sql:1:28",
        "f.sql:2:4",
        "f.sql:3:4",
        "f.sql:4:8",
        "f.sql:5:10",
    ]


def test_history_with_partitioned_names_the_conflict():
    text = "-- materialize delta://a/t key=id history\n-- partitioned daily start=2024-01-01\n"
    assert _first_lines(text) == [
        "f.sql:2:4: 'history' cannot be combined with 'partitioned'. SCD2 history is whole-table only; "
        "remove '-- partitioned daily start=2024-01-01' or drop 'history'.",
    ]


def test_history_keeps_key_and_track_positions_for_cross_checks():
    header, problems = parse("-- materialize delta://a/t key=id history track=name,tier\n")
    assert problems == []
    assert header.key_columns == (Word("id", 1, 32),)
    assert header.track_columns == (Word("name", 1, 49), Word("tier", 1, 54))


def test_invalid_materialize_line_still_counts_as_present():
    header, diagnostics = parse("-- materialize manual s3://x/y\n")
    assert header.materialize is None and header.manual is True
    assert [d.message for d in diagnostics] == ["unsupported table URI 's3://x/y'."]


def test_bad_argument_name_is_still_known_as_declared():
    header, _ = parse(M + "-- $x (flaot) = 1\n-- $y (int) = z\n")
    assert header.arguments == ()
    assert header.argument_names == frozenset({"x", "y"})


@pytest.mark.parametrize(
    "lines, expected",
    [
        pytest.param([], 0, id="empty"),
        pytest.param(["SELECT 1"], 0, id="sql-first"),
        pytest.param(["-- a", "// b", "--", "SELECT 1"], 3, id="until-sql"),
        pytest.param(["-- a", "   ", "-- b"], 1, id="until-blank"),
        pytest.param(["/* block */", "-- a"], 0, id="block-comment-is-sql"),
    ],
)
def test_header_length(lines, expected):
    assert header_length(lines) == expected


@pytest.mark.parametrize(
    "text, type_, expected",
    [
        pytest.param("'a b'", ArgumentType.STRING, "a b", id="string-single-quotes"),
        pytest.param('"x"', ArgumentType.STRING, "x", id="string-double-quotes"),
        pytest.param("'x\"", ArgumentType.STRING, "'x\"", id="string-mismatched-quotes-kept"),
        pytest.param("+7", ArgumentType.INT, 7, id="int-sign"),
        pytest.param(".5", ArgumentType.FLOAT, 0.5, id="float-leading-dot"),
        pytest.param("False", ArgumentType.BOOL, False, id="bool-case"),
        pytest.param("'2024-01-31'", ArgumentType.DATE, dt.date(2024, 1, 31), id="date-quoted"),
        pytest.param(
            "2024-01-31 08:00:00+00:00",
            ArgumentType.TIMESTAMP,
            dt.datetime(2024, 1, 31, 8, tzinfo=dt.timezone.utc),
            id="timestamp-with-zone",
        ),
    ],
)
def test_convert_value(text, type_, expected):
    value = convert_value(text, type_)
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize(
    "text, type_",
    [
        pytest.param("1_000", ArgumentType.INT, id="int-underscores"),
        pytest.param("nan", ArgumentType.FLOAT, id="float-nan"),
        pytest.param("1", ArgumentType.BOOL, id="bool-digit"),
        pytest.param("20240131", ArgumentType.DATE, id="date-compact"),
        pytest.param("31/01/2024", ArgumentType.TIMESTAMP, id="timestamp-not-iso"),
    ],
)
def test_convert_value_rejects(text, type_):
    with pytest.raises(ValueError):
        convert_value(text, type_)
