"""The README stays short and keeps the two commands a newcomer starts with, and every relative
link in README.md and docs/*.md leads to a file that exists and, for `page.md#anchor`, to one of
its headings (GitHub's anchors: lowercase, spaces to '-', punctuation other than '-' and '_'
dropped, a repeated heading's anchor numbered)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from harness.pulumi_cli import REPO

README = REPO / "README.md"
README_MAX_LINES = 250
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
_INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:[ \t]*<?(\S+?)>?(?:[ \t]+.*)?$", re.MULTILINE)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line outside fenced code blocks."""
    lines: list[tuple[int, str]] = []
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        opening = _FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)[0] * len(opening.group(1))
        elif fence is not None:
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
        else:
            lines.append((number, line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = re.sub(r"<[^>]+>", "", text).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in prose_lines(page.read_text()):
        match = _HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def relative_links(page: Path) -> list[tuple[int, str]]:
    """(line number, target) of every link that is not a URL with a scheme (http:, mailto:); a
    link's text may run over lines."""
    lines = dict(prose_lines(page.read_text()))
    text = "\n".join(lines.get(number, "") for number in range(1, max(lines, default=0) + 1))
    text = _CODE_SPAN.sub(lambda span: "code" + "\n" * span.group(0).count("\n"), text)
    found = [(m.start(), m.group(1)) for m in _INLINE_LINK.finditer(text)]
    found += [(m.start(), m.group(1)) for m in _REFERENCE.finditer(text)]
    return sorted((text.count("\n", 0, start) + 1, target) for start, target in found if not _SCHEME.match(target))


def broken(page: Path, target: str) -> str | None:
    """Why `target`, linked from `page`, leads nowhere; None when it resolves."""
    path, _, anchor = target.partition("#")
    path = unquote(path)
    resolved = (REPO / path.lstrip("/")) if path.startswith("/") else (page.parent / path if path else page)
    resolved = resolved.resolve()
    if not resolved.is_relative_to(REPO):
        return "points outside the repository"
    if not resolved.exists():
        return f"{resolved.relative_to(REPO)} does not exist"
    if anchor and resolved.suffix == ".md" and unquote(anchor).lower() not in anchors(resolved):
        return f"{resolved.relative_to(REPO)} has no heading whose anchor is #{anchor}"
    return None


def test_the_readme_is_at_most_250_lines() -> None:
    lines = len(README.read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail to a page under docs/"


def test_the_readme_names_the_two_commands_of_the_quick_start() -> None:
    text = README.read_text()
    for command in ("make demo", "make test"):
        assert re.search(rf"{command}(?![\w-])", text), f"README.md no longer names `{command}`"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(page: Path) -> None:
    problems = [
        f"{page.relative_to(REPO)}:{number}: ({target}) {why}"
        for number, target in relative_links(page)
        if (why := broken(page, target)) is not None
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("How long a host may keep `pulumi` waiting", "how-long-a-host-may-keep-pulumi-waiting"),
        ("Where a run's results are", "where-a-runs-results-are"),
        ("Air-gapped install (labs without internet)", "air-gapped-install-labs-without-internet"),
        ("2026-12-06 (evening): the image relayed", "2026-12-06-evening-the-image-relayed"),
        ("snake_case and [a link](x.md)", "snake_case-and-a-link"),
    ],
)
def test_anchors_follow_githubs_rules(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_links_in_code_are_not_links_and_repeated_headings_are_numbered(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Tests\n\n## Tests\n\n`[not](a-link.md)`\n\n```\n[nor](this.md)\n# not a heading\n```\n"
        "[a link over\ntwo lines](two.md) and [one](#tests-1)\n\n[ref]: ref.md\n"
    )
    assert relative_links(page) == [(11, "two.md"), (12, "#tests-1"), (14, "ref.md")]
    assert anchors(page) == {"tests", "tests-1"}
