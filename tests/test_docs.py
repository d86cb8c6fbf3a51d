"""The manual's shape: README.md stays short, docs/index.md lists every page, links resolve.

README.md is the first page (what, install, quickstart, environments, agents, summaries, layout);
everything longer lives in docs/, and docs/index.md links every page there, so no page is lost.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAX_README_LINES = 250
#: a Markdown link's target: ](target) or ](target#anchor), not an absolute URL
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)\s]*)?\)")


def local_links(text: str) -> list[str]:
    """Relative link targets of ``text``, outside code blocks and code spans."""
    prose = re.sub(r"`[^`\n]*`", "", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))
    return [t for t in LINK.findall(prose) if not re.match(r"^[a-z]+:", t)]


def test_readme_is_short() -> None:
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines (at most {MAX_README_LINES}): move details to docs/"


def test_readme_links_the_docs_index() -> None:
    assert "docs/index.md" in local_links(README.read_text(encoding="utf-8"))


def test_docs_index_links_every_page() -> None:
    index = DOCS / "index.md"
    linked = {(DOCS / t).resolve() for t in local_links(index.read_text(encoding="utf-8"))}
    pages = {p.resolve() for p in DOCS.glob("*.md") if p.name != "index.md"}
    missing = sorted(p.name for p in pages - linked)
    assert not missing, f"docs/index.md does not link: {', '.join(missing)}"


@pytest.mark.parametrize("page", [README, *sorted(DOCS.glob("*.md"))], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_local_links_resolve(page: Path) -> None:
    broken = [t for t in local_links(page.read_text(encoding="utf-8")) if not (page.parent / t).exists()]
    assert not broken, f"{page.relative_to(ROOT)} links to missing files: {broken}"
