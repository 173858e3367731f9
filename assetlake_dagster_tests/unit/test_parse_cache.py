"""The parse cache: a warm load parses no file, an edited file only that one, and every
answer (specs and located errors alike) equals a load without the cache."""

import os
import pickle

import pytest

from assetlake_dagster.project import parse_cache

from assetlake_dagster.project import load as project
from assetlake_dagster.errors import ProjectError
from assetlake_dagster.project.parse_cache import ParseCache
from assetlake_dagster.project.load import load_project

FILES = {
    "a.sql": "-- materialize delta://s/a key=id\n\nSELECT 1 AS id, 'x' AS name\n",
    "b.sql": "-- materialize delta://s/b\n-- column n \"Name\"\n\nSELECT id, name AS n FROM s.a\n",
    "c.sql": "-- materialize delta://s/c\n-- partitioned daily start=2024-01-01\n\nSELECT * FROM s.b WHERE d = {partition}\n",
}


@pytest.fixture
def parses(monkeypatch, tmp_path):
    """The paths parsed (not answered from the cache), per load; a cache folder of the test's own."""
    monkeypatch.setenv(parse_cache.CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(parse_cache.ENABLED_ENV, raising=False)
    seen = []
    real = project._build_spec

    def counting(path, text):
        seen.append(os.path.basename(path))
        return real(path, text)

    monkeypatch.setattr(project, "_build_spec", counting)
    return seen


def _write(folder, files):
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def _uncached(folder, monkeypatch):
    monkeypatch.setenv(parse_cache.ENABLED_ENV, "0")
    try:
        return load_project(folder)
    finally:
        monkeypatch.delenv(parse_cache.ENABLED_ENV)


def test_a_warm_load_parses_nothing_and_an_edit_reparses_that_file_only(tmp_path, parses, monkeypatch):
    folder = _write(tmp_path / "p", FILES)
    first = load_project(folder)
    assert sorted(parses) == ["a.sql", "b.sql", "c.sql"]
    parses.clear()
    assert load_project(folder).assets == first.assets
    assert parses == []
    (folder / "b.sql").write_text(FILES["b.sql"].replace('"Name"', '"The name"'))
    edited = load_project(folder)
    assert parses == ["b.sql"]
    assert edited.assets == _uncached(folder, monkeypatch).assets
    assert [c.description for s in edited.assets for c in s.columns] == ["The name"]


def test_errors_from_the_cache_are_the_same_located_errors(tmp_path, parses):
    folder = _write(tmp_path / "p", {**FILES, "bad.sql": "-- materialize delta://s/bad kye=id\n\nSELECT 1 AS id\n"})
    messages = []
    for _ in range(2):
        with pytest.raises(ProjectError) as caught:
            load_project(folder)
        messages.append(str(caught.value))
    assert parses.count("bad.sql") == 1
    assert messages[0] == messages[1] and "bad.sql:1:30: unknown option 'kye=id'." in messages[0]


def test_a_damaged_cache_is_ignored_and_rewritten(tmp_path, parses):
    folder = _write(tmp_path / "p", FILES)
    load_project(folder)
    (cache_file,) = (tmp_path / "cache").iterdir()
    cache_file.write_bytes(b"not a pickle")
    parses.clear()
    assert len(load_project(folder).assets) == 3
    assert len(parses) == 3
    parses.clear()
    load_project(folder)
    assert parses == []  # rewritten by the load that parsed


def test_another_parser_version_or_working_folder_reparses(tmp_path, parses, monkeypatch):
    folder = _write(tmp_path / "p", FILES)
    load_project(folder)
    parses.clear()
    monkeypatch.setattr(parse_cache, "_fingerprint", "another parser")
    load_project(folder)
    assert len(parses) == 3
    parses.clear()
    # Messages show paths relative to the working folder: another one is another answer.
    monkeypatch.chdir(folder)
    load_project(folder)
    assert len(parses) == 3


def test_files_gone_from_the_folder_leave_the_cache(tmp_path, parses):
    folder = _write(tmp_path / "p", FILES)
    load_project(folder)
    (folder / "c.sql").unlink()
    load_project(folder)
    (cache_file,) = (tmp_path / "cache").iterdir()
    with open(cache_file, "rb") as f:
        assert len(pickle.load(f)["entries"]) == 2


def test_turned_off_it_reads_and_writes_nothing(tmp_path, parses, monkeypatch):
    monkeypatch.setenv(parse_cache.ENABLED_ENV, "0")
    folder = _write(tmp_path / "p", FILES)
    load_project(folder)
    load_project(folder)
    assert len(parses) == 6 and not (tmp_path / "cache").exists()


def test_only_the_most_recent_projects_are_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(parse_cache, "MAX_PROJECTS", 2)
    monkeypatch.setenv(parse_cache.CACHE_DIR_ENV, str(tmp_path / "cache"))
    for i in range(4):
        cache = ParseCache.open(str(tmp_path / f"p{i}"))
        cache.build(f"/x{i}.sql", "SELECT 1", lambda path, text: (path, text))
        cache.save()
    assert len(list((tmp_path / "cache").iterdir())) == 2
