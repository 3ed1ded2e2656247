"""The documentation as a reader finds it: a short front page, a changelog, links that lead somewhere, and the
docs site built with MkDocs in strict mode (a broken link or anchor between pages fails it)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: Markdown links: [text](target), the target without a scheme (a file of the repository, maybe with an anchor).
RELATIVE_LINK = re.compile(r"\]\((?![a-z]+:)([^)\s#]*)(#[^)\s]*)?\)")


def _relative_links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return [target for target, _ in RELATIVE_LINK.findall(text) if target]


def test_readme_is_a_front_page_of_at_most_250_lines() -> None:
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines"
    assert "## Changes" not in lines, "the changelog lives in CHANGELOG.md"
    assert any(line.startswith("make demo") for line in lines) and any(line.startswith("make test") for line in lines)


def test_changelog_is_in_keep_a_changelog_form() -> None:
    text = (REPO / "CHANGELOG.md").read_text()
    assert text.startswith("# Changelog\n")
    assert "## [Unreleased]" in text
    versions = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", text, flags=re.M)
    assert versions, "no released version with its date"
    kinds = set(re.findall(r"^### (\w+)$", text, flags=re.M))
    assert kinds <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}, kinds


@pytest.mark.parametrize("page", ["README.md", "CHANGELOG.md", "bench/README.md", "examples/sdp/README.md"])
def test_every_relative_link_of_a_repository_page_leads_to_a_file(page: str) -> None:
    source = REPO / page
    missing = [target for target in _relative_links(source) if not (source.parent / target).exists()]
    assert not missing, f"{page} links to files that do not exist: {missing}"


def test_the_docs_site_builds_in_strict_mode(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    pages = {path.relative_to(tmp_path / "site").as_posix() for path in (tmp_path / "site").rglob("index.html")}
    assert {"index.html", "sql/index.html", "partition-commit/index.html", "configuration/index.html"} <= pages
    sources = [page for page in (REPO / "docs").glob("*.md") if page.stem != "index"]
    unbuilt = [page.name for page in sources if f"{page.stem}/index.html" not in pages]
    assert not unbuilt, f"pages left out of the site: {unbuilt}"
