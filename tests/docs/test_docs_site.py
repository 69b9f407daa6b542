"""The docs site builds with `mkdocs build --strict` (a broken link, a missing anchor, a page left
out of the navigation, a docstring mkdocstrings cannot read or an include that is gone fails it),
offline, and the README stays a front page whose links lead somewhere."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

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


def test_the_layout_page_draws_the_turn_pipeline_from_its_stage_list(site: Path) -> None:
    """The pipeline's diagram and table are made from pipeline.STAGES when the site is built,
    in place of the marker line docs/layout.md keeps for them."""
    import html
    import itertools

    from chatmemory.services.conversation.turn import pipeline

    layout = html.unescape((site / "layout" / "index.html").read_text())
    assert "the turn pipeline: made from pipeline.STAGES" not in layout
    diagram = re.search(r'<pre class="mermaid"><code>(.*?)</code></pre>', layout, re.S)
    assert diagram is not None and "flowchart LR" in diagram.group(1)
    for stage in pipeline.STAGES:
        assert f"{stage.name}<br/><small>{stage.does}</small>" in diagram.group(1)
        for transition in stage.transitions:
            assert transition.cause in layout
    arrows = [f"{a.name} --> {b.name}" for a, b in itertools.pairwise(pipeline.STAGES)]
    assert all(arrow in diagram.group(1) for arrow in arrows)


def test_the_site_needs_nothing_from_the_internet(site: Path) -> None:
    """No web fonts (theme.font is false), no social cards; the search index is local."""
    for page in site.rglob("*.html"):
        text = page.read_text()
        assert "fonts.googleapis.com" not in text and "fonts.gstatic.com" not in text, page
    assert (site / "search" / "search_index.json").exists()


# What a page loads (not what it links to): scripts, stylesheets, icons, images, frames.
RESOURCE = re.compile(
    r"<(?:script|link|img|iframe|source|audio|video|embed)\b[^>]*?\b(?:src|href)=\"([^\"]+)\"",
    re.IGNORECASE,
)
CSS_URL = re.compile(r"(?:url\(\s*['\"]?|@import\s+['\"])([^'\")]+)")


def _elsewhere(url: str) -> bool:
    return url.startswith("//") or urlsplit(url).scheme in ("http", "https")


def test_the_site_references_no_outside_host_and_serves_mermaid_itself(site: Path) -> None:
    """Every script, stylesheet and image of every page comes from the site. Material for MkDocs
    loads Mermaid from a CDN when a page with a diagram is viewed, unless the page has loaded it
    already: every such page loads the site's own copy."""
    for page in site.rglob("*.html"):
        text = page.read_text()
        outside = [url for url in RESOURCE.findall(text) if _elsewhere(url)]
        assert not outside, f"{page.relative_to(site)} loads {outside}"
        if 'class="mermaid"' in text:
            base = page.relative_to(site).as_posix()
            scripts = {urlsplit(urljoin(base, url)).path for url in RESOURCE.findall(text)}
            assert "javascripts/mermaid.min.js" in scripts, f"{base} has no Mermaid of its own"
    for sheet in site.rglob("*.css"):
        outside = [url for url in CSS_URL.findall(sheet.read_text()) if _elsewhere(url)]
        assert not outside, f"{sheet.relative_to(site)} loads {outside}"
    assert (site / "javascripts" / "mermaid.min.js").stat().st_size > 1_000_000


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass


@pytest.fixture(scope="module")
def served_site(site: Path) -> Iterator[str]:
    """The built site over HTTP on 127.0.0.1, as `make docs` serves it."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_diagram_draws_with_no_internet(browser: Any, served_site: str) -> None:
    """Failed before: "The turn, a state machine" showed the diagram's source as text offline
    (Material fetched Mermaid from unpkg.com when the page was viewed)."""
    from playwright.sync_api import expect

    page = browser.new_page()
    outside: list[str] = []

    def offline(route: Any) -> None:
        url = route.request.url
        if urlsplit(url).scheme in ("http", "https") and not url.startswith(served_site + "/"):
            outside.append(url)
            route.abort("internetdisconnected")
        else:
            route.continue_()

    page.route("**/*", offline)
    page.goto(served_site + "/concepts/turn-states/")
    # Material draws each diagram into a div (in a closed shadow root) in place of its source.
    drawn = page.locator("article div.mermaid")
    expect(drawn).to_have_count(1, timeout=30_000)
    expect(page.locator("article pre.mermaid")).to_have_count(0)
    box = drawn.bounding_box()
    assert box is not None and box["height"] > 100, box
    assert outside == []
    page.close()


def test_notes_of_work_in_progress_are_not_part_of_the_site() -> None:
    assert re.search(r"exclude_docs:\s*\|\s*\n\s*notes/", (ROOT / "mkdocs.yml").read_text())


def test_the_readme_is_a_front_page_whose_links_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 200
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme):
        if "://" not in target:
            assert (ROOT / target).exists(), f"README.md links to {target}, which is not there"
