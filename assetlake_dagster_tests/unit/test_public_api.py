"""The public API: exactly the names ``assetlake_dagster.__all__`` lists, each importable from the
package, covering every type the override points take (as dagster-dbt pins its surface).

Adding or removing a public name is a decision: change ``__all__``, this list, and the table in
docs/your-project.md together.
"""

import inspect
import json
import subprocess
import sys
import typing

import pytest

import assetlake_dagster
from assetlake_dagster_tests.helpers import REPO

PUBLIC_API = [
    # Definitions
    "build_definitions",
    "AssetlakeProjectComponent",
    "sql_run_config",
    "load_project",
    "Project",
    "NeighbourTable",
    # The translator and what its methods take
    "AssetlakeTranslator",
    "SqlAssetSpec",
    "TableUri",
    "MaterializeSpec",
    "WriteStrategy",
    # Resource and IO manager
    "SparkDeltaResource",
    "DeltaIOManager",
    "managed_write",
    # Errors
    "AssetlakeError",
    "ConfigError",
    "KeyViolationError",
    "ProjectError",
    "WriteError",
]

#: Where each public name lives (users may rely on the package path only; this pins that the
#: re-export is the object itself, not a copy).
HOMES = {
    "build_definitions": "assetlake_dagster.defs.build",
    "AssetlakeProjectComponent": "assetlake_dagster.defs.component",
    "sql_run_config": "assetlake_dagster.defs.run_config",
    "load_project": "assetlake_dagster.project.load",
    "Project": "assetlake_dagster.project.load",
    "NeighbourTable": "assetlake_dagster.defs.neighbours",
    "AssetlakeTranslator": "assetlake_dagster.defs.translator",
    "SqlAssetSpec": "assetlake_dagster.spec.model",
    "TableUri": "assetlake_dagster.spec.names",
    "MaterializeSpec": "assetlake_dagster.spec.model",
    "WriteStrategy": "assetlake_dagster.spec.model",
    "SparkDeltaResource": "assetlake_dagster.run.resources",
    "DeltaIOManager": "assetlake_dagster.run.io_manager",
    "managed_write": "assetlake_dagster.run.io_manager",
    "AssetlakeError": "assetlake_dagster.errors",
    "ConfigError": "assetlake_dagster.errors",
    "KeyViolationError": "assetlake_dagster.errors",
    "ProjectError": "assetlake_dagster.errors",
    "WriteError": "assetlake_dagster.errors",
}


def test_all_is_pinned():
    assert assetlake_dagster.__all__ == PUBLIC_API
    assert set(HOMES) == set(PUBLIC_API)


@pytest.mark.parametrize("name", PUBLIC_API)
def test_each_public_name_imports_from_the_package(name):
    namespace: dict = {}
    exec(f"from assetlake_dagster import {name}", namespace)  # the way a user writes it
    obj = namespace[name]
    assert obj is getattr(sys.modules[HOMES[name]], name)
    assert obj.__module__ == HOMES[name]


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
