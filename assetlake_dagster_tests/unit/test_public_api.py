"""The public API: exactly the names ``assetlake_dagster.__all__`` lists, each importable from the
package, covering every type the override points take (as dagster-dbt pins its surface).

``__all__`` is the one list: the package's re-exports must be exactly it, and the table of
docs/your-project.md must name exactly it, so adding or removing a public name is one
decision, made in ``assetlake_dagster/__init__.py``, that these tests hold everything else to.
"""

import ast
import inspect
import json
import os
import re
import subprocess
import sys
import typing

import pytest

import assetlake_dagster
from assetlake_dagster_tests.helpers import REPO

PUBLIC_API = list(assetlake_dagster.__all__)


def test_the_re_exports_are_exactly_all():
    """``__init__``'s ``from … import X as X`` lines, read from its source, name exactly
    ``__all__``'s names: one list, written twice side by side, never drifting."""
    tree = ast.parse(open(assetlake_dagster.__file__, encoding="utf-8").read())
    exported = [
        alias.asname for node in tree.body if isinstance(node, ast.ImportFrom)
        for alias in node.names if alias.asname == alias.name
    ]
    assert sorted(exported) == sorted(PUBLIC_API)
    assert len(set(PUBLIC_API)) == len(PUBLIC_API)


def test_the_docs_table_names_exactly_the_public_api():
    with open(os.path.join(REPO, "docs", "your-project.md"), encoding="utf-8") as f:
        text = f.read()
    table = text[text.index("| `build_definitions` |"):]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    named = [name for row in rows for name in re.findall(r"`([A-Za-z_]+)`", row.split("|")[1])]
    assert sorted(named) == sorted(PUBLIC_API)


@pytest.mark.parametrize("name", PUBLIC_API)
def test_each_public_name_imports_from_the_package_and_lives_in_it(name):
    namespace: dict = {}
    exec(f"from assetlake_dagster import {name}", namespace)  # the way a user writes it
    obj = namespace[name]
    home = obj.__module__
    assert home.startswith("assetlake_dagster.") and obj is getattr(sys.modules[home], name)


def test_the_package_exports_nothing_else():
    """Every public attribute is in ``__all__``: submodules (imported as a side effect) and
    ``__version__`` aside, a name re-exported without a listing would be public by accident."""
    public = {
        name for name, value in vars(assetlake_dagster).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert public == set(PUBLIC_API)


def _classes(annotation) -> typing.Iterator[type]:
    if isinstance(annotation, type):
        yield annotation
    for arg in typing.get_args(annotation):
        yield from _classes(arg)


def _signature_classes(func) -> set[type]:
    hints = typing.get_type_hints(func)
    return {cls for hint in hints.values() for cls in _classes(hint)}


def test_every_type_the_override_points_and_entry_points_take_is_exported():
    """A user who subclasses the translator, or calls an entry point, can import every
    assetlake type in its signature from the package."""
    functions = [
        member for name, member in inspect.getmembers(assetlake_dagster.AssetlakeTranslator, inspect.isfunction)
        if not name.startswith("_")
    ]
    functions += [assetlake_dagster.build_definitions, assetlake_dagster.load_project, assetlake_dagster.managed_write]
    ours = {
        cls for func in functions for cls in _signature_classes(func)
        if cls.__module__.split(".")[0] == "assetlake_dagster"
    }
    assert {"SqlAssetSpec", "TableUri"} <= {cls.__name__ for cls in ours}
    assert {cls.__name__ for cls in ours} <= set(PUBLIC_API)
    spec_fields = typing.get_type_hints(assetlake_dagster.SqlAssetSpec)
    assert spec_fields["materialize"] is assetlake_dagster.MaterializeSpec
    assert typing.get_type_hints(assetlake_dagster.MaterializeSpec)["strategy"] is assetlake_dagster.WriteStrategy


def test_importing_the_package_imports_no_engine_library():
    """``import assetlake_dagster`` runs in every code server and run: Dagster, not PySpark,
    pandas or sqlglot (runs and cold parses import those when they need them)."""
    heavy = ("pyspark", "pandas", "numpy", "pyarrow", "sqlglot", "deltalake", "delta")
    code = (
        "import json, sys, assetlake_dagster; "
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r}))))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.splitlines()[-1]) == []
