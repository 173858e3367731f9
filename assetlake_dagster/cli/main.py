"""The ``assetlake`` command line.

Subcommands are registered in :func:`_build_parser` (arguments) and :data:`COMMANDS`
(handler returning the exit code), so adding one touches exactly those two places::

    assetlake validate pipelines/
    assetlake plan pipelines/customers.sql [--partition 2024-01-01]
    assetlake backfill staging/orders --from 2024-01-01 --to 2024-03-01 [--missing] [--arg min_amount=10]
    assetlake restore delta://staging/orders --version 3
    assetlake published daily_sales [--publish N]
    assetlake check analytics/customers [--partition K]
    assetlake engine start|status|stop [--lake-root DIR] [--jdbc [PORT]]
    assetlake jdbc [--port 10000]
"""

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Optional

from assetlake_dagster.errors import AssetlakeError, ConfigError, ProjectError
from assetlake_dagster.project.load import load_project, parse_file
from assetlake_dagster.spark.jdbc_endpoint import DEFAULT_JDBC_PORT, JDBC_PORT_ENV


def _validate(args: argparse.Namespace) -> int:
    from assetlake_dagster.cli.sql_test_run import project_tests

    try:
        project = load_project(args.project_dir)
        tests, problems = project_tests(args.project_dir, project.assets)
        if problems:
            raise ProjectError(problems)
    except AssetlakeError as err:
        print(err, file=sys.stderr)
        return 1
    seeds = f", {len(project.seeds)} seed{'s' if len(project.seeds) != 1 else ''}" if project.seeds else ""
    unit = f", {len(tests)} SQL test{'s' if len(tests) != 1 else ''}" if tests else ""
    print(f"ok: {len(project.assets)} assets{seeds}, {len(project.external)} external tables{unit} in {args.project_dir}")
    return 0


def _plan(args: argparse.Namespace) -> int:
    from assetlake_dagster.lake.root import Lake, default_lake_root
    from assetlake_dagster.cli.planning import render_plan

    if args.changed:
        return _plan_changed(args)
    if args.file is None:
        print("assetlake plan: name a FILE, or --changed for the whole project", file=sys.stderr)
        return 2

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
        print(render_plan(spec, Lake(args.lake_root or default_lake_root()), partition=args.partition))
    except AssetlakeError as err:
        print(err, file=sys.stderr)
        return 1
    return 0


def _plan_changed(args: argparse.Namespace) -> int:
    """The project's assets whose code differs from what the lake (or the prod lake a dev
    lake defers to) last ran, and what they make stale downstream."""
    from assetlake_dagster.cli.code_changes import code_changes
    from assetlake_dagster.lake.root import DEFER_ENV
    from assetlake_dagster.demo import DEMO_PROJECT_DIR
    from assetlake_dagster.lake.root import Lake, default_lake_root

    project_dir = args.project_dir or os.environ.get("ASSETLAKE_PROJECT_DIR") or DEMO_PROJECT_DIR
    root = args.against or os.environ.get(DEFER_ENV) or args.lake_root or default_lake_root()
    try:
        project = load_project(project_dir, load_python_files=False)
    except AssetlakeError as err:
        print(err, file=sys.stderr)
        return 1
    assets = [(s.uri, os.path.relpath(s.path, project_dir), s.code_version, [u.uri for u in s.upstreams]) for s in project.assets]
    assets += [(seed.uri, os.path.relpath(seed.path, project_dir), seed.code_version, []) for seed in project.seeds]
    lake = Lake(root)
    print(code_changes(lake, assets).render(lake.root))
    return 0


def _project_asset(args: argparse.Namespace):
    """The project's definitions (``--project-dir``, else the code location's) and ``ASSET``'s key."""
    import dagster as dg

    from assetlake_dagster.defs.build import build_definitions
    from assetlake_dagster.demo import DEMO_PROJECT_DIR

    project_dir = args.project_dir or os.environ.get("ASSETLAKE_PROJECT_DIR") or DEMO_PROJECT_DIR
    defs = build_definitions(project_dir, lake_root=args.lake_root)
    key = dg.AssetKey.from_user_string(args.asset)
    if key not in defs.resolve_asset_graph().get_all_asset_keys():
        raise AssetlakeError(f"no asset {args.asset} in the project. Name it as <schema>/<table>.")
    return defs, key


def _backfill(args: argparse.Namespace) -> int:
    from assetlake_dagster.cli.backfill import run_backfill
    from assetlake_dagster.defs.run_config import sql_run_config

    try:
        defs, key = _project_asset(args)
        # Every --arg is checked here, before any run or Spark session starts.
        run_config = sql_run_config(defs, {key: _argument_values(args.arg)})
        with _instance() as instance:
            report = run_backfill(
                defs,
                key,
                args.start,
                args.end,
                instance=instance,
                missing_only=args.missing,
                batch_size=args.batch,
                run_config=run_config or None,
                force=args.force,
            )
    except AssetlakeError as err:
        print(err, file=sys.stderr)
        return 1
    succeeded = len(report.succeeded)
    print(f"{succeeded} run{'s' if succeeded != 1 else ''} succeeded, {len(report.failed)} failed")
    return 0 if report.ok else 1


def _argument_values(pairs: Sequence[str]) -> dict[str, str]:
    """``--arg NAME=VALUE`` options -> ``{NAME: VALUE}`` (the values are still text)."""
    values: dict[str, str] = {}
    problems = []
    for pair in pairs:
        name, equals, value = pair.partition("=")
        name = name.strip()
        if not equals or not name:
            problems.append(f"--arg {pair!r} is not NAME=VALUE. Write it as e.g. --arg top_n=5.")
        elif name in values:
            problems.append(f"--arg {name} is given twice. Give each argument once.")
        else:
            values[name] = value
    if problems:
        raise ConfigError("\n".join(problems))
    return values


def _check(args: argparse.Namespace) -> int:
    import dagster as dg

    from assetlake_dagster.cli.check_runner import run_checks

    try:
        defs, key = _project_asset(args)
        with _instance() as instance:
            results = run_checks(defs, key, instance=instance, partition=args.partition)
    except AssetlakeError as err:
        print(err, file=sys.stderr)
        return 1
    failed = 0
    for r in results:
        blocking = r.severity == dg.AssetCheckSeverity.ERROR
        failed += 0 if r.passed or not blocking else 1
        count = r.metadata.get("failing")
        samples = r.metadata.get("samples")
        detail = "" if r.passed else f": {count.value if count else '?'} failing" + (f", e.g. {', '.join(samples.value)}" if samples else "")
        print(f"{'PASS' if r.passed else ('FAIL' if blocking else 'WARN')} {r.check_name}{detail}")
    if not results:
        print("no check ran (is the table materialized?)", file=sys.stderr)
        return 1
    return 1 if failed else 0


def _instance():
    import dagster as dg

    if os.environ.get("DAGSTER_HOME"):
        return dg.DagsterInstance.get()
    print("DAGSTER_HOME is not set: the runs are not recorded for the UI.", file=sys.stderr)
    return dg.DagsterInstance.ephemeral()


def _restore(args: argparse.Namespace) -> int:
    from assetlake_dagster.defs.resources import SparkDeltaResource
    from assetlake_dagster.lake.restore import restore_table
    from assetlake_dagster.spec import TableUri

    try:
        uri = TableUri.parse(args.table)
    except ValueError as err:
        print(f"{args.table}: {err}", file=sys.stderr)
        return 1
    resource = SparkDeltaResource(lake_root=args.lake_root)
    try:
        version = restore_table(resource.get_session(), resource.lake, uri, args.version)
    except AssetlakeError as err:
        print(err, file=sys.stderr)
        return 1
    print(f"{uri} restored to its version {args.version} as new version {version}")
    return 0


def _published(args: argparse.Namespace) -> int:
    from assetlake_dagster.defs.resources import SparkDeltaResource
    from assetlake_dagster.lake.publish_log import pick_publish, publishes
    from assetlake_dagster.spec import TableUri

    resource = SparkDeltaResource(lake_root=args.lake_root)
    found = publishes(resource.get_session(), resource.lake, args.group)
    try:
        publish = pick_publish(found, args.group, resource.lake, args.publish)
    except AssetlakeError as err:
        print(err, file=sys.stderr)
        return 1
    print(
        f"publish group '{args.group}': publish {publish.number} of {len(found)}, run {publish.run_id}, "
        f"published {publish.published_at:%Y-%m-%d %H:%M:%S}"
    )
    for name, version in publish.versions.items():
        table = TableUri.parse(name)
        print(f"  {name}  version {version}  SELECT * FROM {table.sql_name} VERSION AS OF {version}")
    return 0


def _table_uri(text: str):
    from assetlake_dagster.spec import TableUri

    try:
        return TableUri.parse(text)
    except ValueError as err:
        raise ConfigError(f"{text}: {err}. Name the table as delta://<schema>/<table>.") from err


def _optimize(args: argparse.Namespace) -> int:
    from assetlake_dagster.lake.maintenance import optimize_table

    return _maintain_table(args, lambda uri, resource: optimize_table(resource.get_session(), resource.lake, uri))


def _vacuum(args: argparse.Namespace) -> int:
    from assetlake_dagster.defs.build import build_definitions
    from assetlake_dagster.defs.maintenance_jobs import ProjectAssets, guarded_vacuum

    def vacuum(uri, resource):
        # The scheduled job's path (maintenance.guarded_vacuum), with this project's assets.
        project_dir = args.project_dir or os.environ.get("ASSETLAKE_PROJECT_DIR")
        project = (
            ProjectAssets.of(build_definitions(project_dir, lake_root=args.lake_root))
            if project_dir
            else ProjectAssets.unknown("no project names the inputs that pin versions; give it with --project-dir <folder> (or $ASSETLAKE_PROJECT_DIR)")
        )
        with _instance() as instance:
            return guarded_vacuum(resource.get_session(), resource.lake, uri, args.retain, instance, project)

    return _maintain_table(args, vacuum)


def _maintain_table(args: argparse.Namespace, run: Callable) -> int:
    """Run one maintenance operation on ``args.table``; print its summary or the refusal."""
    from assetlake_dagster.defs.resources import SparkDeltaResource

    try:
        uri = _table_uri(args.table)
        result = run(uri, SparkDeltaResource(lake_root=args.lake_root))
    except AssetlakeError as err:
        print(err, file=sys.stderr)
        return 1
    print(result.summary(uri))
    return 0


def _catalog(args: argparse.Namespace) -> int:
    from assetlake_dagster.defs.build import build_definitions
    from assetlake_dagster.cli.catalog_sync import sync_catalog
    from assetlake_dagster.demo import DEMO_PROJECT_DIR
    from assetlake_dagster.defs.resources import SparkDeltaResource
    from assetlake_dagster.project.load import load_project
    from assetlake_dagster.spec import WriteStrategy

    project_dir = args.project_dir or os.environ.get("ASSETLAKE_PROJECT_DIR") or DEMO_PROJECT_DIR
    resource = SparkDeltaResource(lake_root=args.lake_root)
    try:
        print(f"catalog: {resource.catalog_settings().describe()}; lake: {resource.lake.root}")
        defs = build_definitions(project_dir, lake_root=args.lake_root)
        views = [s for s in load_project(project_dir, load_python_files=False).assets if s.materialize.strategy is WriteStrategy.VIEW]
        lines = sync_catalog(resource.get_session(), resource.lake, defs, views)
    except AssetlakeError as err:
        print(err, file=sys.stderr)
        return 1
    for line in lines:
        print(line.render())
    return 0


def _setup(args: argparse.Namespace) -> int:
    from assetlake_dagster.spark.setup import main as setup_main

    return setup_main(with_s3="s3" in (args.with_ or []), check=args.check, archive=args.archive)


def _engine(args: argparse.Namespace) -> int:
    import datetime as dt

    from assetlake_dagster.defs.resources import SparkDeltaResource

    resource = SparkDeltaResource(
        lake_root=args.lake_root, jdbc_port=args.jdbc, jdbc_host=args.jdbc_host, jdbc_allow_remote=args.allow_remote or None
    )
    try:
        if args.action != "start" and args.jdbc is not None:
            raise ConfigError(f"--jdbc applies to `assetlake engine start`, not `{args.action}`.")
        mode = resource.resolved_mode()
        engine = resource.engine()
        if args.action == "start":
            if mode != "engine":
                print(f"note: this environment runs Spark in {mode} mode; the engine serves mode 'engine'.", file=sys.stderr)
            state = resource.engine_state()
        elif args.action == "stop":
            state = engine.stop()
            if state is None:
                print(f"no warm engine is running for {resource.lake.root}")
                return 0
            print(f"stopped the warm engine at {state.display_url} (pid {state.supervisor_pid}); log: {state.log_path}")
            return 0
        else:
            state = engine.status()
            if state is None:
                print(f"no warm engine is running for {resource.lake.root} (state: {engine.state_dir}; "
                      f"log: {engine.log_path})")
                return 3
    except AssetlakeError as err:
        print(err, file=sys.stderr)
        return 1
    started = dt.datetime.fromtimestamp(state.started_at).isoformat(timespec="seconds")
    print(
        f"warm engine at {state.display_url}\n"
        f"  lake:         {resource.lake.root}\n"
        f"  pid:          {state.supervisor_pid} (Spark server pid {state.server_pid})\n"
        f"  master:       {state.master}\n"
        f"  started:      {started}\n"
        f"  idle timeout: {state.idle_timeout:.0f} s\n"
        f"  catalog:      {state.catalog}\n"
        f"  jdbc:         {state.jdbc.url if state.jdbc else 'none (assetlake jdbc, ASSETLAKE_JDBC_PORT)'}\n"
        f"  state:        {engine.state_path}\n"
        f"  log:          {state.log_path}"
    )
    return 0


def _jdbc(args: argparse.Namespace) -> int:
    from assetlake_dagster.defs.resources import SparkDeltaResource
    from assetlake_dagster.cli.jdbc import serve_jdbc

    port = args.port if args.port is not None or os.environ.get(JDBC_PORT_ENV) else DEFAULT_JDBC_PORT
    resource = SparkDeltaResource(
        lake_root=args.lake_root, jdbc_port=port, jdbc_host=args.host, jdbc_allow_remote=args.allow_remote or None
    )
    try:
        return serve_jdbc(resource, standalone=args.standalone)
    except AssetlakeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


def _demo(args: argparse.Namespace) -> int:
    import datetime as dt

    from assetlake_dagster.demo import landing
    from assetlake_dagster.lake.delta_log import DeltaLog
    from assetlake_dagster.defs.resources import SparkDeltaResource

    resource = SparkDeltaResource(lake_root=args.lake_root)
    table = resource.lake.table_path(landing.LANDING_TABLE)
    if args.seed and landing.landing_exists(resource.lake):
        print(f"{landing.LANDING_TABLE} already exists at {table}; nothing to seed")
        return 0  # checked before Spark starts: a restart of scripts/dev.sh stays fast
    try:
        day = dt.date.fromisoformat(args.day) if args.day else None
    except ValueError:
        print(f"--day {args.day}: not a date. Write it as YYYY-MM-DD, e.g. 2024-03-05.", file=sys.stderr)
        return 2
    try:
        spark = resource.get_session()
        if args.seed:
            rows = landing.seed(spark, resource.lake)
            first, last = landing.SEED_DAYS
            print(f"seeded {landing.LANDING_TABLE} with {rows} payments from {first} to {last} at {table}")
        else:
            day, rows = landing.land(spark, resource.lake, day)
            version = DeltaLog.open(table, resource.lake.files).latest_version
            print(
                f"landed {rows} payments of {day} in {landing.LANDING_TABLE} "
                f"(one Delta commit, version {version}) at {table}"
            )
    except AssetlakeError as err:
        print(err, file=sys.stderr)
        return 1
    return 0


#: Subcommand name → handler; a handler returns the process exit code.
def _test(args: argparse.Namespace) -> int:
    import time

    from assetlake_dagster.cli.sql_test_run import load_sql_tests, run_sql_tests

    from assetlake_dagster.demo import DEMO_PROJECT_DIR

    paths = args.paths or [os.environ.get("ASSETLAKE_PROJECT_DIR") or DEMO_PROJECT_DIR]
    try:
        cases = load_sql_tests(paths)
    except AssetlakeError as err:
        print(err, file=sys.stderr)
        return 2
    if not cases:
        print(f"no SQL tests in {', '.join(paths)}: write them in <name>.tests.yml beside <name>.sql", file=sys.stderr)
        return 2
    files = len({c.sql_path for c in cases})
    print(f"{len(cases)} test{'s' if len(cases) != 1 else ''} of {files} SQL file{'s' if files != 1 else ''}; starting a local Spark session", flush=True)
    started = time.monotonic()
    spark = _test_session()
    print(f"session ready in {time.monotonic() - started:.1f} s", flush=True)
    started = time.monotonic()
    try:
        results = run_sql_tests(spark, cases)
    except AssetlakeError as err:
        print(err, file=sys.stderr)
        return 2
    for result in results:
        print(result.render(), flush=True)
    failed = sum(not r.passed for r in results)
    print(f"{len(results) - failed} passed, {failed} failed in {time.monotonic() - started:.1f} s")
    return 1 if failed else 0


def _test_session():
    """A local Spark session of this process, its catalog in a throwaway folder: the tests
    read temporary views only and write nothing."""
    import tempfile

    from assetlake_dagster.spark.session import build_spark_session

    warehouse = tempfile.mkdtemp(prefix="assetlake-test-")
    return build_spark_session(master="local[1]", app_name="assetlake test", warehouse_dir=warehouse)


def _diff(args: argparse.Namespace) -> int:
    from pyspark.errors import PySparkException

    from assetlake_dagster.lake.root import Lake
    from assetlake_dagster.lake.row_diff import diff_table
    from assetlake_dagster.defs.resources import SparkDeltaResource

    try:
        uri = _table_uri(args.table)
        key = tuple(k for k in args.key.split(",") if k) if args.key is not None else _table_key(args, uri)
        resource = SparkDeltaResource(lake_root=args.lake_root)
        other = Lake(args.against) if args.against else None
        diff = diff_table(
            resource.get_session(),
            uri,
            resource.lake.table_path(uri),
            key,
            from_version=args.start,
            to_version=args.end,
            against_path=other.table_path(uri) if other else None,
            against_label=args.against or "",
            sample=args.sample,
        )
    except AssetlakeError as err:
        print(err, file=sys.stderr)
        return 1
    except PySparkException as err:
        print(f"{args.table}: Spark could not read a version: {str(err).splitlines()[0]}", file=sys.stderr)
        return 1
    print(diff.render())
    return 0


def _table_key(args: argparse.Namespace, uri) -> tuple[str, ...]:
    """The columns that identify a row of ``uri``, from the write contract of the project's
    asset that writes it: a merge's or seed's key, a history table's key and ``valid_from``
    (one row per version); none for other tables, or a table the project does not write."""
    from assetlake_dagster.defs.build import build_definitions
    from assetlake_dagster.demo import DEMO_PROJECT_DIR
    from assetlake_dagster.spec import VALID_FROM, MaterializeSpec, WriteStrategy, contract_table

    project_dir = args.project_dir or os.environ.get("ASSETLAKE_PROJECT_DIR") or DEMO_PROJECT_DIR
    defs = build_definitions(project_dir, lake_root=args.lake_root)
    for node in defs.resolve_asset_graph().asset_nodes:
        if contract_table(node.metadata) == uri:
            spec = MaterializeSpec.from_metadata(node.metadata)
            if spec.strategy is WriteStrategy.HISTORY:
                return (*spec.key, VALID_FROM)
            return spec.key if spec.strategy is WriteStrategy.MERGE else ()
    return ()


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "validate": _validate,
    "plan": _plan,
    "test": _test,
    "diff": _diff,
    "backfill": _backfill,
    "restore": _restore,
    "published": _published,
    "optimize": _optimize,
    "vacuum": _vacuum,
    "check": _check,
    "catalog": _catalog,
    "engine": _engine,
    "jdbc": _jdbc,
    "demo": _demo,
    "setup": _setup,
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
    test = commands.add_parser(
        "test",
        help="run the SQL unit tests (<name>.tests.yml beside <name>.sql) on a local Spark session, no lake",
        description="Run each test's SQL over its given rows (temporary views) and compare the rows it returns "
        "with the expected ones; print a diff for each failure. PATH is a project folder, a SQL file or a "
        "tests file (default: $ASSETLAKE_PROJECT_DIR or the demo). Exit 1 if a test fails, 2 if a "
        "test or SQL file has mistakes.",
    )
    test.add_argument("paths", metavar="PATH", nargs="*", help="folders, SQL files or *.tests.yml files")
    plan = commands.add_parser(
        "plan",
        help="print the SQL, Delta operation and predicate a file would run, writing nothing",
        description="Show what materializing FILE would do: its query, setup statements, the Delta "
        "operation with its MERGE/WRITE statement, and the target path. Runs nothing.",
    )
    plan.add_argument("file", metavar="FILE", nargs="?", default=None, help="an annotated SQL file")
    plan.add_argument(
        "--changed",
        action="store_true",
        help="instead: list the project's assets whose file changed against what the lake last ran "
        "(--against, else $ASSETLAKE_DEFER_TO, else --lake-root), and what they make stale downstream",
    )
    plan.add_argument("--against", default=None, metavar="LAKE_ROOT", help="with --changed: the lake to compare with (e.g. prod)")
    plan.add_argument("--project-dir", default=None, help="with --changed: the SQL folder (default: $ASSETLAKE_PROJECT_DIR or the demo)")
    plan.add_argument(
        "--lake-root", default=None, help="lake root for the target path (default: $ASSETLAKE_LAKE_ROOT or .assetlake/lake)"
    )
    plan.add_argument("--partition", default=None, help="show the write of this partition key")
    backfill = commands.add_parser(
        "backfill",
        help="materialize a partition range of one asset, in batches (one run and one commit each)",
        description="Run ASSET's partitions from --from to --to (inclusive) in batches of the asset's "
        "batch= size, one Dagster run and one Delta commit per batch, recorded in $DAGSTER_HOME. A failed "
        "batch does not stop the others. Exit 1 if any batch failed.",
    )
    backfill.add_argument("asset", metavar="ASSET", help="the asset key as <schema>/<table>")
    backfill.add_argument("--from", dest="start", default=None, help="first partition key (default: the first)")
    backfill.add_argument("--to", dest="end", default=None, help="last partition key, inclusive (default: the last)")
    backfill.add_argument("--missing", action="store_true", help="only partitions without a materialization")
    backfill.add_argument("--batch", type=int, default=None, help="partitions per run (default: the asset's batch=)")
    backfill.add_argument(
        "--force",
        action="store_true",
        help="run every batch, even one whose inputs did not change since its partitions' last run (tag assetlake/force)",
    )
    backfill.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a value for the SQL file's '-- $NAME (type)' argument, in every run (repeat for more)",
    )
    backfill.add_argument("--project-dir", default=None, help="the SQL folder (default: $ASSETLAKE_PROJECT_DIR or the demo)")
    backfill.add_argument("--lake-root", default=None, help="the lake root (default: $ASSETLAKE_LAKE_ROOT or .assetlake/lake)")
    diff = commands.add_parser(
        "diff",
        help="the schema diff and the rows added, removed and changed between two versions of a table",
        description="Compare TABLE at --from with TABLE at --to (default: the latest version and the one "
        "before it), or, with --against, the same table in another lake (e.g. prod) with this one. Rows are "
        "matched by the table's key (a merge's or seed's key=, a history table's key and valid_from, from "
        "--project-dir), else by --key, else whole. Prints counts and a few rows of each kind. Writes nothing.",
    )
    diff.add_argument("table", metavar="TABLE", help="delta://<schema>/<table>")
    diff.add_argument("--from", dest="start", type=int, default=None, metavar="V", help="the version to compare from")
    diff.add_argument("--to", dest="end", type=int, default=None, metavar="W", help="the version to compare to")
    diff.add_argument("--against", default=None, metavar="LAKE_ROOT", help="compare with the table in this lake (--from is its version)")
    diff.add_argument("--key", default=None, metavar="C1,C2", help="match rows by these columns ('' for whole rows)")
    diff.add_argument("--sample", type=int, default=5, help="rows shown of each kind (default 5)")
    diff.add_argument("--project-dir", default=None, help="the SQL folder, for the table's key (default: $ASSETLAKE_PROJECT_DIR or the demo)")
    diff.add_argument("--lake-root", default=None, help="the lake root (default: $ASSETLAKE_LAKE_ROOT or .assetlake/lake)")
    restore = commands.add_parser(
        "restore",
        help="restore a table to an earlier Delta version (a new commit; history is kept)",
        description="Run Delta's RESTORE on TABLE: its content becomes that of --version, as a new version.",
    )
    restore.add_argument("table", metavar="TABLE", help="delta://<schema>/<table>")
    restore.add_argument("--version", type=int, required=True, help="the Delta version to restore")
    restore.add_argument("--lake-root", default=None, help="the lake root (default: $ASSETLAKE_LAKE_ROOT or .assetlake/lake)")
    published = commands.add_parser(
        "published",
        help="show a publish group's tables as one of its publishes left them, to read them as a consistent set",
        description="Print the tables of a -- publish_with group's publish (default: its latest) and the Delta "
        "version each was left at, with the SQL that reads it as of that version. Publishes are numbered from 1.",
    )
    published.add_argument("group", metavar="GROUP", help="the group's name, as on its '-- publish_with' lines")
    published.add_argument("--publish", type=int, default=None, metavar="N", help="the publish to show (default: the latest)")
    published.add_argument("--lake-root", default=None, help="the lake root (default: $ASSETLAKE_LAKE_ROOT or .assetlake/lake)")
    optimize = commands.add_parser(
        "optimize",
        help="compact a table's small files (and cluster it by its cluster_by columns); changes no rows",
        description="Run Delta's OPTIMIZE on TABLE and print its files and bytes before and after. The commit "
        "changes no rows (dataChange=false): nothing downstream runs because of it.",
    )
    optimize.add_argument("table", metavar="TABLE", help="delta://<schema>/<table>")
    optimize.add_argument("--lake-root", default=None, help="the lake root (default: $ASSETLAKE_LAKE_ROOT or .assetlake/lake)")
    vacuum = commands.add_parser(
        "vacuum",
        help="delete the files of old versions, refused when a version still needed would lose them",
        description="Run Delta's VACUUM on TABLE, keeping the files of versions younger than --retain hours "
        "(default: the table's restore window, delta.deletedFileRetentionDuration, 7 days unless set). "
        "Refused, deleting nothing, when it would delete files of a version recorded by a materialization "
        "in $DAGSTER_HOME inside the window, read by a downstream's materialization, pinned by an input "
        "of the project (--project-dir, else $ASSETLAKE_PROJECT_DIR; without one, every readable version is "
        "kept) or current when a run still in flight started; the message names the oldest safe retention.",
    )
    vacuum.add_argument("table", metavar="TABLE", help="delta://<schema>/<table>")
    vacuum.add_argument("--retain", type=int, default=None, metavar="HOURS", help="keep versions younger than this")
    vacuum.add_argument(
        "--project-dir", default=None,
        help="the SQL folder, for inputs that pin a version (default: $ASSETLAKE_PROJECT_DIR)",
    )
    vacuum.add_argument("--lake-root", default=None, help="the lake root (default: $ASSETLAKE_LAKE_ROOT or .assetlake/lake)")
    check = commands.add_parser(
        "check",
        help="run an asset's data tests against its committed table (writes nothing)",
        description="Execute ASSET's asset checks on their own, on the table as committed (one partition's "
        "slice with --partition), recorded in $DAGSTER_HOME. Exit 1 if a blocking test fails.",
    )
    check.add_argument("asset", metavar="ASSET", help="the asset key as <schema>/<table>")
    check.add_argument("--partition", default=None, help="check this partition's slice")
    check.add_argument("--project-dir", default=None, help="the SQL folder (default: $ASSETLAKE_PROJECT_DIR or the demo)")
    check.add_argument("--lake-root", default=None, help="the lake root (default: $ASSETLAKE_LAKE_ROOT or .assetlake/lake)")
    catalog = commands.add_parser(
        "catalog",
        help="register the project's tables in the lake's catalog (ASSETLAKE_CATALOG) without running them",
        description="`sync` registers each table the project writes or reads that exists in the lake as an "
        "external Delta table at its path (no data is read or rewritten), with a history table's _current "
        "view. Runs do the same for the tables they write; sync catches up tables written before the catalog "
        "was chosen. A name that points at another location in a Hive metastore is refused, not re-pointed.",
    )
    catalog.add_argument("action", choices=("sync",))
    catalog.add_argument("--project-dir", default=None, help="the SQL folder (default: $ASSETLAKE_PROJECT_DIR or the demo)")
    catalog.add_argument("--lake-root", default=None, help="the lake root (default: $ASSETLAKE_LAKE_ROOT or .assetlake/lake)")
    engine = commands.add_parser(
        "engine",
        help="start, show or stop the lake's warm Spark engine",
        description="The warm engine is one local Spark Connect server with Delta per lake, started on first "
        "use by any run or command and stopped after its idle timeout ($ASSETLAKE_ENGINE_IDLE_TIMEOUT, default "
        "1800 s). `status` exits 3 when none runs.",
    )
    engine.add_argument("action", choices=("start", "status", "stop"))
    engine.add_argument("--lake-root", default=None, help="the lake root (default: $ASSETLAKE_LAKE_ROOT or .assetlake/lake)")
    engine.add_argument(
        "--jdbc", type=int, nargs="?", const=DEFAULT_JDBC_PORT, default=None, metavar="PORT",
        help=f"start: also serve JDBC on PORT (default {DEFAULT_JDBC_PORT}; needs ASSETLAKE_CATALOG=hive)",
    )
    _jdbc_address_arguments(engine, "--jdbc-host")
    jdbc = commands.add_parser(
        "jdbc",
        help="serve the lake's tables to JDBC/ODBC clients (BI tools, beeline) beside the runs, until Ctrl-C",
        description="Spark's Thrift JDBC server on the lake's Hive catalog (ASSETLAKE_CATALOG=hive), served by the "
        "lake's warm engine from its own JVM, so that clients read the tables while runs write them: an engine is "
        "started with it when none runs, and held until Ctrl-C. Every engine serves it when ASSETLAKE_JDBC_PORT is "
        "set where runs start. --standalone (or a lake whose runs do not use the engine) runs a server of its own "
        "instead, which needs the engine stopped. The server has no authentication of its own: it listens on "
        "loopback unless --allow-remote.",
    )
    jdbc.add_argument("--port", type=int, default=None, help=f"the JDBC port (default: $ASSETLAKE_JDBC_PORT, else {DEFAULT_JDBC_PORT})")
    _jdbc_address_arguments(jdbc, "--host")
    jdbc.add_argument("--standalone", action="store_true", help="a server of its own, not the engine's (the engine must be stopped)")
    jdbc.add_argument("--lake-root", default=None, help="the lake root (default: $ASSETLAKE_LAKE_ROOT or .assetlake/lake)")
    setup = commands.add_parser(
        "setup",
        help="fetch the Delta jars (and S3A's) and build the JVM archive, once per install",
        description="Fetch the Delta jars matching the installed delta-spark into ~/.cache/assetlake/jars "
        "($ASSETLAKE_JARS_DIR), and with --with s3 hadoop-aws and the AWS SDK bundle for s3a:// lakes "
        "($ASSETLAKE_S3_JARS_DIR), from Maven Central ($ASSETLAKE_MAVEN_REPO names a mirror), each checked "
        "against its SHA-1; then build the JVM class-data archive. What is on disk is kept. Exit 1 when "
        "--check finds something missing, 2 when a download fails.",
    )
    setup.add_argument("--with", dest="with_", action="append", choices=("s3",), help="also fetch S3A's jars (s3)")
    setup.add_argument("--check", action="store_true", help="report what is there and what is missing; fetch nothing")
    setup.add_argument("--no-archive", dest="archive", action="store_false", help="skip the JVM archive")
    demo = commands.add_parser(
        "demo",
        help="drop a day of payments into the demo's external landing table",
        description="`land` appends one day of synthetic payments to delta://landing/payments as one Delta "
        "commit (default: the day after the latest landed day): with `dagster dev` running, the watch sensor "
        "then materializes staging/payments for that day, and analytics/payment_reconciliation follows. "
        "`land --seed` creates the table with January and February when it does not exist.",
    )
    demo.add_argument("action", choices=("land",))
    demo.add_argument("--day", default=None, help="the day to land, YYYY-MM-DD (default: the next one)")
    demo.add_argument("--seed", action="store_true", help="create the table with Jan-Feb if it does not exist")
    demo.add_argument("--lake-root", default=None, help="the lake root (default: $ASSETLAKE_LAKE_ROOT or .assetlake/lake)")
    return parser


def _jdbc_address_arguments(parser: argparse.ArgumentParser, host_flag: str) -> None:
    parser.add_argument(
        host_flag, dest="jdbc_host" if host_flag == "--jdbc-host" else "host", default=None, metavar="HOST",
        help="the JDBC server's address (default: $ASSETLAKE_JDBC_HOST, else 127.0.0.1)",
    )
    parser.add_argument(
        "--allow-remote", action="store_true",
        help="allow an address other machines reach: the server has no authentication of its own",
    )


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
