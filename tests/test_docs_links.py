"""Every relative link and `#anchor` in the README, CONTRIBUTING.md and docs/*.md leads somewhere.

The README is a front door and the deep sections live one page per subject under docs/; pages link to
each other's sections by GitHub's heading anchors. A heading reworded, a page renamed or a section moved
silently breaks those links on GitHub, so every one is checked here: the file it names exists, and its
anchor is the slug of a heading in that file by GitHub's rules (lowercase, punctuation dropped but `-`
and `_`, spaces to `-`, a repeated heading gets `-1`, `-2`, ...). External http(s) links are not checked.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
EXTERNAL = ("http://", "https://", "mailto:", "ftp://")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """The lines outside fenced code blocks, with their line numbers."""
    lines, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append((number, line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text (without the numbering of repeats)."""
    text = INLINE_CODE.sub(lambda m: m.group(2), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading anchors by its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML tags
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor GitHub makes for `path`'s headings, repeats numbered as it numbers them."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) for every Markdown link and image outside code, external ones left out.

    A link's text may run over a line break, so the prose is searched whole, code blocks blanked
    line for line so that the numbers stay right.
    """
    text = path.read_text(encoding="utf-8")
    kept = dict(prose_lines(text))
    prose = "\n".join(kept.get(number, "") for number in range(1, len(text.splitlines()) + 1))
    # inline code cannot hold a link, but a link's text may hold inline code: blank the code, keep the link
    prose = INLINE_CODE.sub(lambda m: "x" * len(m.group(0)), prose)
    out = []
    for match in LINK.finditer(prose):
        target = match.group(1)
        if target and not target.lower().startswith(EXTERNAL):
            out.append((prose.count("\n", 0, match.start()) + 1, target))
    return out


def broken_links(path: Path) -> list[str]:
    """One line per link of `path` whose file is missing or whose anchor matches no heading there."""
    problems = []
    for number, target in links(path):
        file_part, _, anchor = target.partition("#")
        destination = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{number}: {target}"
        if not destination.exists():
            problems.append(f"{where}: no such file {destination}")
            continue
        if not anchor:
            continue
        if destination.is_dir() or destination.suffix.lower() != ".md":
            problems.append(f"{where}: an anchor into something that is not a Markdown page")
        elif anchor not in anchors(destination):
            problems.append(f"{where}: no heading in {destination.name} has the anchor #{anchor}")
    return problems


def test_the_pages_are_there() -> None:
    names = {page.name for page in PAGES}
    assert {"README.md", "CONTRIBUTING.md"} <= names
    assert len(PAGES) > 2, "docs/ holds no pages"
    for page in PAGES:
        assert page.exists(), page


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    assert not broken_links(page), "\n".join(broken_links(page))


def test_slugs_follow_githubs_rules() -> None:
    assert slug("Where the call time goes: the call breakdown") == "where-the-call-time-goes-the-call-breakdown"
    assert slug("Measured, not estimated: the counters pass (`n`, `--counters`)") == (
        "measured-not-estimated-the-counters-pass-n---counters"
    )
    assert slug("gputop's own runs") == "gputops-own-runs"
    assert slug("Reading a capture: `gputop capture-info FILE.rdc`") == "reading-a-capture-gputop-capture-info-filerdc"
    assert slug("snake_case stays") == "snake_case-stays"


def test_a_broken_link_and_a_broken_anchor_are_caught(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Title\n\n## Part: one\n\n## Part: one\n\n```sh\n# not a heading\n```\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[fine](other.md#part-one) [fine too](other.md#part-one-1) [self](#a-heading) [web](https://example.com/x)\n"
        "`[in code](missing.md)`\n\n"
        "# A heading\n\n"
        "[gone](missing.md) [bad anchor](other.md#part-two) [fenced](other.md#not-a-heading)\n"
        "[no repeat](#a-heading-1) [split over\ntwo lines](other.md#nowhere)\n"
    )
    problems = broken_links(page)
    assert len(problems) == 5, problems
    assert any("missing.md" in p and "no such file" in p for p in problems)
    assert any("#part-two" in p for p in problems)
    assert any("#not-a-heading" in p for p in problems)
    assert any("#a-heading-1" in p for p in problems)
    assert any("#nowhere" in p and p.startswith(f"{page}:7:") for p in problems), problems
