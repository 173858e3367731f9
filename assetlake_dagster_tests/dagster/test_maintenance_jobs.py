"""Layer 5: a `-- maintain` line becomes a job and a schedule; the job OPTIMIZEs and VACUUMs
the table, records its files before and after, and triggers nothing downstream."""

import dagster as dg

from assetlake_dagster.build import build_definitions

T, D = dg.AssetKey(["s", "t"]), dg.AssetKey(["s", "d"])


def test_the_maintenance_job_compacts_records_and_triggers_nothing_downstream(spark, lake_root, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "t.sql").write_text("-- materialize delta://s/t append\n-- maintain @daily vacuum=window\n\nSELECT 1 AS n\n")
    (project / "d.sql").write_text("-- materialize delta://s/d\n-- automation eager\n\nSELECT n FROM s.t\n")
    defs = build_definitions(str(project), lake_root=lake_root)
    schedule = defs.resolve_schedule_def("maintain__s__t_schedule")
    assert (schedule.cron_schedule, schedule.job_name, schedule.default_status) == (
        "@daily", "maintain__s__t", dg.DefaultScheduleStatus.RUNNING,
    )
    instance = dg.DagsterInstance.ephemeral()
    for _ in range(3):  # three appends: three small files
        assert defs.resolve_implicit_global_asset_job_def().execute_in_process(instance=instance).success
    cursor = dg.evaluate_automation_conditions(defs=defs, instance=instance).cursor

    assert defs.resolve_job_def("maintain__s__t").execute_in_process(instance=instance).success
    observation = instance.fetch_observations(T, limit=1).records[0].asset_observation
    optimize, vacuum = observation.metadata["assetlake/maintenance"].value
    assert (optimize["operation"], optimize["before"]["current_files"], optimize["after"]["current_files"]) == ("OPTIMIZE", 3, 1)
    assert (vacuum["operation"], vacuum["retain_hours"]) == ("VACUUM", 168)
    assert len(instance.fetch_materializations(T, limit=10).records) == 3  # maintenance materializes nothing
    after_maintenance = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
    assert after_maintenance.total_requested == 0

    # The control: a real new version of s/t does request s/d.
    assert defs.resolve_implicit_global_asset_job_def().execute_in_process(instance=instance, asset_selection=[T]).success
    after_write = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=after_maintenance.cursor)
    assert after_write.get_requested_partitions(D) == {None}
