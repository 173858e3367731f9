"""`assetlake validate <dir>`: exit code, the ok line, every error on stderr."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from assetlake_dagster.cli.main import main
from assetlake_dagster_tests.helpers import PROJECTS as PROJECTS_DIR

PROJECTS = Path(PROJECTS_DIR)
PROBLEM_LINE = re.compile(r"^\S+\.sql:\d+:\d+: ", re.MULTILINE)


@pytest.fixture(autouse=True)
def in_projects(monkeypatch):
    monkeypatch.chdir(PROJECTS)


def test_valid_project(capsys):
    assert main(["validate", "basic"]) == 0
    out, err = capsys.readouterr()
    assert (out, err) == ("ok: 4 assets, 2 external tables in basic\n", "")


def test_invalid_project_prints_every_problem(capsys):
    assert main(["validate", "invalid"]) == 1
    out, err = capsys.readouterr()
    problems = PROBLEM_LINE.findall(err)
    assert out == ""
    assert len(problems) == 20 == len(os.listdir("invalid"))
    assert {p.split(":")[0] for p in problems} == {os.path.join("invalid", f) for f in os.listdir("invalid")}
    assert err.endswith("\n20 errors in 20 files.\n")
    assert (
        "invalid/unknown_option.sql:1:43: unknown option 'kye=id'. Did you mean 'key='?\n"
        "  -- materialize delta://bad/unknown_option kye=id\n"
        "                                            ^^^^^^\n"
    ).replace("/", os.sep, 1) in err


@pytest.mark.parametrize(
    "project, summary",
    [
        pytest.param("cycle", "1 error in 1 file.", id="cycle"),
        pytest.param("duplicate_target", "2 errors in 2 files.", id="duplicate-target"),
    ],
)
def test_cross_file_problems(capsys, project, summary):
    assert main(["validate", project]) == 1
    assert capsys.readouterr().err.endswith(f"\n{summary}\n")


def test_missing_folder(capsys):
    assert main(["validate", "no_such_folder"]) == 1
    assert capsys.readouterr().err == "project folder 'no_such_folder' does not exist or is not a folder.\n"


def test_no_subcommand_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as caught:
        main([])
    assert caught.value.code == 2
    assert "usage: assetlake" in capsys.readouterr().err


def test_as_a_subprocess():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PROJECTS.parents[1]), os.environ.get("PYTHONPATH", "")])}
    ok = subprocess.run(
        [sys.executable, "-m", "assetlake_dagster.cli.main", "validate", "basic"],
        capture_output=True, text=True, env=env, check=False,
    )
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "ok: 4 assets, 2 external tables in basic\n", "")
    bad = subprocess.run(
        [sys.executable, "-m", "assetlake_dagster.cli.main", "validate", "invalid"],
        capture_output=True, text=True, env=env, check=False,
    )
    assert bad.returncode == 1 and bad.stdout == ""
    assert len(PROBLEM_LINE.findall(bad.stderr)) == 20
