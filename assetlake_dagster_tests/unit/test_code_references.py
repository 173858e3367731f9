"""Code references link to the SQL file on the git host when the project is in a git repository
and a repository URL is given (``build_definitions(git_url=...)`` or ``$ASSETLAKE_GIT_URL``)."""

import dagster as dg
import pytest

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.defs.code_references import GIT_BRANCH_ENV, GIT_URL_ENV, checked_out_branch, git_root
from assetlake_dagster.errors import ConfigError

SQL = "-- group marts\n-- materialize delta://mart/orders\nSELECT 1 AS id\n"


@pytest.fixture(autouse=True)
def _no_git_env(monkeypatch):
    monkeypatch.delenv(GIT_URL_ENV, raising=False)
    monkeypatch.delenv(GIT_BRANCH_ENV, raising=False)


def _repo(tmp_path, head="ref: refs/heads/dev\n"):
    """A repository at ``tmp_path/repo`` with the project in ``repo/lake/pipelines``."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text(head)
    project = root / "lake" / "pipelines"
    project.mkdir(parents=True)
    (project / "orders.sql").write_text(SQL)
    return root, project


def _references(defs):
    (spec,) = [s for s in defs.resolve_all_asset_specs() if s.key == dg.AssetKey(["mart", "orders"])]
    return spec.metadata["dagster/code_references"].code_references


def test_a_git_url_links_each_sql_file_to_its_line_on_the_checked_out_branch(tmp_path):
    _, project = _repo(tmp_path)
    defs = build_definitions(str(project), lake_root=str(tmp_path / "lake"), git_url="https://github.com/acme/lake/")
    (ref,) = _references(defs)
    assert isinstance(ref, dg.UrlCodeReference)
    # The -- materialize header is line 2; the path is relative to the repository's root.
    assert ref.url == "https://github.com/acme/lake/tree/dev/lake/pipelines/orders.sql#L2"
    assert ref.label == "SQL file"


def test_the_environment_names_the_url_and_the_branch(tmp_path, monkeypatch):
    _, project = _repo(tmp_path)
    monkeypatch.setenv(GIT_URL_ENV, "https://gitlab.com/acme/lake")
    monkeypatch.setenv(GIT_BRANCH_ENV, "release")
    (ref,) = _references(build_definitions(str(project), lake_root=str(tmp_path / "lake")))
    assert ref.url == "https://gitlab.com/acme/lake/-/tree/release/lake/pipelines/orders.sql#L2"
    # An argument wins over the environment.
    defs = build_definitions(str(project), lake_root=str(tmp_path / "lake"), git_branch="main")
    (ref,) = _references(defs)
    assert ref.url == "https://gitlab.com/acme/lake/-/tree/main/lake/pipelines/orders.sql#L2"


def test_without_a_url_or_outside_a_repository_the_reference_stays_local(tmp_path):
    _, project = _repo(tmp_path)
    (ref,) = _references(build_definitions(str(project), lake_root=str(tmp_path / "lake")))
    assert isinstance(ref, dg.LocalFileCodeReference)
    assert (ref.file_path, ref.line_number) == (str(project / "orders.sql"), 2)
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "orders.sql").write_text(SQL)
    if git_root(bare) is None:  # tmp_path itself may sit in no repository
        defs = build_definitions(str(bare), lake_root=str(tmp_path / "lake"), git_url="https://github.com/acme/lake")
        (ref,) = _references(defs)
        assert isinstance(ref, dg.LocalFileCodeReference)


def test_a_url_of_another_host_is_a_config_error(tmp_path):
    _, project = _repo(tmp_path)
    with pytest.raises(ConfigError, match=r"GitHub or GitLab only.*https://github.com/acme/lakehouse"):
        build_definitions(str(project), lake_root=str(tmp_path / "lake"), git_url="https://git.example.com/lake")


def test_the_branch_is_read_from_head_a_worktree_or_a_detached_commit(tmp_path):
    root, _ = _repo(tmp_path)
    assert checked_out_branch(str(root)) == "dev"
    (root / ".git" / "HEAD").write_text("0123abc\n")
    assert checked_out_branch(str(root)) == "0123abc"
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {root / '.git'}\n")
    (root / ".git" / "HEAD").write_text("ref: refs/heads/feature/x\n")
    assert git_root(worktree / "some" / "folder") == str(worktree)
    assert checked_out_branch(str(worktree)) == "feature/x"
    assert checked_out_branch(str(tmp_path / "nowhere")) is None
