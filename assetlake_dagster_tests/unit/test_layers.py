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

:data:`KNOWN` lists the imports that break the rules today, each to be removed; a new one
fails here with its file, line and import, and one removed asks for its line to go.
"""

import ast
import pathlib

import assetlake_dagster

PACKAGE = pathlib.Path(assetlake_dagster.__file__).parent
ROOT = "assetlake_dagster"
LEVELS = {
    "errors": 0, "spec": 0, "sql": 1, "annotations": 2, "project": 3, "lake": 4, "spark": 4, "writes": 5,
    "defs": 6, "run": 7, "cli": 8, "demo": 8, "__init__": 8, "definitions": 8,
}
ADAPTER = f"{ROOT}.defs.dagster_internals"
#: (importing file, imported module): imports that break the layers today, to be removed.
KNOWN = {
    # The definitions need the resource and IO manager classes, which live in run/.
    ("defs/assets.py", f"{ROOT}.run.resources"),
    ("defs/build.py", f"{ROOT}.run.io_manager"),
    ("defs/build.py", f"{ROOT}.run.resources"),
    ("defs/component.py", f"{ROOT}.run.io_manager"),
    ("defs/component.py", f"{ROOT}.run.resources"),
    ("defs/maintenance_jobs.py", f"{ROOT}.run.io_manager"),
    ("defs/maintenance_jobs.py", f"{ROOT}.run.resources"),
    ("defs/seed_assets.py", f"{ROOT}.run.io_manager"),
    # The data tests' outcomes, which the checks' specs and results are made from.
    ("defs/checks.py", f"{ROOT}.run.data_tests"),
    # A SQL test of a partitioned file builds its Dagster partitions and typed arguments.
    ("project/sql_tests.py", f"{ROOT}.defs.run_config"),
    ("project/sql_tests.py", f"{ROOT}.defs.partitions"),
}


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


def test_every_import_keeps_to_the_layers():
    broken, seen = [], set()
    for relative, module, tree in _sources():
        source = _layer(module)
        for line, imported, _, where in _imports(tree):
            target = _layer(imported)
            if imported.startswith(ADAPTER) or LEVELS[target] <= LEVELS[source]:
                continue
            if (source, target) == ("defs", "run") and where != "load":
                continue
            if (relative, imported) in KNOWN:
                seen.add((relative, imported))
                continue
            broken.append(f"{relative}:{line}: {source}/ imports {imported} ({target}/ is above it)")
    assert not broken, "imports that run up a layer:\n" + "\n".join(broken)
    assert seen == KNOWN, f"no longer imported, remove from KNOWN: {sorted(KNOWN - seen)}"


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
