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

import deltalake

from assetlake_dagster.spark.engine import WarmEngine
from assetlake_dagster_tests.helpers import REPO, cli_env

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


def test_the_wheel_without_extras_materializes_on_the_default_engine(tmp_path):
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
          "-w", str(tmp_path / "dist"), REPO])
    (wheel,) = [str(p) for p in (tmp_path / "dist").glob("assetlake_dagster-*.whl")]
    python = _clean_venv(str(tmp_path / "venv"), wheel)
    # Nothing of this checkout leaks in: the package imports from the new virtualenv.
    where = _run([python, "-c", "import assetlake_dagster, pyspark.sql.connect.session; print(assetlake_dagster.__file__)"],
                 cwd=str(tmp_path))
    assert where.strip().startswith(str(tmp_path / "venv")), where

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
    shutil.rmtree(tmp_path / "venv")  # about 1 GB of site-packages
