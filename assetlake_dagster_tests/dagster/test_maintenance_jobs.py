"""Layer 5: a `-- maintain` line becomes a job and a schedule; the job OPTIMIZEs and VACUUMs
the table, records its files before and after, and triggers nothing downstream. Its VACUUM
keeps the versions `assetlake vacuum` keeps, by the same path: a version an input of the code
location pins, and every readable version when no code location says which are pinned."""

import json
import os
import time

import dagster as dg

# A scheduled run is executed from its code location (`dagster api execute_run` rebuilds the
# job from its code pointer); `execute_job` of a job rebuilt the same way is that path here.
from dagster._core.definitions.reconstruct import ReconstructableJob, ReconstructableRepository

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster_tests.helpers import run_cli

T, D = dg.AssetKey(["s", "t"]), dg.AssetKey(["s", "d"])


#: A run that appends although nothing it reads changed (run/decision.py would skip it).
FORCED = {"assetlake/force": "true"}


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
    for _ in range(3):  # three appends (forced: nothing they read changes): three small files
        assert defs.resolve_implicit_global_asset_job_def().execute_in_process(instance=instance, tags=FORCED).success
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
    assert defs.resolve_implicit_global_asset_job_def().execute_in_process(instance=instance, asset_selection=[T], tags=FORCED).success
    after_write = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=after_maintenance.cursor)
    assert after_write.get_requested_partitions(D) == {None}


MAINTAINED = "-- materialize delta://s/t\n-- maintain @daily vacuum=1h\n\nSELECT 1 AS n\n"
PINNED_READER = """\
import dagster as dg


@dg.asset(key=["s", "pinned_reader"], ins={"t": dg.AssetIn(key=["s", "t"], metadata={"assetlake/version": 0})})
def pinned_reader(t):
    return t
"""
PINNED = (
    "delta://s/t: VACUUM RETAIN 1 HOURS would delete files of version 0 (pinned by s/pinned_reader's input 't'). "
    "The oldest safe retention is 3 hours"
)


def project_with(tmp_path, name, files):
    project = tmp_path / name
    project.mkdir()
    for file, text in files.items():
        (project / file).write_text(text)
    return project


def aged_table(spark, lake_root, versions=3, hours=2.5):
    """delta://s/t at versions 0..versions-1 (one row each, a restore window of 0 hours), each
    committed ``hours`` ago by its log (the commit time the guard reads), so that a version
    older than the last needs a retention of ceil(hours) to stay readable."""
    path = f"{lake_root}/s/t"
    for n in range(versions):
        writer = spark.createDataFrame([(n,)], "n INT").write.format("delta").mode("overwrite")
        if n == 0:
            writer = writer.option("delta.deletedFileRetentionDuration", "interval 0 hours")
        writer.save(path)
    then = int((time.time() - hours * 3600) * 1000)
    for n in range(versions):
        file = os.path.join(path, "_delta_log", f"{n:020d}.json")
        with open(file, encoding="utf-8") as f:
            actions = [json.loads(line) for line in f if line.strip()]
        for action in actions:
            info = action.get("commitInfo")
            for stamp in ("timestamp", "inCommitTimestamp"):
                if info is not None and stamp in info:
                    info[stamp] = then
        with open(file, "w", encoding="utf-8") as f:
            f.write("".join(json.dumps(a) + "\n" for a in actions))
        # Hadoop's local file system checks a file against its hidden .crc sidecar, if there is one.
        sidecar = os.path.join(path, "_delta_log", f".{n:020d}.json.crc")
        if os.path.exists(sidecar):
            os.remove(sidecar)
    return path


def run_from_code_location(tmp_path, project, lake_root, instance, job_name="maintain__s__t"):
    """Run ``job_name`` rebuilt from a code location that loads ``project``: success, and each
    failed step's error message."""
    location = tmp_path / f"location_{project.name}.py"
    location.write_text(
        "from assetlake_dagster.defs.build import build_definitions\n\n"
        f"defs = build_definitions({str(project)!r}, lake_root={lake_root!r})\n"
    )
    job = ReconstructableJob(ReconstructableRepository.for_file(str(location), "defs", str(tmp_path)), job_name)
    with dg.execute_job(job, instance=instance, raise_on_error=False) as result:
        return result.success, [e.step_failure_data.error.message for e in result.all_events if e.is_step_failure]


def versions_read(spark, path):
    return [spark.read.format("delta").option("versionAsOf", v).load(path).collect()[0].n for v in range(3)]


def test_the_scheduled_vacuum_keeps_a_version_an_input_pins_as_the_cli_does(spark, lake_root, tmp_path, capsys):
    pinned = project_with(tmp_path, "pinned", {"t.sql": MAINTAINED, "reader.py": PINNED_READER})
    path = aged_table(spark, lake_root)
    instance = dg.DagsterInstance.ephemeral()

    # The schedule's run, from its code location: refused, naming the input that pins version 0.
    success, failures = run_from_code_location(tmp_path, pinned, lake_root, instance)
    assert not success
    assert len(failures) == 1 and PINNED in failures[0], failures
    # The command, with the project: the same refusal, word for word.
    code, out, err = run_cli(capsys, "vacuum", "delta://s/t", "--retain", "1", "--project-dir", str(pinned), "--lake-root", lake_root)
    assert (code, out) == (1, "")
    assert PINNED in err
    assert versions_read(spark, path) == [0, 1, 2]  # nothing deleted

    # The control: the same table and schedule in a project where nothing pins it: both VACUUM.
    free = project_with(tmp_path, "free", {"t.sql": MAINTAINED})
    success, failures = run_from_code_location(tmp_path, free, lake_root, instance)
    assert (success, failures) == (True, [])
    vacuum = instance.fetch_observations(T, limit=1).records[0].asset_observation.metadata["assetlake/maintenance"].value[-1]
    assert (vacuum["operation"], vacuum["retain_hours"]) == ("VACUUM", 1)
    code, out, err = run_cli(capsys, "vacuum", "delta://s/t", "--retain", "1", "--project-dir", str(free), "--lake-root", lake_root)
    assert code == 0 and "VACUUM RETAIN 1 HOURS" in out, err


def test_without_a_code_location_every_readable_version_is_kept(spark, lake_root, tmp_path, capsys, monkeypatch):
    """A job executed in process (no code location) and the command without a project cannot
    tell which versions an input pins: a VACUUM that would delete any readable version is refused."""
    monkeypatch.delenv("ASSETLAKE_PROJECT_DIR", raising=False)
    project = project_with(tmp_path, "project", {"t.sql": MAINTAINED})
    path = aged_table(spark, lake_root)
    defs = build_definitions(str(project), lake_root=lake_root)

    result = defs.resolve_job_def("maintain__s__t").execute_in_process(instance=dg.DagsterInstance.ephemeral(), raise_on_error=False)
    assert not result.success
    message = result.failure_data_for_node("maintain__s__t__op").error.message
    assert (
        "delta://s/t: VACUUM RETAIN 1 HOURS would delete files of version 0 (an input may pin it, and the run has no "
        "code location to read the inputs that pin versions from (it was executed in process); run the job from its "
        "code location (its schedule, the UI, 'dagster job execute'), or 'assetlake vacuum --project-dir <folder>'). "
        "The oldest safe retention is 3 hours"
    ) in message
    code, out, err = run_cli(capsys, "vacuum", "delta://s/t", "--retain", "1", "--lake-root", lake_root)
    assert (code, out) == (1, "")
    assert (
        "would delete files of version 0 (an input may pin it, and no project names the inputs that pin versions; "
        "give it with --project-dir <folder> (or $ASSETLAKE_PROJECT_DIR))"
    ) in err
    assert versions_read(spark, path) == [0, 1, 2]
