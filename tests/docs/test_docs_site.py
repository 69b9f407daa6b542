"""The docs site builds with `mkdocs build --strict` (a broken link, a missing anchor, a page left
out of the navigation, a docstring mkdocstrings cannot read or an include that is gone fails it),
offline, and the README stays a front page whose links lead somewhere."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.blocks import ROOT


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "DISABLE_MKDOCS_2_WARNING": "true", "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr}"
    return out


def test_the_site_builds_strictly_with_its_generated_pages(site: Path) -> None:
    configuration = (site / "reference" / "configuration" / "index.html").read_text()
    assert "STACK_WAIT_MS" in configuration and "IDLE_MINUTES" in configuration
    api = (site / "reference" / "http-api" / "index.html").read_text()
    assert "/sessions/{session_id}/messages" in api
    client = (site / "client" / "reference" / "index.html").read_text()
    assert "ChatMemoryClient" in client and "store_turn" in client


def test_the_site_needs_nothing_from_the_internet(site: Path) -> None:
    """No web fonts (theme.font is false), no social cards; the search index is local."""
    for page in site.rglob("*.html"):
        text = page.read_text()
        assert "fonts.googleapis.com" not in text and "fonts.gstatic.com" not in text, page
    assert (site / "search" / "search_index.json").exists()


def test_notes_of_work_in_progress_are_not_part_of_the_site() -> None:
    assert re.search(r"exclude_docs:\s*\|\s*\n\s*notes/", (ROOT / "mkdocs.yml").read_text())


def test_the_readme_is_a_front_page_whose_links_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 200
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme):
        if "://" not in target:
            assert (ROOT / target).exists(), f"README.md links to {target}, which is not there"
