"""A ``-- freshness`` line (:class:`~assetlake_dagster.spec.FreshnessSpec`) as Dagster's ``FreshnessPolicy``."""

import dagster as dg

from assetlake_dagster.spec import FreshnessSpec


def freshness_policy(spec: FreshnessSpec) -> dg.FreshnessPolicy:
    """The policy of a parsed ``-- freshness`` line: a time window or a cron deadline.

    Example:
        >>> from datetime import timedelta
        >>> policy = freshness_policy(FreshnessSpec(fail=timedelta(hours=26), warn=timedelta(hours=24)))
        >>> policy.fail_window.to_timedelta(), policy.warn_window.to_timedelta()
        (datetime.timedelta(days=1, seconds=7200), datetime.timedelta(days=1))
    """
    if spec.cron is not None:
        assert spec.lower_bound is not None  # the parser requires it
        return dg.FreshnessPolicy.cron(
            deadline_cron=spec.cron, lower_bound_delta=spec.lower_bound, timezone=spec.timezone or "UTC"
        )
    assert spec.fail is not None  # the parser requires it
    return dg.FreshnessPolicy.time_window(fail_window=spec.fail, warn_window=spec.warn)
