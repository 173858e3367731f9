"""The strategy registry: one class per managed ``WriteStrategy``, each answering for itself.

A new strategy is the enum value, its grammar, one ``writes/<name>.py`` and one line in
``writes/__init__.py``; these tests fail until that class is registered and answers
``plan``, ``describe`` and the plan's test scope.
"""

import ast
import dataclasses
import importlib
import inspect
import os
import re

import pytest

import assetlake_dagster.writes as writes
from assetlake_dagster.spec import MaterializeSpec, TableUri, WriteStrategy
from assetlake_dagster.spec.write_options import OPTIONS_BY_STRATEGY
from assetlake_dagster.writes import STRATEGIES, CommitStamp, WritePlan, WriteStrategyBase, WriteTarget, strategy_for

#: The strategies that write (a manual file writes itself, a view writes nothing).
MANAGED = [s for s in WriteStrategy if s not in (WriteStrategy.MANUAL, WriteStrategy.VIEW)]
WRITES_DIR = os.path.dirname(writes.__file__)


def _spec(strategy: WriteStrategy) -> MaterializeSpec:
    keyed = "key" in {f.name for f in dataclasses.fields(OPTIONS_BY_STRATEGY[strategy])}
    return MaterializeSpec(TableUri("s", "t"), strategy, key=("id",) if keyed else ())


def _strategy_classes() -> dict[str, list[str]]:
    """Every concrete ``WriteStrategyBase`` subclass defined under ``writes/``, by module file."""
    found: dict[str, list[str]] = {}
    for name in sorted(os.listdir(WRITES_DIR)):
        if not name.endswith(".py") or name == "__init__.py":
            continue
        module = importlib.import_module(f"assetlake_dagster.writes.{name[:-3]}")
        for cls in vars(module).values():
            if (
                inspect.isclass(cls)
                and cls.__module__ == module.__name__
                and issubclass(cls, WriteStrategyBase)
                and not inspect.isabstract(cls)
            ):
                found.setdefault(name, []).append(cls.__name__)
    return found


def test_every_managed_strategy_has_exactly_one_registered_class():
    assert sorted(STRATEGIES, key=lambda s: s.value) == sorted(MANAGED, key=lambda s: s.value)
    classes = [type(w) for w in STRATEGIES.values()]
    assert len(set(classes)) == len(classes), "one class registered for two strategies"
    for strategy, write in STRATEGIES.items():
        assert isinstance(write, WriteStrategyBase)
        assert write.strategy is strategy
        assert strategy_for(strategy) is write


def test_each_strategy_class_has_its_own_module():
    """``writes/<name>.py`` holds one strategy class, and every registered class is one of them."""
    found = _strategy_classes()
    assert all(len(names) == 1 for names in found.values()), found
    defined = {(module, names[0]) for module, names in found.items()}
    registered = {(type(w).__module__.rsplit(".", 1)[-1] + ".py", type(w).__name__) for w in STRATEGIES.values()}
    assert registered <= defined


@pytest.mark.parametrize("strategy", [WriteStrategy.MANUAL, WriteStrategy.VIEW], ids=lambda s: s.value)
def test_manual_and_view_have_no_write_class(strategy):
    valid = ", ".join(s.value for s in STRATEGIES)
    with pytest.raises(ValueError, match=re.escape(f"no managed write for strategy '{strategy.value}'; valid: {valid}")):
        strategy_for(strategy)


@pytest.mark.parametrize("strategy", MANAGED, ids=lambda s: s.value)
@pytest.mark.parametrize("partitions", [(), ("2024-01-01",)], ids=["whole", "slice"])
def test_each_strategy_answers_plan_describe_and_scope(strategy, partitions):
    write = strategy_for(strategy)
    if partitions and write.whole_table_only:
        partitions = ()
    spec = _spec(strategy)
    target = WriteTarget.from_spec(spec, "/lake/s/t", CommitStamp("r1", "s/t"), partitions)
    assert target.strategy is strategy and target.key == spec.key
    for columns in (None, ["id", "v"]):
        plan = write.plan(target, columns)
        assert isinstance(plan, WritePlan) and plan.operation and plan.statement
    description = write.describe(spec)
    assert description.startswith(strategy.value)
    assert write.test_scope(bool(partitions)).startswith("the ")


def test_descriptions_name_the_options():
    spec = MaterializeSpec(TableUri("s", "t"), WriteStrategy.HISTORY, ("id",), ("tier",), close_deletes=True)
    assert strategy_for(WriteStrategy.HISTORY).describe(spec) == (
        "history on key (id), track tier, deletes close, versions start at the run's time"
    )
    soft = MaterializeSpec(TableUri("s", "t"), WriteStrategy.HISTORY, ("id",), valid_from="updated_at")
    assert strategy_for(WriteStrategy.HISTORY).describe(soft) == (
        "history on key (id), track every non-key column, deletes soft (absent keys stay current), "
        "versions start at updated_at"
    )
    merge = MaterializeSpec(TableUri("s", "t"), WriteStrategy.MERGE, ("region", "id"))
    assert strategy_for(WriteStrategy.MERGE).describe(merge) == "merge on key (region, id)"
    assert strategy_for(WriteStrategy.APPEND).describe(_spec(WriteStrategy.APPEND)) == "append"


def test_options_are_the_strategies_own():
    assert set(OPTIONS_BY_STRATEGY) == set(WriteStrategy)
    takes = {s.value: {f.name for f in dataclasses.fields(c)} for s, c in OPTIONS_BY_STRATEGY.items()}
    assert {s for s, fields in takes.items() if "key" in fields} == {"merge", "history"}
    assert {s for s, fields in takes.items() if "track" in fields} == {"history"}
    assert {s.value for s, w in STRATEGIES.items() if w.whole_table_only} == {"history"}
    assert {s.value for s, w in STRATEGIES.items() if w.current_view} == {"history"}
    assert strategy_for(WriteStrategy.HISTORY).test_scope(False) == "the current rows"
    assert strategy_for(WriteStrategy.REPLACE).test_scope(True) == "the slice"


def test_writes_imports_no_dagster_facing_module_and_no_strategy_imports_another():
    """``writes/`` is pure Spark/Delta; strategies share ``sql.py``/``base.py``, not each other."""
    facing = {"assetlake_dagster.defs.partitions", "assetlake_dagster.defs.assets", "assetlake_dagster.run.asset_io",
              "assetlake_dagster.defs.io_manager", "assetlake_dagster.run.data_tests", "assetlake_dagster.defs.checks", "dagster"}
    strategy_modules = {f"assetlake_dagster.writes.{m[:-3]}" for m in _strategy_classes()}
    for name in os.listdir(WRITES_DIR):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(WRITES_DIR, name), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not imported & facing, (name, imported & facing)
        own = f"assetlake_dagster.writes.{name[:-3]}"
        if own in strategy_modules:
            assert not (imported & strategy_modules) - {own}, (name, imported & strategy_modules)
