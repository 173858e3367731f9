"""scripts/dagster_dev.py hides Dagster's "use 'dg dev'" SupersessionWarning, and only it."""

import importlib.util
import os
import subprocess
import sys

from assetlake_dagster_tests.helpers import REPO

_spec = importlib.util.spec_from_file_location("dagster_dev", os.path.join(REPO, "scripts", "dagster_dev.py"))
dagster_dev = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dagster_dev)

# What `dagster dev` emits (dagster_shared's @superseded on dev_command), and another one.
WARN = """
import warnings
from dagster_shared.utils.warnings import SupersessionWarning
warnings.warn("Function `dev_command` is superseded and its usage is discouraged. Use 'dg dev' instead.", SupersessionWarning)
warnings.warn("Function `other_command` is superseded and its usage is discouraged.", SupersessionWarning)
"""


def test_the_child_env_filters_only_the_dev_command_supersession_warning():
    env = dagster_dev.child_env({**os.environ, "PYTHONWARNINGS": "default"})
    assert env["PYTHONWARNINGS"].startswith("default,")
    stderr = subprocess.run([sys.executable, "-c", WARN], env=env, capture_output=True, text=True, check=True).stderr
    assert "dev_command" not in stderr
    assert "other_command" in stderr
