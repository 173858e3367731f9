"""PySpark's own logging of the errors it raises, kept out of the way where assetlake handles them.

PySpark 4.0 logs every error that carries a query context as it raises it, at ERROR level
and with the JVM's stack trace (``PySparkException._log_exception``: the loggers
``SQLQueryContextLogger`` and ``DataFrameQueryContextLogger``, JSON on stderr, not
propagated), whether or not the caller expects and handles the error. In the terminal of
``dagster dev`` and ``dagster asset materialize`` that printed a screen of
``[TABLE_OR_VIEW_NOT_FOUND]`` errors on a clean first run, and a statement Spark rejects
twice: once by PySpark, once in the step's failure.

assetlake checks expected conditions without raising where Spark lets it (a catalog
listing, the table's ``_delta_log``); :func:`errors_reported_by_caller` is for the calls
where it cannot, and for those whose error it reports itself. Inside it, on the calling
thread only, those two loggers drop their records: they are process-wide, and the error of
another thread (another step of the same process) still logs. The error itself is raised as
always; what the caller does not handle reaches Dagster, which shows it once.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator

#: The loggers PySpark 4.0 logs its raised errors with (``pyspark.errors.exceptions.base``).
QUERY_CONTEXT_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")

_calls = threading.local()
_installed = False
_install_lock = threading.Lock()


class _ReportedByCaller(logging.Filter):
    """Drops a record made on a thread that is inside :func:`errors_reported_by_caller`."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(_calls, "depth", 0)


_FILTER = _ReportedByCaller()


def _install() -> None:
    """Attach the filter to PySpark's loggers, once per process.

    Created through ``PySparkLogger.getLogger`` as PySpark creates them: a plain logger of the
    same name would not take the keyword arguments PySpark logs with.
    """
    global _installed
    if _installed:
        return
    with _install_lock:
        if _installed:
            return
        from pyspark.logger import PySparkLogger

        for name in QUERY_CONTEXT_LOGGERS:
            PySparkLogger.getLogger(name).addFilter(_FILTER)
        _installed = True


@contextlib.contextmanager
def errors_reported_by_caller() -> Iterator[None]:
    """PySpark does not log the errors raised on this thread inside the block; they are still raised.

    For a call whose error the caller expects (a lookup that may find nothing) or reports
    itself. Nested blocks are fine; other threads log as before.

    Example:
        >>> with errors_reported_by_caller():  # doctest: +SKIP
        ...     try:
        ...         spark.sql("DESCRIBE TABLE s.not_yet").collect()
        ...     except AnalysisException:
        ...         pass  # expected: nothing printed
    """
    _install()
    _calls.depth = getattr(_calls, "depth", 0) + 1
    try:
        yield
    finally:
        _calls.depth -= 1
