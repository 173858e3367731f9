"""Layer 5: `pip install` of the built wheel, without extras, is enough for the default path.

A new user who installs the package into a clean virtualenv (no `scripts/setup.sh`, no
`[connect]` extra, no Delta jars on disk) and runs `dagster asset materialize` gets the
default warm engine: its Spark Connect client comes with the package, and the engine's Delta
jars come through Spark's own resolver (Maven Central, then its local Ivy cache).

The virtualenv is made with uv when `scripts/setup.sh` installed it (seconds, from uv's
cache, offline when the cache holds every dependency), else with `venv` and pip.
"""

import os
import shutil
import subprocess
import sys
from importlib.metadata import version

import deltalake
import pytest

from assetlake_dagster.lake.storage import S3Settings
from assetlake_dagster.spark.engine import WarmEngine
from assetlake_dagster_tests.helpers import REPO, cli_env
from assetlake_dagster_tests.s3_server import running_s3_server

SQL = """\
-- materialize delta://demo/numbers
SELECT id, id * 2 AS doubled FROM range(5)
"""
DEFS = """\
from assetlake_dagster import build_definitions

defs = build_definitions("project")
"""


def _run(args, **kwargs):
    proc = subprocess.run(args, capture_output=True, text=True, timeout=900, **kwargs)
    assert proc.returncode == 0, f"{args}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout + proc.stderr


def _clean_venv(folder, wheel):
    """A virtualenv with only the wheel and its dependencies (no extras); its python."""
    uv = os.path.join(os.path.dirname(sys.executable), "uv")
    python = os.path.join(folder, "bin", "python")
    if os.path.exists(uv):
        _run([uv, "venv", "--quiet", "--python", sys.executable, folder])
        install = [uv, "pip", "install", "--quiet", "--python", python, wheel]
        env = dict(os.environ, UV_NATIVE_TLS="1")
        # From the cache that setup filled: online, uv revalidates PySpark's source distribution
        # against the index and builds it again (30 s, 1 GB of cache, measured here).
        if subprocess.run([*install, "--offline"], capture_output=True, env=env, timeout=900).returncode != 0:
            _run(install, env=env)
    else:
        _run([sys.executable, "-m", "venv", folder])
        _run([python, "-m", "pip", "install", "--quiet", wheel])
    return python


@pytest.fixture(scope="module")
def clean_venv(tmp_path_factory):
    """The built wheel in a clean virtualenv (no extras): its python. Shared by the module's
    two tests (a virtualenv is about 1 GB of site-packages)."""
    folder = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(folder / "dist"), REPO])
    (wheel,) = [str(p) for p in (folder / "dist").glob("assetlake_dagster-*.whl")]
    python = _clean_venv(str(folder / "venv"), wheel)
    yield python
    shutil.rmtree(folder / "venv")


def test_the_wheel_without_extras_materializes_on_the_default_engine(tmp_path, clean_venv):
    python = clean_venv
    # Nothing of this checkout leaks in: the package imports from the new virtualenv.
    where = _run([python, "-c", "import assetlake_dagster, pyspark.sql.connect.session; print(assetlake_dagster.__file__)"],
                 cwd=str(tmp_path))
    assert where.strip().startswith(os.path.dirname(os.path.dirname(python))), where

    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "numbers.sql").write_text(SQL)
    (tmp_path / "defs.py").write_text(DEFS)
    (tmp_path / "home").mkdir()
    (tmp_path / "no-jars").mkdir()
    lake, engine_dir = tmp_path / "lake", str(tmp_path / "engine")
    env = cli_env(
        DAGSTER_HOME=str(tmp_path / "home"),
        ASSETLAKE_LAKE_ROOT=str(lake),
        ASSETLAKE_ENGINE_DIR=engine_dir,
        # No jars from scripts/setup.sh: the engine asks Spark's resolver for Delta.
        ASSETLAKE_JARS_DIR=str(tmp_path / "no-jars"),
        PYSPARK_PYTHON=python,
    )
    for name in ("PYTHONPATH", "VIRTUAL_ENV", "ASSETLAKE_PROJECT_DIR"):
        env.pop(name, None)
    dagster = os.path.join(os.path.dirname(python), "dagster")
    try:
        out = _run([dagster, "asset", "materialize", "-f", "defs.py", "--select", "demo/numbers"],
                   cwd=str(tmp_path), env=env)
        assert "RUN_SUCCESS" in out and "delta://demo/numbers: replace -> Delta version 0" in out, out[-3000:]
        assert "starting the warm Spark engine" in out, out[-3000:]
    finally:
        WarmEngine(engine_dir).stop()
    table = deltalake.DeltaTable(str(lake / "demo" / "numbers"))
    assert table.version() == 0
    assert sorted(table.to_pyarrow_table().to_pylist(), key=lambda r: r["id"]) == [
        {"id": i, "doubled": 2 * i} for i in range(5)
    ]
    assert not list((tmp_path / "no-jars").iterdir())  # the resolver, not a copy in the folder


WALKTHROUGH_ORDERS = """\
-- materialize delta://staging/orders key=order_id
SELECT id AS order_id, id % 3 AS customer_id, id * 1.5 AS amount FROM range(6)
"""
WALKTHROUGH_TOTALS = """\
-- materialize delta://mart/customer_totals
SELECT customer_id, sum(amount) AS total FROM staging.orders GROUP BY customer_id
"""


def test_the_pip_only_walkthrough_on_a_bucket_lake(tmp_path, clean_venv):
    """docs/your-project.md's pip-only walk-through, as its commands are written there:
    `create-dagster project`, `pip install` of the wheel, `assetlake setup --with s3`,
    `dg scaffold defs`, two SQL files on an `s3a://` lake (moto on loopback), `dg launch`, and
    the tables read back with delta-rs. No checkout of this repository is used."""
    python = clean_venv
    bin_dir = os.path.dirname(python)
    # dg and create-dagster, as a user installs them beside the package: the versions this
    # suite runs (they match its Dagster), from uv's cache when it holds them, else from PyPI.
    wanted = [f"{name}=={version(name)}" for name in ("create-dagster", "dagster-dg-cli")]
    uv = os.path.join(os.path.dirname(sys.executable), "uv")
    if os.path.exists(uv):
        install = [uv, "pip", "install", "--quiet", "--python", python, *wanted]
        env = dict(os.environ, UV_NATIVE_TLS="1")
        if subprocess.run([*install, "--offline"], capture_output=True, env=env, timeout=900).returncode != 0:
            _run(install, env=env)
    else:
        _run([python, "-m", "pip", "install", "--quiet", *wanted])
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    engine_dir = str(tmp_path / "engine")
    with running_s3_server(str(tmp_path / "moto.log")) as server:
        server.create_bucket("walkthrough")
        user = cli_env(
            PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""),
            VIRTUAL_ENV=os.path.dirname(bin_dir),
            DAGSTER_HOME=str(home),
            ASSETLAKE_ENGINE_DIR=engine_dir,
            PYSPARK_PYTHON=python,
            **server.env,
        )
        for name in ("PYTHONPATH", "ASSETLAKE_PROJECT_DIR", "ASSETLAKE_LAKE_ROOT"):
            user.pop(name, None)
        root = tmp_path / "shop"
        try:
            _run([os.path.join(bin_dir, "create-dagster"), "project", "--no-uv-sync", str(root)], cwd=str(tmp_path), env=user)
            user["PYTHONPATH"] = str(root / "src")  # the project's package, as its editable install would
            out = _run([os.path.join(bin_dir, "assetlake"), "setup", "--with", "s3", "--no-archive"], cwd=str(root), env=user)
            assert out.rstrip().endswith("setup: ok"), out
            dg = os.path.join(bin_dir, "dg")
            _run([dg, "scaffold", "defs", "assetlake_dagster.AssetlakeProjectComponent", "lake"], cwd=str(root), env=user)
            component = root / "src" / "shop" / "defs" / "lake"
            (component / "sql" / "example.sql").unlink()
            (component / "sql" / "orders.sql").write_text(WALKTHROUGH_ORDERS)
            (component / "sql" / "customer_totals.sql").write_text(WALKTHROUGH_TOTALS)
            (component / "defs.yaml").write_text(
                "type: assetlake_dagster.AssetlakeProjectComponent\n"
                "attributes:\n"
                "  project: sql\n"
                "  lake_root: s3a://walkthrough/lake\n"
                "  spark:\n"
                f"    s3_endpoint: {server.endpoint}\n"
            )
            out = _run([dg, "launch", "--assets", "*"], cwd=str(root), env=user)
            assert "RUN_SUCCESS" in out, out[-3000:]
        finally:
            WarmEngine(engine_dir).stop()
        settings = S3Settings.from_env(server.env)
        read = {
            name: deltalake.DeltaTable(f"s3://walkthrough/lake/{name}", storage_options=settings.storage_options(server.env))
            for name in ("staging/orders", "mart/customer_totals")
        }
        assert sorted(r["order_id"] for r in read["staging/orders"].to_pyarrow_table().to_pylist()) == list(range(6))
        totals = {r["customer_id"]: r["total"] for r in read["mart/customer_totals"].to_pyarrow_table().to_pylist()}
        assert totals == {0: 0 * 1.5 + 3 * 1.5, 1: 1 * 1.5 + 4 * 1.5, 2: 2 * 1.5 + 5 * 1.5}
