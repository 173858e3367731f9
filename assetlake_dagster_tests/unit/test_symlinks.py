"""Files stay where they belong: SQL files and custom data tests that are symlinks to
outside the project folder are located errors (real paths, not normalised ones); links
that stay inside the project are fine."""

import os

import pytest

from assetlake_dagster.errors import ProjectError
from assetlake_dagster.project.load import load_project

ASSET = "-- materialize delta://m/a\n{extra}\nSELECT 1 AS id\n"


def _first_lines(err: ProjectError) -> list[str]:
    return [d.render().splitlines()[0] for d in err.diagnostics]


def test_a_sql_file_linking_outside_the_project_is_refused(tmp_path, monkeypatch):
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "b.sql").write_text("-- materialize delta://m/b\n\nSELECT 1 AS id\n")
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "a.sql").write_text(ASSET.format(extra=""))
    os.symlink(tmp_path / "secret" / "b.sql", tmp_path / "p" / "b.sql")
    monkeypatch.chdir(tmp_path / "p")
    with pytest.raises(ProjectError) as err:
        load_project(".")
    target = os.path.realpath(tmp_path / "secret" / "b.sql")
    assert _first_lines(err.value) == [
        f"b.sql:1:1: the file is a symlink to {target}, outside the project folder. "
        "Copy the file into the project, or point the link at a file inside the project."
    ]


def test_a_data_test_file_linking_outside_the_project_is_refused(tmp_path, monkeypatch):
    (tmp_path / "p" / "tests").mkdir(parents=True)
    (tmp_path / "elsewhere.sql").write_text("SELECT * FROM {this} WHERE id < 0\n")
    os.symlink(tmp_path / "elsewhere.sql", tmp_path / "p" / "tests" / "x.sql")
    (tmp_path / "p" / "a.sql").write_text(ASSET.format(extra="-- data_test tests/x.sql\n"))
    monkeypatch.chdir(tmp_path / "p")
    with pytest.raises(ProjectError) as err:
        load_project(".")
    lines = _first_lines(err.value)
    assert len(lines) == 1 and lines[0].startswith(
        "a.sql:2:14: test file 'tests/x.sql' is outside the project folder (a symlink to "
    ), lines


def test_links_that_stay_inside_the_project_load(tmp_path, monkeypatch):
    (tmp_path / "p" / "tests").mkdir(parents=True)
    (tmp_path / "p" / ".shared").mkdir()  # hidden: not an asset folder of its own
    (tmp_path / "p" / ".shared" / "neg.sql").write_text("SELECT * FROM {this} WHERE id < 0\n")
    os.symlink(tmp_path / "p" / ".shared" / "neg.sql", tmp_path / "p" / "tests" / "x.sql")
    os.symlink("../a.sql", tmp_path / "p" / "tests" / "same.sql")  # a link to an asset file: a second producer
    (tmp_path / "p" / "a.sql").write_text(ASSET.format(extra="-- data_test tests/x.sql\n"))
    monkeypatch.chdir(tmp_path / "p")
    with pytest.raises(ProjectError) as err:
        load_project(".")
    # the inside link loads like the file it points at (here: a duplicate producer, not a path error)
    lines = _first_lines(err.value)
    assert "a.sql:1:16: delta://m/a is also materialized by tests/same.sql:1." in " ".join(lines), lines
    assert all("outside the project" not in line for line in lines), lines
    os.remove(tmp_path / "p" / "tests" / "same.sql")
    project = load_project(".")
    assert [str(spec.uri) for spec in project.assets] == ["delta://m/a"]


def test_a_data_test_path_with_a_nul_is_a_located_error(tmp_path, monkeypatch):
    """Found by scripts/fuzz_annotations.py: realpath raised 'embedded null byte'."""
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "a.sql").write_text(ASSET.format(extra="-- data_test tests/no\x00_negative.sql\n"))
    monkeypatch.chdir(tmp_path / "p")
    with pytest.raises(ProjectError) as err:
        load_project(".")
    assert _first_lines(err.value) == [
        "a.sql:2:14: the test file name 'tests/no\\x00_negative.sql' contains the control character '\\x00'. "
        "Name the file with printable characters, e.g. 'tests/no_negative_amounts.sql'."
    ]
    # and the path check itself does not raise on it (a missing file)
    from assetlake_dagster.project.folder import outside as _outside

    assert _outside("tests/no\x00_negative.sql", ".") is False
