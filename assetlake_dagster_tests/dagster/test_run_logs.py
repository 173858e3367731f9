"""Layer 4: what a run logs. A clean first run logs no error; a failing one logs its error once.

A table's first write used to print PySpark's ``[TABLE_OR_VIEW_NOT_FOUND]`` with a JVM stack
trace at ERROR level (its query-context logger logs every error it raises, also those the
caller expects and handles: the catalog lookup of a name not registered yet), so a clean
"Materialize all" showed a screen of errors. The end-to-end check of a real `dg launch` is in
``e2e/test_dg_cli.py``; here the in-process runs record PySpark's logger and Dagster's events.
"""

import logging
import uuid

import dagster as dg
import pytest

from assetlake_dagster.defs.build import build_definitions

#: The loggers PySpark 4.0 logs its raised errors with (``pyspark.errors.exceptions.base``).
QUERY_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


class _Recorder(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture
def pyspark_error_logs():
    """What PySpark's query-context loggers log during the test (they do not propagate, so
    a handler of their own is the way to see it)."""
    from pyspark.logger import PySparkLogger

    recorder = _Recorder()
    loggers = [PySparkLogger.getLogger(name) for name in QUERY_LOGGERS]
    for logger in loggers:
        logger.addHandler(recorder)
    yield recorder.records
    for logger in loggers:
        logger.removeHandler(recorder)


@pytest.fixture
def schema():
    """A schema no earlier test registered in the shared session's catalog (a first write's
    names must be unknown to it, as in a new user's first run)."""
    return f"logs_{uuid.uuid4().hex[:8]}"


def _errors_logged(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    """``"<event type> <message>"`` of each event of the run logged at ERROR level or above."""
    return [f"{e.dagster_event.event_type.name if e.dagster_event else '-'} {e.user_message}"
            for e in instance.all_logs(run_id) if e.level >= logging.ERROR]


def test_a_first_run_logs_no_error(tmp_path, lake_root, schema, pyspark_error_logs):
    """Two new tables, the second reading the first and merged by key: every existence check
    and catalog lookup of a name not there yet is answered without an error being logged."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.sql").write_text(
        f"-- materialize delta://{schema}/a\n-- description The first table.\n\nSELECT id, id * 2 AS twice FROM range(3)\n"
    )
    (project / "b.sql").write_text(f"-- materialize delta://{schema}/b key=id\n\nSELECT id, twice FROM {schema}.a\n")
    instance = dg.DagsterInstance.ephemeral()
    result = build_definitions(str(project), lake_root=lake_root).resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance
    )
    assert result.success
    assert len(result.get_asset_materialization_events()) == 2
    assert [r.getMessage()[:200] for r in pyspark_error_logs] == []
    assert _errors_logged(instance, result.run_id) == []


def test_a_statement_spark_rejects_is_reported_once(tmp_path, lake_root, schema, pyspark_error_logs):
    """A real failure still fails the run with Spark's error, the file and the line, once: in
    the step's failure, not also as PySpark's own ERROR record with the JVM's stack trace."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "bad.sql").write_text(f"-- materialize delta://{schema}/bad\n\nSELECT no_such_column FROM range(3)\n")
    instance = dg.DagsterInstance.ephemeral()
    result = build_definitions(str(project), lake_root=lake_root).resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance, raise_on_error=False
    )
    assert not result.success
    (failure,) = result.get_step_failure_events()
    message = failure.event_specific_data.error.message
    assert "bad.sql:3: Spark rejected the statement" in message and "UNRESOLVED_COLUMN" in message, message
    assert [r.getMessage()[:200] for r in pyspark_error_logs] == []
    # Dagster's two ERROR events of a failed step: its failure (with the error) and the run's.
    errors = _errors_logged(instance, result.run_id)
    assert [e.split(" ", 1)[0] for e in errors] == ["STEP_FAILURE", "RUN_FAILURE"], errors
