"""docs/architecture.md and docs/contributing.md describe the package tree as it is.

* Every module of the package is named in architecture.md's module table: by its path
  (``defs/build.py``, ``writes/{replace,merge}.py``), or by its name in backticks on the row of
  its folder (``lake/``: ``catalog``, ``identity``…); every path the table names exists.
* contributing.md's layout names every folder and every module, and every path it writes exists.

The checkers are tried on small fixture pages first, so that a missing module is known to fail.
"""

import pathlib
import re

import assetlake_dagster
from assetlake_dagster_tests.helpers import REPO

PACKAGE = pathlib.Path(assetlake_dagster.__file__).parent
_TICKED = re.compile(r"`([^`]+)`")


def package_modules(root: pathlib.Path) -> set[str]:
    """The package's modules as paths from its root (``defs/watch/sensor.py``); a folder's
    ``__init__.py`` is the folder's, not a module of its own (the root's is)."""
    modules = {str(p.relative_to(root)) for p in root.rglob("*.py") if "__pycache__" not in p.parts}
    return {m for m in modules if m == "__init__.py" or not m.endswith("/__init__.py")}


def _expand(token: str) -> list[str]:
    match = re.fullmatch(r"(.*)\{([^}]*)\}(.*)", token)
    if match is None:
        return [token]
    head, options, tail = match.groups()
    return [f"{head}{option.strip()}{tail}" for option in options.split(",")]


def architecture_problems(page: str, modules: set[str], folders: set[str]) -> list[str]:
    """What the module table of ``page`` leaves out, or names that is not there."""
    named: set[str] = set()
    problems = []
    table = page[page.index("## Modules, one line each"):]
    for row in re.findall(r"^\| (.+?) \| (.+) \|$", table, re.M):
        first, description = row
        stems = set(_TICKED.findall(description))
        for token in (t for ticked in _TICKED.findall(first) for t in _expand(ticked)):
            if token.endswith("/") or "<" in token:  # a folder: its modules named in the row
                folder = token.rstrip("/") if token.endswith("/") else token.rsplit("/", 1)[0]
                if folder not in folders:
                    problems.append(f"architecture.md names {token}, which is not a folder of the package")
                named |= {m for m in modules if m.rsplit("/", 1)[0] == folder and m.rsplit("/", 1)[-1][:-3] in stems}
            elif token in modules:
                named.add(token)
            else:
                problems.append(f"architecture.md names {token}, which is not a module of the package")
    problems += [f"architecture.md's module table does not name {m}" for m in sorted(modules - named)]
    return problems


def layout_problems(page: str, modules: set[str], folders: set[str]) -> list[str]:
    """What the layout block of ``page`` leaves out, or writes that is not there."""
    block = re.search(r"## Layout\n.*?```\n(.*?)```", page, re.S).group(1)
    lines = [line.split("#", 1)[0] for line in block.splitlines()]
    text = "\n".join(line for line in lines if not line.startswith("assetlake_dagster_tests/")
                     and not line.startswith(("scripts/", "docs/")))
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    problems = [f"contributing.md's layout writes {path}, which is not in the package"
                for path in re.findall(r"\b([a-z_]+(?:/[a-z_]+)*\.py)\b", text)
                if path not in modules and not any(m.endswith("/" + path) for m in modules)]
    problems += [f"contributing.md's layout does not name the folder {f}/"
                 for f in sorted(folders) if f"{f}/" not in text and f"{f.rsplit('/', 1)[-1]}/" not in text]
    problems += [f"contributing.md's layout does not name {m}" for m in sorted(modules)
                 if m.rsplit("/", 1)[-1][:-3] not in words and m != "__init__.py"]
    return problems


def _folders(modules: set[str]) -> set[str]:
    return {m.rsplit("/", 1)[0] for m in modules if "/" in m}


def test_the_checkers_find_a_missing_and_a_made_up_module():
    modules = {"__init__.py", "defs/build.py", "defs/watch/sensor.py", "lake/root.py", "lake/files.py"}
    page = (
        "## Modules, one line each\n\n| module | owns |\n|---|---|\n"
        "| `defs/{build,gone}.py` | x |\n| `lake/` | `root` and more |\n| `__init__.py` | y |\n"
    )
    assert architecture_problems(page, modules, _folders(modules)) == [
        "architecture.md names defs/gone.py, which is not a module of the package",
        "architecture.md's module table does not name defs/watch/sensor.py",
        "architecture.md's module table does not name lake/files.py",
    ]
    layout = "## Layout\n\n```\n  defs/build.py  defs/old.py   # x\n  lake/ (root, files)\n```\n"
    assert layout_problems(layout, modules, _folders(modules)) == [
        "contributing.md's layout writes defs/old.py, which is not in the package",
        "contributing.md's layout does not name the folder defs/watch/",
        "contributing.md's layout does not name defs/watch/sensor.py",
    ]


def test_architecture_names_every_module_and_nothing_else():
    modules = package_modules(PACKAGE)
    page = (pathlib.Path(REPO) / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert architecture_problems(page, modules, _folders(modules)) == []


def test_the_contributing_layout_names_every_folder_and_module():
    modules = package_modules(PACKAGE)
    page = (pathlib.Path(REPO) / "docs" / "contributing.md").read_text(encoding="utf-8")
    assert layout_problems(page, modules, _folders(modules)) == []
