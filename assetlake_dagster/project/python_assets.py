"""A project folder's Python assets and the Delta tables they write.

``assetlake validate`` and the loader import the folder's ``*.py`` files the same way, so
both check the SQL files against the same Python assets (a table produced twice, a
``relationships`` test naming a table only Python writes).
"""

import importlib.util
import os
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional, Union

import dagster as dg

from assetlake_dagster.errors import Diagnostic, SourceLocation, display_path
from assetlake_dagster.spec import WRITE_METADATA_KEY, MaterializeSpec, TableUri, is_identifier

#: The kinds a Python asset whose output the Delta IO manager writes (it carries a write
#: contract) is shown with, beside its own.
PYTHON_KINDS = frozenset({"python", "spark", "delta"})

AssetLike = Union[dg.AssetsDefinition, dg.AssetSpec]


@dataclass(frozen=True)
class PythonAsset:
    """A Python asset and the file that defines it.

    Attributes:
        definition: the asset (or asset spec) as Dagster sees it.
        path: the project file it was found in; ``None`` when passed in code
            (``build_definitions(python_assets=...)``).
    """

    definition: AssetLike
    path: Optional[str] = None


@dataclass(frozen=True)
class PythonTable:
    """A Delta table a Python asset writes.

    Example:
        >>> table = PythonTable(TableUri("raw", "events"), dg.AssetKey(["raw", "events"]), "p/sources.py")
        >>> table.describe()
        'the Python asset raw/events in p/sources.py'
    """

    uri: TableUri
    key: dg.AssetKey
    path: Optional[str] = None
    kind: str = "Python asset"  # or "seed" (a CSV file, project/seeds.py)

    def describe(self) -> str:
        where = f"in {display_path(self.path)}" if self.path else "passed to build_definitions"
        return f"the {self.kind} {self.key.to_user_string()} {where}"


def import_python_files(project_dir: str) -> tuple[list[PythonAsset], list[Diagnostic]]:
    """Import each ``*.py`` file directly in ``project_dir`` and collect its assets.

    Files whose name starts with ``_`` are skipped (e.g. a ``_location.py`` that calls
    ``build_definitions`` itself). A file is imported once per process; a file that fails
    to import is a problem located at the failing line, not a traceback.

    Example:
        >>> assets, problems = import_python_files("assetlake_dagster_tests/projects/pipeline")  # doctest: +SKIP
        >>> [a.definition.key.to_user_string() for a in assets], problems  # doctest: +SKIP
        (['src/people'], [])
    """
    found: list[PythonAsset] = []
    problems: list[Diagnostic] = []
    for name in sorted(os.listdir(project_dir)):
        if not name.endswith(".py") or name.startswith("_"):
            continue
        path = os.path.abspath(os.path.join(project_dir, name))
        module_name = f"assetlake_project_{abs(hash(path))}_{name[:-3]}"
        module = sys.modules.get(module_name)
        if module is None:
            spec = importlib.util.spec_from_file_location(module_name, path)
            assert spec and spec.loader
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            try:
                spec.loader.exec_module(module)
            except Exception as err:  # the user's code: any error is theirs to fix
                del sys.modules[module_name]  # a later load imports the fixed file again
                problems.append(_import_problem(path, err))
                continue
        found.extend(
            PythonAsset(value, path)
            for value in vars(module).values()
            if isinstance(value, (dg.AssetsDefinition, dg.AssetSpec))
        )
    return found, problems


def python_tables(assets: Sequence[PythonAsset]) -> list[PythonTable]:
    """The Delta table each Python asset writes.

    The table is the one the write contract names (``managed_write(..., table=...)``),
    else the two-part key ``[schema, table]``. Assets with neither are not tables of this
    lake (another IO manager writes them) and are left out.

    Example:
        >>> asset = dg.AssetSpec(["raw", "events"])
        >>> [str(t.uri) for t in python_tables([PythonAsset(asset)])]
        ['delta://raw/events']
    """
    tables = []
    for asset in assets:
        definition = asset.definition
        specs = [definition] if isinstance(definition, dg.AssetSpec) else [
            definition.get_asset_spec(key) for key in definition.keys
        ]
        for spec in specs:
            path = spec.key.path
            default = TableUri(*path) if len(path) == 2 and all(map(is_identifier, path)) else None
            try:
                uri = MaterializeSpec.from_metadata(spec.metadata, default_uri=default).uri
            except ValueError:
                uri = default  # a bad contract fails at run time, in the IO manager, with its reason
            if uri is not None:
                tables.append(PythonTable(uri, spec.key, asset.path))
    return tables


def with_write_kinds(asset: AssetLike) -> AssetLike:
    """``asset`` with :data:`PYTHON_KINDS` added to each of its specs that carries a write
    contract (``managed_write``), its own kinds kept; others unchanged.

    Example:
        >>> spec = dg.AssetSpec(["raw", "events"], kinds={"pandas"}, metadata=managed_write("append"))  # doctest: +SKIP
        >>> sorted(with_write_kinds(spec).kinds)  # doctest: +SKIP
        ['delta', 'pandas', 'python', 'spark']
    """

    def add(spec: dg.AssetSpec) -> dg.AssetSpec:
        return spec.merge_attributes(kinds=set(PYTHON_KINDS)) if WRITE_METADATA_KEY in (spec.metadata or {}) else spec

    if isinstance(asset, dg.AssetSpec):
        return add(asset)
    return asset.map_asset_specs(add)


def python_reads(assets: Sequence[PythonAsset]) -> list[TableUri]:
    """The Delta tables the Python assets declare as upstreams (``ins=`` or ``deps=``).

    An upstream key ``[schema, table]`` names its table, as an asset key names the table a
    Python asset writes; upstreams with keys of other shapes are not tables of this lake.
    A table nothing in the project produces is an external table, watched like those the
    SQL reads.

    Example:
        >>> @dg.asset(key=["py", "report"], deps=[dg.AssetKey(["landing", "payments"])])
        ... def report(): ...
        >>> [str(uri) for uri in python_reads([PythonAsset(report)])]
        ['delta://landing/payments']
    """
    found: dict[TableUri, None] = {}
    for asset in assets:
        definition = asset.definition
        specs = [definition] if isinstance(definition, dg.AssetSpec) else [
            definition.get_asset_spec(key) for key in definition.keys
        ]
        for spec in specs:
            for dep in spec.deps:
                path = dep.asset_key.path
                if len(path) == 2 and all(map(is_identifier, path)):
                    found.setdefault(TableUri(*path))
    return list(found)


def _import_problem(path: str, err: Exception) -> Diagnostic:
    if isinstance(err, SyntaxError):
        line = err.lineno
    else:  # the deepest frame in the file itself: the line that raised, or called what did
        frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename == path]
        line = frames[-1].lineno if frames else None
    return Diagnostic(
        SourceLocation(display_path(path), line or 1),
        f"importing the file raised {type(err).__name__}: {err}".rstrip(".") + ".",
        "Fix it, or start the file name with '_' so that assetlake does not import it.",
    )
