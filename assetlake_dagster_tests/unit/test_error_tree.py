"""One error tree: what the package raises on the user's behalf is an ``AssetlakeError``.

A user catches ``AssetlakeError`` (a ``dagster.Failure``) for anything assetlake refuses, and
the subclass says what kind: ``ProjectError``, ``ConfigError``, ``WriteError``,
``UsageError`` (also a ``ValueError``). This scan of the package's source lists every
``raise`` of a built-in exception or a bare ``dagster.Failure``; the ones that remain are
named below with why they never reach a user as they are.
"""

import ast
import builtins
import collections
import pathlib

import pytest

import assetlake_dagster
from assetlake_dagster.errors import AssetlakeError, ConfigError, ProjectError, UsageError, WriteError

PACKAGE = pathlib.Path(assetlake_dagster.__file__).parent
BUILT_IN = {name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)}

#: (module, exception): (how many, why it never reaches a user as it is).
KNOWN = {
    ("spec/names.py", "ValueError"): (4, "identifier and table-URI parsing: callers report a located ProjectError or a ConfigError"),
    ("spec/values.py", "ValueError"): (3, "argument literals and typed values: the grammar, bind_arguments and the SQL tests report them with the argument's name"),
    ("sql/target_predicate.py", "ValueError"): (4, "within= parsing: the grammar (located) and managed_write (UsageError) report it"),
    ("lake/delta_log.py", "ValueError"): (8, "a log action's shape: wrapped as DeltaLogUnreadableError; up_to= past the end is a caller's bug"),
    ("defs/watch/sensor.py", "ValueError"): (1, "a cursor that is not a JSON object: caught on the next line, the sensor starts over"),
    ("run/data_tests.py", "ValueError"): (1, "an internal invariant: only built-in kinds reach that function"),
    ("run/quarantine.py", "ValueError"): (1, "an internal invariant: the grammar lets only row-level kinds quarantine"),
    ("defs/partitions.py", "ValueError"): (1, "an internal invariant: only time-window kinds reach that function"),
    ("writes/slices.py", "ValueError"): (1, "an internal invariant: a partitioned write always has a key"),
    ("writes/layout.py", "AssertionError"): (1, "after a retry loop that always returns or raises: unreachable"),
    ("writes/retry.py", "AssertionError"): (1, "after a retry loop that always returns or raises: unreachable"),
    ("lake/files.py", "FileNotFoundError"): (1, "the object store's files answer as the os module does; callers catch OSError"),
    ("lake/files.py", "OSError"): (1, "the object store's files answer as the os module does; callers catch OSError"),
    ("cli/sql_test_run.py", "AssertionError"): (1, "assert_sql_tests_pass is for pytest: a failed assertion is its answer"),
    ("cli/main.py", "SystemExit"): (1, "the command line's exit code"),
}


def _raised() -> dict[tuple[str, str], list[int]]:
    found: dict[tuple[str, str], list[int]] = collections.defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Raise) or not isinstance(node.exc, ast.Call):
                continue
            func = node.exc.func
            if isinstance(func, ast.Name) and func.id in BUILT_IN:
                name = func.id
            elif isinstance(func, ast.Attribute) and func.attr == "Failure":
                name = "dagster.Failure"
            else:
                continue
            found[(str(path.relative_to(PACKAGE)), name)].append(node.lineno)
    return found


def test_every_raise_outside_the_tree_is_known_and_explained():
    found = _raised()
    unknown = {k: v for k, v in found.items() if k not in KNOWN}
    assert not unknown, "raise an AssetlakeError subclass instead (errors.py): " + "; ".join(
        f"{module}:{','.join(map(str, lines))} raises {name}" for (module, name), lines in sorted(unknown.items())
    )
    counts = {k: len(v) for k, v in found.items()}
    assert counts == {k: count for k, (count, _) in KNOWN.items()}, "update KNOWN: a known raise was added or removed"


@pytest.mark.parametrize("error", [ProjectError, ConfigError, WriteError, UsageError])
def test_the_kinds_are_one_tree_and_usage_errors_are_still_value_errors(error):
    assert issubclass(error, AssetlakeError)
    assert issubclass(UsageError, ValueError)
    raised = UsageError("managed_write('merge') needs key=[...] columns")
    assert isinstance(raised, ValueError) and str(raised) == "managed_write('merge') needs key=[...] columns"
