"""The README and the pages under docs/ hold together, and the README's quick start is tested.

* Every relative link and ``#anchor`` in README.md and docs/*.md resolves: the target exists
  inside the repository (and is not git-ignored, so a clone has it), and an anchor is the
  GitHub slug of a heading in the target page. Links into ``../shared`` or any other folder
  outside the repository fail; http(s) links are not fetched.
* Every docs page is reachable from the README, directly or through another page.
* Every command in the README's quick-start code blocks is one that CI (``.ci/run``) or a test
  runs: ``bash scripts/test.sh`` is CI's test command; ``bash scripts/dev.sh`` is run step by
  step (its setup by CI, its seeding and its ``dagster dev`` on ``workspace.yaml`` by the UI
  smoke test CI runs, its ``scripts/dagster_dev.py`` wrapper by ``e2e/test_dagster_dev.py``).
  A changed command, or a new step in ``scripts/dev.sh`` that nothing runs, fails here.
* docs/scd2-history.md quotes the demo's SCD2 files as they are.

The checker's own behaviour is tested on small fixture trees first, so that a broken link is
known to fail.
"""

import os
import re
import shutil
import subprocess
import urllib.parse

import pytest

from assetlake_dagster.demo import DEMO_PROJECT_DIR
from assetlake_dagster_tests.helpers import REPO

#: A README a newcomer reads in five minutes; the manual lives in docs/.
README_MAX_LINES = 250

FENCE_RE = re.compile(r"^\s{0,3}(```|~~~)")
HEADING_RE = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR_RE = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.IGNORECASE)
CODE_SPAN_RE = re.compile(r"(`+)(.+?)\1")
# [text](target "title") and ![alt](target); link text may hold one level of brackets.
INLINE_LINK_RE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF_RE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
EXTERNAL_SCHEMES = ("http://", "https://", "mailto:")
LINE_ANCHOR_RE = re.compile(r"^L\d+(-L\d+)?$")


# -- the checker -----------------------------------------------------------------------------


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text without markup, lower-cased, punctuation
    dropped (letters, digits, ``_`` and ``-`` kept), each space a ``-``.

    Example:
        >>> github_slug("Run configuration for `$` arguments")
        'run-configuration-for--arguments'
    """
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", heading)  # links -> their text
    # A code span is literal text (`<table>` included); outside one, `<…>` is inline HTML.
    text = CODE_SPAN_RE.sub(lambda m: m.group(2).replace("<", "").replace(">", ""), text)
    text = re.sub(r"<[^>]+>", "", text)
    text = text.replace("*", "")
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _prose_lines(text: str):
    """(1-based line number, line) for every line outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE_RE.match(line)
        if match:
            if fence is None:
                fence = match.group(1)
            elif match.group(1) == fence:
                fence = None
            continue
        if fence is None:
            yield number, line


def anchors(path: str) -> set[str]:
    """The anchors a Markdown page has: GitHub's heading slugs (repeats numbered ``-1``,
    ``-2``…) and explicit ``<a name=…>``/``id=…`` anchors."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in _prose_lines(text):
        found.update(HTML_ANCHOR_RE.findall(line))
        match = HEADING_RE.match(line)
        if not match:
            continue
        slug = github_slug(match.group(2))
        if slug in seen:
            seen[slug] += 1
            slug = f"{slug}-{seen[slug]}"
        else:
            seen[slug] = 0
        found.add(slug)
    return found


def links(path: str) -> list[tuple[int, str]]:
    """(line, target) of every Markdown link and image outside code."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found = []
    for number, line in _prose_lines(text):
        prose = CODE_SPAN_RE.sub(lambda m: " " * len(m.group(0)), line)
        found.extend((number, target) for target in INLINE_LINK_RE.findall(prose))
        definition = REFERENCE_DEF_RE.match(prose)
        if definition:
            found.append((number, definition.group(1)))
    return found


def _git_ignored(root: str, paths: list[str]) -> set[str]:
    """The paths (absolute) that git ignores in ``root``; none when it is no git checkout."""
    if not paths or shutil.which("git") is None or not os.path.exists(os.path.join(root, ".git")):
        return set()
    proc = subprocess.run(
        ["git", "-C", root, "check-ignore", "--stdin"],
        input="\n".join(os.path.relpath(p, root) for p in paths),
        capture_output=True, text=True, check=False,
    )
    return {os.path.normpath(os.path.join(root, p)) for p in proc.stdout.splitlines() if p}


def link_problems(root: str, pages: list[str]) -> list[str]:
    """Every link of ``pages`` (absolute paths inside ``root``) that does not resolve."""
    root = os.path.realpath(root)
    problems, resolved = [], []
    anchor_cache: dict[str, set[str]] = {}
    for page in pages:
        name = os.path.relpath(page, root)
        for line, target in links(page):
            where = f"{name}:{line}: link '{target}'"
            if target.startswith(EXTERNAL_SCHEMES):
                continue
            if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", target):
                problems.append(f"{where}: a scheme that is not http(s); link inside the repository or to a public page")
                continue
            path_part, _, anchor = target.partition("#")
            path_part = urllib.parse.unquote(path_part)
            if path_part.startswith("/"):
                problems.append(f"{where}: an absolute path; write it relative to {name}")
                continue
            dest = os.path.normpath(os.path.join(os.path.dirname(page), path_part)) if path_part else page
            real = os.path.realpath(dest)
            if os.path.commonpath([root, real]) != root:
                problems.append(f"{where}: leaves the repository; a user of the repository does not have {real}")
                continue
            if not os.path.exists(dest):
                problems.append(f"{where}: {os.path.relpath(dest, root)} does not exist")
                continue
            if path_part:
                resolved.append((where, dest))
            if not anchor:
                continue
            if dest.endswith(".md"):
                if dest not in anchor_cache:
                    anchor_cache[dest] = anchors(dest)
                if anchor not in anchor_cache[dest]:
                    near = sorted(a for a in anchor_cache[dest] if a.split("-")[0] == anchor.split("-")[0])
                    hint = f" Headings there: {', '.join(near)}." if near else ""
                    problems.append(f"{where}: no heading in {os.path.relpath(dest, root)} has the anchor #{anchor}.{hint}")
            elif not LINE_ANCHOR_RE.match(anchor):
                problems.append(f"{where}: an anchor into a file that is not Markdown")
    ignored = _git_ignored(root, sorted({dest for _, dest in resolved}))
    problems.extend(f"{where}: {os.path.relpath(dest, root)} is git-ignored, so a clone lacks it"
                    for where, dest in resolved if dest in ignored)
    return problems


def unreachable_pages(root: str, readme: str, pages: list[str]) -> list[str]:
    """The docs pages no chain of links from the README reaches."""
    seen, todo = {os.path.realpath(readme)}, [readme]
    while todo:
        page = todo.pop()
        for _, target in links(page):
            path_part = urllib.parse.unquote(target.partition("#")[0])
            if not path_part or target.startswith(EXTERNAL_SCHEMES):
                continue
            dest = os.path.realpath(os.path.join(os.path.dirname(page), path_part))
            if dest.endswith(".md") and os.path.isfile(dest) and dest not in seen:
                seen.add(dest)
                todo.append(dest)
    return [os.path.relpath(p, root) for p in pages if os.path.realpath(p) not in seen]


def section_commands(path: str, heading_prefix: str) -> list[str]:
    """The shell commands of the code blocks under the first heading starting with
    ``heading_prefix``, up to the next heading of the same or a higher level: one per
    logical line, comments and blank lines dropped."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    commands, level, fence, pending = [], None, None, ""
    for line in lines:
        match = FENCE_RE.match(line)
        if fence is None and not match:
            heading = HEADING_RE.match(line)
            if heading:
                if level is not None and len(heading.group(1)) <= level:
                    break
                if level is None and heading.group(2).startswith(heading_prefix):
                    level = len(heading.group(1))
            continue
        if match:
            fence = match.group(1) if fence is None else (None if match.group(1) == fence else fence)
            continue
        if level is None:
            continue
        code = re.sub(r"(^|\s)#.*$", "", line).rstrip()
        if code.endswith("\\"):
            pending += code[:-1].strip() + " "
            continue
        code = (pending + code.strip()).strip()
        pending = ""
        if code:
            commands.append(code)
    if level is None:
        raise AssertionError(f"{path} has no heading starting with {heading_prefix!r}")
    return commands


def _script_lines(path: str) -> list[str]:
    """A shell script's command lines, comments and blank lines dropped."""
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip() and not line.strip().startswith("#")]


def script_steps(path: str) -> list[str]:
    """The project's own programs a shell script runs (``bash scripts/…``, ``.venv/bin/…``), one
    entry per invocation, as written."""
    steps = []
    for line in _script_lines(path):
        for piece in re.split(r";;|\|\||&&|;", line):
            piece = re.sub(r"^\s*[^\s()]*\)\s*", "", piece)  # a case pattern: `s3a://*|s3://*) …`
            piece = re.sub(r"^\s*exec\s+", "", piece).strip()
            if piece.startswith(("bash scripts/", ".venv/bin/")):
                steps.append(piece)
    return steps


def _runs(rel_path: str, pattern: str) -> bool:
    """Whether a command line of the file (comments dropped) matches ``pattern``."""
    path = os.path.join(REPO, rel_path)
    if rel_path.endswith(".py"):
        with open(path, encoding="utf-8") as f:
            return re.search(pattern, f.read()) is not None
    return any(re.search(pattern, line) for line in _script_lines(path))


#: Where CI runs each step of scripts/dev.sh: (a step's pattern, [(file, pattern, why)]).
#: .ci/run runs scripts/setup.sh, scripts/ui_smoke.sh and scripts/test.sh (the whole suite,
#: e2e/test_dagster_dev.py included): each is checked below as well.
DEV_STEPS = [
    (r"^bash scripts/setup\.sh( --with s3)?$", [
        (".ci/run", r"^bash scripts/setup\.sh\b", "CI sets up with scripts/setup.sh"),
    ]),
    (r"^\.venv/bin/assetlake demo land --seed$", [
        ("scripts/ui_smoke.sh", r"\.venv/bin/assetlake\"? demo land --seed$", "the UI smoke seeds the landing table as dev.sh does"),
    ]),
    (r"^\.venv/bin/python scripts/dagster_dev\.py -w \"\$workspace\"", [
        ("scripts/dev.sh", r"^workspace=workspace\.yaml$", "the demo's workspace is workspace.yaml"),
        ("scripts/ui_smoke.sh", r"dagster\"? dev -w workspace\.yaml\b", "the UI smoke serves workspace.yaml in dagster dev"),
        ("assetlake_dagster_tests/e2e/test_dagster_dev.py",
         r"os\.path\.join\(REPO, \"scripts\", \"dagster_dev\.py\"\),\s*\"-w\"",
         "e2e/test_dagster_dev.py starts dagster dev through scripts/dagster_dev.py"),
    ]),
]
CI_RUNS = [
    (".ci/run", r"^bash scripts/setup\.sh\b"),
    (".ci/run", r"bash scripts/ui_smoke\.sh\b"),
    (".ci/run", r"^bash scripts/test\.sh\b"),
]


def quick_start_problems(commands: list[str]) -> list[str]:
    """Each quick-start command that no test or CI runs, and each broken link of the chain."""
    problems = [f"CI no longer runs /{pattern}/ in {path}" for path, pattern in CI_RUNS if not _runs(path, pattern)]
    for command in commands:
        if command == "bash scripts/dev.sh":
            for step in script_steps(os.path.join(REPO, "scripts", "dev.sh")):
                evidence = next((ev for pattern, ev in DEV_STEPS if re.search(pattern, step)), None)
                if evidence is None:
                    problems.append(f"scripts/dev.sh runs `{step}`, which no test or CI runs")
                    continue
                problems.extend(f"scripts/dev.sh runs `{step}`, but {path} no longer matches /{pattern}/ ({why})"
                                for path, pattern, why in evidence if not _runs(path, pattern))
        elif re.fullmatch(r"bash scripts/test\.sh", command):
            pass  # CI_RUNS: .ci/run runs it
        else:
            problems.append(f"the README's quick start shows `{command}`, which neither .ci/run nor a test runs")
    return problems


# -- the checker on fixture trees ------------------------------------------------------------


@pytest.mark.parametrize(
    "heading, slug",
    [
        pytest.param("Quick start: two commands", "quick-start-two-commands", id="punctuation"),
        pytest.param("Run configuration for `$` arguments", "run-configuration-for--arguments", id="code-span"),
        pytest.param("The current rows: `<table>_current`", "the-current-rows-table_current", id="underscore"),
        pytest.param("What `build_definitions` returns", "what-build_definitions-returns", id="identifier"),
        pytest.param("**Bold** and [a link](x.md)", "bold-and-a-link", id="markup"),
        pytest.param("One query for a range: `event_time=`", "one-query-for-a-range-event_time", id="equals"),
        pytest.param("Données à jour", "données-à-jour", id="unicode"),
    ],
)
def test_github_slug(heading, slug):
    assert github_slug(heading) == slug


def _tree(tmp_path, files: dict[str, str]) -> str:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return str(tmp_path / "repo")


def test_the_checker_accepts_links_that_resolve(tmp_path):
    root = _tree(tmp_path, {
        "repo/README.md": "# Title\n\nSee [a](docs/a.md#second-part), [b](docs/a.md), "
                          "![img](docs/img/x.png), [top](#title) and <https://example.com>.\n\n"
                          "```bash\n[not a link](missing.md)\n```\n\n`[code](missing.md)`\n",
        "repo/docs/a.md": "# A\n\n## Second part\n\n## Second part\n\nBack: [readme](../README.md#title), "
                          "[again](#second-part-1).\n",
        "repo/docs/img/x.png": "",
    })
    pages = [os.path.join(root, "README.md"), os.path.join(root, "docs", "a.md")]
    assert link_problems(root, pages) == []


@pytest.mark.parametrize(
    "link, problem",
    [
        pytest.param("docs/missing.md", "docs/missing.md does not exist", id="missing-file"),
        pytest.param("docs/a.md#no-such-heading", "no heading in docs/a.md has the anchor #no-such-heading", id="missing-anchor"),
        pytest.param("#nowhere", "no heading in README.md has the anchor #nowhere", id="missing-local-anchor"),
        pytest.param("../shared/BENCHMARKS.md", "leaves the repository", id="outside"),
        pytest.param("/etc/passwd", "an absolute path", id="absolute"),
        pytest.param("file:///etc/passwd", "a scheme that is not http(s)", id="scheme"),
    ],
)
def test_the_checker_reports_a_broken_link(tmp_path, link, problem):
    root = _tree(tmp_path, {
        "repo/README.md": f"# Title\n\nSee [it]({link}).\n",
        "repo/docs/a.md": "# A\n",
        "shared/BENCHMARKS.md": "# Outside\n",
    })
    problems = link_problems(root, [os.path.join(root, "README.md")])
    assert len(problems) == 1 and problem in problems[0], problems
    assert problems[0].startswith(f"README.md:3: link '{link}'")


def test_the_checker_finds_unreachable_pages(tmp_path):
    root = _tree(tmp_path, {
        "repo/README.md": "[a](docs/a.md)\n",
        "repo/docs/a.md": "[b](b.md#x)\n",
        "repo/docs/b.md": "# X\n",
        "repo/docs/orphan.md": "# Orphan\n",
    })
    pages = [os.path.join(root, "docs", n) for n in ("a.md", "b.md", "orphan.md")]
    assert unreachable_pages(root, os.path.join(root, "README.md"), pages) == ["docs/orphan.md"]


def test_quick_start_commands_are_read_from_the_section_only(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(
        "# T\n\n## Quick start: two commands\n\n```bash\nbash scripts/dev.sh   # the demo\n\n"
        "# a comment\nbash scripts/test.sh -m \\\n  unit\n```\n\n### Sub\n\n```bash\necho sub\n```\n\n"
        "## Next\n\n```bash\necho other\n```\n"
    )
    assert section_commands(str(readme), "Quick start") == ["bash scripts/dev.sh", "bash scripts/test.sh -m unit", "echo sub"]


def test_a_quick_start_command_that_nothing_runs_is_reported():
    assert quick_start_problems(["bash scripts/dev.sh", "bash scripts/test.sh"]) == []
    assert quick_start_problems(["bash scripts/test.sh -m unit"]) == [
        "the README's quick start shows `bash scripts/test.sh -m unit`, which neither .ci/run nor a test runs"
    ]
    assert quick_start_problems(["dagster dev -m assetlake_dagster.definitions"]) == [
        "the README's quick start shows `dagster dev -m assetlake_dagster.definitions`, which neither .ci/run nor a test runs"
    ]


def test_script_steps_reads_the_projects_own_programs(tmp_path):
    script = tmp_path / "dev.sh"
    script.write_text(
        "#!/usr/bin/env bash\n# bash scripts/commented.sh\ncase x in\n  s3a://*) bash scripts/setup.sh --with s3 ;;\n"
        "  *) bash scripts/setup.sh ;;\nesac\nexport P=\"$PWD/.venv/bin/python\"\n"
        "[ -f x ] || cp scripts/dagster.yaml y\n.venv/bin/assetlake demo land --seed\n"
        "exec .venv/bin/python scripts/dagster_dev.py -w \"$w\"\n"
    )
    assert script_steps(str(script)) == [
        "bash scripts/setup.sh --with s3",
        "bash scripts/setup.sh",
        ".venv/bin/assetlake demo land --seed",
        ".venv/bin/python scripts/dagster_dev.py -w \"$w\"",
    ]


# -- the repository's README and docs ----------------------------------------------------------


def _pages() -> list[str]:
    docs = os.path.join(REPO, "docs")
    return [os.path.join(REPO, "README.md")] + sorted(
        os.path.join(docs, name) for name in os.listdir(docs) if name.endswith(".md")
    )


def test_every_link_and_anchor_in_the_readme_and_docs_resolves():
    problems = link_problems(REPO, _pages())
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_every_docs_page_is_reachable_from_the_readme():
    orphans = unreachable_pages(REPO, os.path.join(REPO, "README.md"), _pages()[1:])
    assert not orphans, f"no link from the README (or a page it links to) reaches {orphans}"


def test_every_quick_start_command_is_run_by_ci_or_a_test():
    commands = section_commands(os.path.join(REPO, "README.md"), "Quick start")
    problems = quick_start_problems(commands)
    assert not problems, "\n".join(problems)
    # The two commands the README promises: the demo in dagster dev, and the tests.
    assert "bash scripts/dev.sh" in commands and "bash scripts/test.sh" in commands, commands


@pytest.mark.parametrize("name", ["dim_customer.sql", "fct_orders.sql"])
def test_the_scd2_page_shows_the_demo_files_as_they_are(name):
    """docs/scd2-history.md quotes both demo files verbatim; an edit of either must update it."""
    with open(os.path.join(REPO, "docs", "scd2-history.md"), encoding="utf-8") as f:
        page = f.read()
    with open(os.path.join(DEMO_PROJECT_DIR, name), encoding="utf-8") as f:
        assert f"```sql\n{f.read().rstrip()}\n```" in page, f"docs/scd2-history.md does not show {name} as it is"


def test_the_readme_stays_short():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        count = len(f.read().splitlines())
    assert count <= README_MAX_LINES, (
        f"README.md has {count} lines (at most {README_MAX_LINES}): move the detail to a page under docs/ and link it"
    )
