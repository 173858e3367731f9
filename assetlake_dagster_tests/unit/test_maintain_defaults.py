"""Maintenance defaults: ``build_definitions(maintain=…)`` and the component's ``maintain``
attribute give tables without a ``-- maintain`` line a schedule, by group or for the whole
project; a file's own line wins, a manual file gets none, a bad text is the line's located
error."""

import textwrap

import dagster as dg
import pytest
import yaml
from dagster.components.testing import create_defs_folder_sandbox

from assetlake_dagster import build_definitions

FILES = {
    "t.sql": "-- materialize delta://raw/t append\n-- group landing\nSELECT 1 AS n\n",
    "u.sql": "-- materialize delta://s/u\nSELECT 1 AS n\n",
    "own.sql": "-- materialize delta://s/own\n-- maintain @hourly\nSELECT 1 AS n\n",
    "m.sql": "-- materialize manual delta://s/m\nCREATE TABLE IF NOT EXISTS s.m (n INT) USING delta\n",
}


def _project(folder):
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text)
    return str(folder)


def _crons(defs: dg.Definitions) -> dict[str, tuple[str, str]]:
    repo = defs.get_repository_def()
    return {s.job_name: (s.cron_schedule, s.default_status.value) for s in repo.schedule_defs if s.job_name.startswith("maintain__")}


def test_a_project_default_and_a_group_default(tmp_path):
    project = _project(tmp_path / "p")
    assert _crons(build_definitions(project, lake_root=str(tmp_path / "lake"))) == {"maintain__s__own": ("@hourly", "RUNNING")}
    defs = build_definitions(project, lake_root=str(tmp_path / "lake"), maintain={"landing": "@daily vacuum=7d", "*": "0 3 * * 0"})
    assert _crons(defs) == {
        "maintain__raw__t": ("@daily", "RUNNING"),  # its group's default
        "maintain__s__u": ("0 3 * * 0", "RUNNING"),  # the project's
        "maintain__s__own": ("@hourly", "RUNNING"),  # its own line wins
    }  # and no job for the manual file
    ops = {name: defs.resolve_job_def(name).nodes[0].definition.description for name in ("maintain__raw__t", "maintain__s__u")}
    assert ops == {"maintain__raw__t": "OPTIMIZE and VACUUM delta://raw/t", "maintain__s__u": "OPTIMIZE delta://s/u"}
    only_all = build_definitions(project, lake_root=str(tmp_path / "lake"), maintain="@weekly")
    assert set(_crons(only_all)) == {"maintain__raw__t", "maintain__s__u", "maintain__s__own"}


def test_definitions_with_maintenance_jobs_load_as_a_code_location_loads_them(tmp_path):
    # `dagster dev` and `dagster definitions validate` check every job's ops and graphs for
    # unique names; the op, the graph and the job of a `-- maintain` line once shared one name,
    # and no code location with such a line loaded ("Conflicting definitions ... 'maintain__s__own'").
    project = _project(tmp_path / "p")
    defs = build_definitions(project, lake_root=str(tmp_path / "lake"), maintain="@weekly")
    dg.Definitions.validate_loadable(defs)
    jobs = {job.name for job in defs.get_repository_def().get_all_jobs()}
    assert {"maintain__raw__t", "maintain__s__u", "maintain__s__own"} <= jobs


def test_a_bad_default_is_the_lines_located_error(tmp_path):
    project = _project(tmp_path / "p")
    with pytest.raises(ValueError) as raised:
        build_definitions(project, lake_root=str(tmp_path / "lake"), maintain={"landing": "@daily vacuum=7x"})
    assert str(raised.value).splitlines()[0] == (
        "maintain['landing']:2:27: '7x' is not a retention. Write 'vacuum=<n>h' or 'vacuum=<n>d' "
        "(hours or days to keep), or 'vacuum=window' for the table's restore window."
    )


def test_the_components_maintain_attribute():
    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.defs_folder_path / "lake"
        (path / "sql").mkdir(parents=True)
        (path / "defs.yaml").write_text(yaml.safe_dump({
            "type": "assetlake_dagster.AssetlakeProjectComponent",
            "attributes": {"project": "sql", "lake_root": "/data/lake", "maintain": {"*": "0 4 * * * vacuum=window"}},
        }))
        (path / "sql" / "u.sql").write_text(textwrap.dedent(FILES["u.sql"]))
        with sandbox.load_component_and_build_defs(defs_path=path) as (_, defs):
            assert _crons(defs) == {"maintain__s__u": ("0 4 * * *", "RUNNING")}
