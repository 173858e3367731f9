"""The package's layers, held by its imports.

Bottom up: ``errors`` and ``spec`` (the model), ``sql`` (SQL text), ``annotations`` (the
grammar), ``project`` (the project model), ``lake`` and ``spark`` (side by side), ``writes``,
``defs`` (the Dagster definitions), ``run`` (what a run does), and on top ``cli``, ``demo``
and the root's ``__init__`` and ``definitions``. A module imports only its own layer and the
layers below, with two rules of their own:

- ``defs`` imports ``run`` only inside functions, when a run executes: loading the
  definitions imports nothing of ``run``;
- ``defs/dagster_internals`` (the one use of Dagster's private API) imports nothing of ours,
  so any layer may use it.

An import that breaks them fails here with its file, line and import.
"""

import ast
import collections
import pathlib

import assetlake_dagster

PACKAGE = pathlib.Path(assetlake_dagster.__file__).parent
ROOT = "assetlake_dagster"
LEVELS = {
    "errors": 0, "spec": 0, "sql": 1, "annotations": 2, "project": 3, "lake": 4, "spark": 4, "writes": 5,
    "defs": 6, "run": 7, "cli": 8, "demo": 8, "__init__": 8, "definitions": 8,
}
ADAPTER = f"{ROOT}.defs.dagster_internals"


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(tree: ast.AST):
    """Each import of ours: (line, module, names, where), ``names`` what a ``from`` import
    takes (empty for ``import``), ``where`` one of ``load``, ``lazy`` (in a function or a
    class body's method) or ``typing`` (under ``if TYPE_CHECKING``)."""

    def visit(node, where):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield from visit(child, "lazy" if where == "load" else where)
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                yield from visit(child, "typing")
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                if child.module.split(".")[0] == ROOT:
                    yield child.lineno, child.module, [a.name for a in child.names], where
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] == ROOT:
                        yield child.lineno, alias.name, [], where
            else:
                yield from visit(child, where)

    yield from visit(tree, "load")


def _sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        module = ".".join((ROOT, *relative.with_suffix("").parts)).removesuffix(".__init__")
        yield str(relative), module, ast.parse(path.read_text(encoding="utf-8"))


def _broken(sources) -> list[str]:
    """Each import of ``sources`` that runs up a layer, as ``file:line: what``."""
    broken = []
    for relative, module, tree in sources:
        source = _layer(module)
        for line, imported, _, where in _imports(tree):
            target = _layer(imported)
            if imported.startswith(ADAPTER) or LEVELS[target] <= LEVELS[source]:
                continue
            if (source, target) == ("defs", "run") and where != "load":
                continue
            broken.append(f"{relative}:{line}: {source}/ imports {imported} ({target}/ is above it)")
    return broken


def test_the_layer_check_finds_an_import_up_a_layer():
    def source(relative, text):
        module = ".".join((ROOT, *pathlib.PurePath(relative).with_suffix("").parts))
        return relative, module, ast.parse(text)

    assert _broken([
        source("spec/a.py", "from assetlake_dagster.run.asset_io import write_output\n"),
        source("defs/b.py", "import assetlake_dagster.run.decision\n"),
        source("defs/c.py", "def f():\n    from assetlake_dagster.run.asset_io import write_output\n"),
        source("spec/d.py", "def f():\n    from assetlake_dagster.lake.root import Lake\n"),
        source("run/e.py", "from assetlake_dagster.defs.dagster_internals import output_run\n"),
        source("lake/f.py", "from assetlake_dagster.defs.dagster_internals import output_run\n"),
    ]) == [
        "spec/a.py:1: spec/ imports assetlake_dagster.run.asset_io (run/ is above it)",
        "defs/b.py:1: defs/ imports assetlake_dagster.run.decision (run/ is above it)",
        "spec/d.py:2: spec/ imports assetlake_dagster.lake.root (lake/ is above it)",
    ]


def test_every_import_keeps_to_the_layers():
    broken = _broken(_sources())
    assert not broken, "imports that run up a layer:\n" + "\n".join(broken)
    # The graph between packages, for the record (``pytest -s`` shows it).
    edges = collections.Counter(
        (_layer(module), _layer(imported))
        for _, module, tree in _sources()
        for _, imported, _, _ in _imports(tree)
        if _layer(imported) != _layer(module)
    )
    print("\nimports between packages (from -> to: count):")
    for (source, target), count in sorted(edges.items(), key=lambda e: (LEVELS[e[0][0]], e[0])):
        print(f"  {source} -> {target}: {count}")


#: The modules below ``defs`` that import Dagster, each with its reason; any other fails.
DAGSTER_BELOW_DEFS = {
    "errors.py": "AssetlakeError is a dagster.Failure, so a run shows its message and metadata",
    "annotations/partitioned.py": "a -- partitioned line is checked by building Dagster's own partitions",
    "annotations/freshness.py": "a cron freshness line is checked by building Dagster's policy",
    "project/python_assets.py": "a project's Python files hold Dagster assets, read for the tables they write",
    "project/seeds.py": "a seed's table is known by its Dagster asset key, as a Python asset's is",
}


def _imports_dagster(tree: ast.AST) -> bool:
    return any(
        (isinstance(n, ast.Import) and any(a.name.split(".")[0] == "dagster" for a in n.names))
        or (isinstance(n, ast.ImportFrom) and n.level == 0 and (n.module or "").split(".")[0] == "dagster")
        for n in ast.walk(tree)
    )


def test_below_the_definitions_only_the_listed_modules_import_dagster():
    below = [
        relative for relative, module, tree in _sources()
        if LEVELS[_layer(module)] < LEVELS["defs"] and _imports_dagster(tree)
    ]
    assert sorted(below) == sorted(DAGSTER_BELOW_DEFS)


def test_the_dagster_adapter_imports_nothing_of_ours():
    path = PACKAGE / "defs" / "dagster_internals.py"
    ours = [imported for _, imported, _, _ in _imports(ast.parse(path.read_text(encoding="utf-8")))]
    assert ours == []


def _circles(graph: dict[str, set[str]]) -> list[str]:
    """Each circle of ``graph`` found by a depth-first walk, as ``a -> b -> a``."""
    circles: list[str] = []
    state: dict[str, int] = {}

    def walk(module, path):
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                circles.append(" -> ".join(path[path.index(target):] + [target]))
            elif target not in state:
                walk(target, path + [target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module, [module])
    return circles


def test_the_circle_finder_finds_one():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a -> b -> c -> a"]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_at_load():
    """Module-level imports between our modules form no circle (a package's ``from pkg import
    submodule`` imports the submodule)."""
    modules = {module: tree for _, module, tree in _sources()}
    graph: dict[str, set[str]] = {module: set() for module in modules}
    for module, tree in modules.items():
        for _, imported, names, where in _imports(tree):
            if where == "load" and imported in modules:
                submodules = {f"{imported}.{name}" for name in names} & modules.keys()
                graph[module] |= submodules or {imported}
    graph = {m: {t for t in targets if t != m} for m, targets in graph.items()}
    assert _circles(graph) == []
