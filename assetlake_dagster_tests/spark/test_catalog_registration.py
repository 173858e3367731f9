"""Layer 4: the session catalog follows the lake: a name whose table moved to another lake
root, or whose files were deleted, is re-pointed, never an error and never a data loss."""

import shutil

from assetlake_dagster.lake.root import Lake
from assetlake_dagster.lake.registration import register_table
from assetlake_dagster.spec import TableUri

URI = TableUri("reg", "t")


def _write(spark, lake, value):
    spark.createDataFrame([(value,)], "x INT").write.format("delta").mode("overwrite").save(lake.table_path(URI))


def test_a_name_left_pointing_at_a_deleted_lake_is_re_pointed(spark, tmp_path):
    old, new = Lake(str(tmp_path / "old")), Lake(str(tmp_path / "new"))
    _write(spark, old, 1)
    register_table(spark, old, URI)
    assert spark.table(URI.sql_name).first().x == 1
    shutil.rmtree(tmp_path / "old")  # the user removed the lake; the session still knows the name
    _write(spark, new, 2)
    register_table(spark, new, URI)
    assert spark.table(URI.sql_name).first().x == 2


def test_a_name_pointing_at_another_live_lake_is_re_pointed_and_its_data_kept(spark, tmp_path):
    first, second = Lake(str(tmp_path / "a")), Lake(str(tmp_path / "b"))
    _write(spark, first, 1)
    register_table(spark, first, URI)
    _write(spark, second, 2)
    register_table(spark, second, URI)
    assert spark.table(URI.sql_name).first().x == 2
    assert spark.read.format("delta").load(first.table_path(URI)).first().x == 1


def test_the_registration_cache_goes_with_its_session(spark, tmp_path):
    """Each SQL asset's run has a session of its own: the cache of what is registered in a
    session must not outlive it (it grew by one entry per run and table)."""
    import gc

    from assetlake_dagster.lake import registration as lake_module

    lake = Lake(str(tmp_path / "lake"))
    _write(spark, lake, 1)
    before = len(lake_module._registered)
    for _ in range(5):
        session = spark.newSession()
        register_table(session, lake, URI)
        assert session.table(URI.sql_name).first().x == 1
        del session
    gc.collect()
    assert len(lake_module._registered) <= before + 1  # at most the last, if still referenced


def _jobs_started(spark):
    """How many Spark jobs this (classic) session's context has started so far."""
    return spark.sparkContext._jsc.sc().dagScheduler().nextJobId()


def test_a_new_session_finds_a_registered_table_without_a_spark_job(spark, tmp_path):
    # Every SQL asset's run checks its tables' registration in a session of its own; reading
    # the location with DESCRIBE ... .where(...).first() ran two jobs per table and run.
    lake = Lake(str(tmp_path / "lake"))
    _write(spark, lake, 1)
    register_table(spark, lake, URI)
    session = spark.newSession()
    before = _jobs_started(session)
    register_table(session, lake, URI)
    assert _jobs_started(session) == before
    assert session.table(URI.sql_name).first().x == 1
