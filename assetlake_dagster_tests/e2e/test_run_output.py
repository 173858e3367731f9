"""Layer 5: what a failing `dagster asset materialize` prints in the terminal.

A run that truly fails prints its error, once per failed step, with the file and line or
the fix, and nothing else at ERROR level: not PySpark's own JSON record of the same error
with the JVM's stack trace. A clean first run printing no ERROR line at all is checked on
the `dg launch` of ``test_dg_cli.py`` (that run is already there to land two tables).
"""

import os
import subprocess

from assetlake_dagster_tests.helpers import DAGSTER, cli_env


def test_a_failing_run_prints_each_error_once_and_how_to_fix_it(tmp_path):
    """Three steps fail in one run: a statement Spark rejects, a row that fails while the
    table is written (a cast under ANSI), and a read of an external table nobody landed yet,
    whose error says to land it and "Observe" it (not to materialize it: no run of the
    project can)."""
    project, home, lake = tmp_path / "project", tmp_path / "home", tmp_path / "lake"
    project.mkdir()
    home.mkdir()
    (project / "bad.sql").write_text("-- materialize delta://out/bad\n\nSELECT no_such_column FROM range(3)\n")
    (project / "cast.sql").write_text("-- materialize delta://out/cast\n\nSELECT CAST(concat('x', id) AS INT) AS id FROM range(3)\n")
    (project / "reader.sql").write_text("-- materialize delta://out/reader\n\nSELECT * FROM landing.payments\n")
    env = cli_env(ASSETLAKE_PROJECT_DIR=str(project), ASSETLAKE_LAKE_ROOT=str(lake), DAGSTER_HOME=str(home))
    run = subprocess.run(
        [DAGSTER, "asset", "materialize", "-m", "assetlake_dagster.definitions", "--select", "out/bad,out/cast,out/reader"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )
    output = run.stdout + run.stderr
    assert run.returncode != 0, output[-3000:]
    failures = [line for line in output.splitlines() if " - STEP_FAILURE - " in line]
    assert len(failures) == 3 and all(" - ERROR - " in line for line in failures), output[-3000:]
    assert "CAST_INVALID_INPUT" in output, output[-3000:]
    assert "bad.sql:3: Spark rejected the statement: [UNRESOLVED_COLUMN" in output, output[-3000:]
    payments = os.path.join(str(lake), "landing", "payments")
    assert f"external table delta://landing/payments has no Delta table at {payments}." in output
    assert (
        "land it there with the job that loads it (or create it empty: CREATE TABLE landing.payments (<columns>) "
        f"USING DELTA LOCATION '{payments}'). Then \"Observe\" on its asset (or the watch sensor) records its version"
    ) in output
    assert "Materialize them first" not in output
    # PySpark's own record of the rejected statement (JSON, with the JVM's stack trace) is gone.
    assert '"level": "ERROR"' not in output and "SQLQueryContextLogger" not in output, output[-3000:]
