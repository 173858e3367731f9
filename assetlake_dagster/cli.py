"""The ``assetlake`` command line.

Subcommands are registered in :func:`_build_parser` (arguments) and :data:`COMMANDS`
(handler returning the exit code), so adding one touches exactly those two places::

    assetlake validate pipelines/
    assetlake plan pipelines/customers.sql
"""

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Optional

from assetlake_dagster.errors import AssetlakeError, ProjectError
from assetlake_dagster.project import load_project, parse_file


def _validate(args: argparse.Namespace) -> int:
    try:
        project = load_project(args.project_dir)
    except AssetlakeError as err:
        print(err, file=sys.stderr)
        return 1
    print(f"ok: {len(project.assets)} assets, {len(project.external)} external tables in {args.project_dir}")
    return 0


def _plan(args: argparse.Namespace) -> int:
    from assetlake_dagster.lake import Lake, default_lake_root
    from assetlake_dagster.planning import render_plan

    try:
        with open(args.file, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as err:
        print(f"{args.file}: cannot read the file: {err}", file=sys.stderr)
        return 1
    spec, problems = parse_file(args.file, text)
    if spec is None:
        print(ProjectError(problems), file=sys.stderr)
        return 1
    try:
        print(render_plan(spec, Lake(args.lake_root or default_lake_root())))
    except AssetlakeError as err:
        print(err, file=sys.stderr)
        return 1
    return 0


#: Subcommand name → handler; a handler returns the process exit code.
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "validate": _validate,
    "plan": _plan,
}


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="assetlake", description="Annotated Spark SQL files as Dagster assets with managed Delta writes."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="<command>")
    validate = commands.add_parser(
        "validate",
        help="check a folder of SQL files like the definitions loader does",
        description="Check every *.sql file under DIR; print every error, exit 1 if there is any.",
    )
    validate.add_argument("project_dir", metavar="DIR", help="the folder of annotated SQL files")
    plan = commands.add_parser(
        "plan",
        help="print the SQL, Delta operation and predicate a file would run, writing nothing",
        description="Show what materializing FILE would do: its query, setup statements, the Delta "
        "operation with its MERGE/WRITE statement, and the target path. Runs nothing.",
    )
    plan.add_argument("file", metavar="FILE", help="an annotated SQL file")
    plan.add_argument(
        "--lake-root", default=None, help="lake root for the target path (default: $ASSETLAKE_LAKE_ROOT or .assetlake/lake)"
    )
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the ``assetlake`` command line and return its exit code.

    Example:
        >>> main(["validate", "assetlake_dagster_tests/projects/basic"])  # doctest: +SKIP
        ok: 4 assets, 2 external tables in assetlake_dagster_tests/projects/basic
        0
    """
    args = _build_parser().parse_args(argv)
    return COMMANDS[args.command](args)


if __name__ == "__main__":
    raise SystemExit(main())
