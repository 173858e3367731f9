"""A write's options are checked in one place (spec/write_options.py): the ``-- materialize``
grammar and ``managed_write`` build the same typed options, so one mistake gets one answer
from both, located in the file and raised from Python."""

import dataclasses

import pytest

from assetlake_dagster import UsageError, managed_write
from assetlake_dagster.annotations import parse_header
from assetlake_dagster.errors import SourceText
from assetlake_dagster.spec import WriteStrategy
from assetlake_dagster.spec.write_options import OPTIONS_BY_STRATEGY, WriteOptionsError, write_options


def _line_problems(line: str) -> list[str]:
    """Each problem of a one-line header, without its location."""
    _, problems = parse_header(SourceText.of("f.sql", line + "\nSELECT 1 AS id\n"))
    return [f"{p.message} {p.hint}" for p in problems]


@pytest.mark.parametrize(
    "line, strategy, options",
    [
        pytest.param("-- materialize delta://s/t key=id track=a", "merge", {"key": ["id"], "track": ["a"]}, id="track-on-merge"),
        pytest.param("-- materialize delta://s/t key=id history track=ID", "history", {"key": ["id"], "track": ["ID"]}, id="track-is-key"),
        pytest.param("-- materialize delta://s/t key=id deletes=close", "merge", {"key": ["id"], "deletes": "close"}, id="close-on-merge"),
        pytest.param("-- materialize delta://s/t key=id history deletes=delete", "history", {"key": ["id"], "deletes": "delete"}, id="delete-on-history"),
        pytest.param("-- materialize delta://s/t append deletes=delete", "append", {"deletes": "delete"}, id="deletes-on-append"),
        pytest.param("-- materialize delta://s/t key=id update=a keep=b", "merge", {"key": ["id"], "update": ["a"], "keep": ["b"]}, id="update-and-keep"),
        pytest.param("-- materialize delta://s/t key=id keep=id", "merge", {"key": ["id"], "keep": ["id"]}, id="keep-is-key"),
        pytest.param("-- materialize delta://s/t history", "history", {}, id="history-without-key"),
        pytest.param("-- materialize delta://s/t key=id history valid_from=ID", "history", {"key": ["id"], "valid_from": "ID"}, id="valid-from-is-key"),
        pytest.param("-- materialize delta://s/t valid_from=at", "replace", {"valid_from": "at"}, id="valid-from-on-replace"),
    ],
)
def test_one_mistake_gets_one_answer_from_the_grammar_and_from_managed_write(line, strategy, options):
    (from_the_file,) = _line_problems(line)
    with pytest.raises(UsageError) as raised:
        managed_write(strategy, **options)
    assert str(raised.value) == f"managed_write({strategy!r}): {from_the_file}"
    assert isinstance(raised.value, ValueError)


def test_which_strategy_takes_which_option_is_read_from_the_classes():
    """Every option, given to every strategy whose class has no field of that name, is refused
    and named; given to one that has it, it is not refused for being there."""
    values = {"key": ("id",), "track": ("a",), "valid_from": "at", "deletes": "delete", "update": ("a",),
              "keep": ("b",), "within": "a > 1", "new_rows": True, "late": "insert"}
    for strategy, cls in OPTIONS_BY_STRATEGY.items():
        takes = {f.name for f in dataclasses.fields(cls)}
        for option, value in values.items():
            given = {option: value, **({"key": ("id",)} if "key" in takes and option != "key" else {})}
            if option in takes:
                try:
                    write_options(strategy, **given)
                except WriteOptionsError as err:  # a combination rule may still answer (deletes=delete on a history)
                    assert all("applies to" not in p.message for p in err.problems), (strategy, option, err)
            else:
                with pytest.raises(WriteOptionsError) as raised:
                    write_options(strategy, **given)
                assert [p.option for p in raised.value.problems] == [option]
                assert f"not to {strategy.value}." in raised.value.problems[0].message


def test_every_problem_of_one_line_is_reported_at_once():
    assert _line_problems("-- materialize delta://s/t key=id history track=id deletes=delete") == [
        "track column 'id' is a key column. The key identifies the entity and never changes; track only non-key columns.",
        "'deletes=delete' does not apply to a history. "
        "A history never deletes a version; write 'deletes=close' to close the current version of absent keys.",
    ]
    with pytest.raises(WriteOptionsError) as raised:
        write_options(WriteStrategy.HISTORY, key=("id",), track=("id",), deletes="delete")
    assert [p.option for p in raised.value.problems] == ["track", "deletes"]
