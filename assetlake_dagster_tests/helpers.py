"""Helpers shared by the test modules (imported from here, never from another test module)."""

import os
import sys


def cli_env(**overrides: str) -> dict[str, str]:
    """The environment for a subprocess that runs `dagster` or `assetlake` as a user would.

    It uses the warm engine (the product's default) in the suite's shared engine folder
    (``ASSETLAKE_ENGINE_DIR``, set by ``conftest.py``), so the suite's CLI calls, `dagster
    dev` runs and `dagster asset materialize` runs share one Spark JVM instead of each
    starting its own.
    """
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable, ASSETLAKE_SPARK_MODE="engine")
    for name in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "ASSETLAKE_SPARK_REMOTE"):
        env.pop(name, None)
    env.update(overrides)
    return env
