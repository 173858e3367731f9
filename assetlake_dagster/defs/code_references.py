"""Code references that link to the SQL file in the project's git host.

Every SQL asset carries a ``dagster/code_references`` entry pointing at its file and the
line of its ``-- materialize`` header (a local path, which the UI opens on your machine).
Given a repository URL (``build_definitions(git_url=...)`` or ``$ASSETLAKE_GIT_URL``) and a
project inside a git repository, :func:`link_to_git` turns them into links to the file on
GitHub or GitLab with Dagster's ``link_code_references_to_git``.
"""

import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Optional, TypeVar, Union

import dagster as dg

from assetlake_dagster.errors import ConfigError

GIT_URL_ENV = "ASSETLAKE_GIT_URL"
GIT_BRANCH_ENV = "ASSETLAKE_GIT_BRANCH"
#: The branch when none is given and ``.git/HEAD`` names none.
DEFAULT_BRANCH = "main"

T = TypeVar("T")


def git_root(path: Union[str, os.PathLike]) -> Optional[str]:
    """The nearest folder at or above ``path`` that holds ``.git`` (a folder, or the file
    of a worktree or submodule), else ``None``."""
    here = os.path.abspath(path)
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def checked_out_branch(root: str) -> Optional[str]:
    """The branch ``HEAD`` names in the repository at ``root`` (a detached ``HEAD``: its
    commit), read from the files, without running git; ``None`` when unreadable."""
    dot_git = os.path.join(root, ".git")
    try:
        if os.path.isfile(dot_git):  # a worktree or submodule: "gitdir: <path>"
            with open(dot_git, encoding="utf-8") as f:
                pointer = f.read().strip()
            if not pointer.startswith("gitdir:"):
                return None
            dot_git = os.path.join(root, pointer[len("gitdir:") :].strip())
        with open(os.path.join(dot_git, "HEAD"), encoding="utf-8") as f:
            head = f.read().strip()
    except OSError:
        return None
    if head.startswith("ref:"):
        ref = head[len("ref:") :].strip()
        return ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else None
    return head or None


def link_to_git(
    assets: Sequence[T],
    project_dir: Union[str, os.PathLike],
    git_url: Optional[str] = None,
    git_branch: Optional[str] = None,
) -> list[T]:
    """``assets`` with their local code references turned into links to ``git_url``.

    ``git_url`` defaults to ``$ASSETLAKE_GIT_URL``; without one, or when ``project_dir`` is
    in no git repository, the assets are returned as they are. ``git_branch`` defaults to
    ``$ASSETLAKE_GIT_BRANCH``, else the checked-out branch, else ``main``. A file's path in
    the repository is its path relative to the repository's root folder.

    Raises:
        ConfigError: a URL whose host is neither GitHub nor GitLab.
    """
    url = (git_url or os.environ.get(GIT_URL_ENV) or "").strip().rstrip("/")
    if not url:
        return list(assets)
    root = git_root(project_dir)
    if root is None:
        return list(assets)
    branch = git_branch or os.environ.get(GIT_BRANCH_ENV) or checked_out_branch(root) or DEFAULT_BRANCH
    if "github" not in url and "gitlab" not in url:
        raise ConfigError(
            f"git_url {url!r} (or ${GIT_URL_ENV}): code references link to GitHub or GitLab only."
            " Give the repository's https URL, e.g. https://github.com/acme/lakehouse, or unset it."
        )
    with warnings.catch_warnings():
        # Code references are "beta" in Dagster 1.13; the warning would print on every load.
        warnings.simplefilter("ignore", dg.BetaWarning)
        return list(
            dg.link_code_references_to_git(
                assets,  # type: ignore[arg-type]
                git_url=url,
                git_branch=branch,
                file_path_mapping=dg.AnchorBasedFilePathMapping(
                    local_file_anchor=Path(root), file_anchor_path_in_repository=""
                ),
            )
        )
