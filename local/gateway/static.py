"""The web page's files, served beside the API: `/` and `/index.html`, `/static/<name>` (a file
directly in the page's folder) and `/openapi.json`."""

from __future__ import annotations

import mimetypes
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

# The page talks to this origin or to the API URL set in its settings panel.
PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src *; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)


@dataclass(frozen=True)
class PageFile:
    """A request for one of the page's paths: the file to send, or None when there is no such
    file (404)."""

    file: Path | None


class StaticFiles:
    """Which request targets are the page's, and the file each one names."""

    def __init__(self, web_dir: Path, openapi_path: Path) -> None:
        self.web_dir = Path(web_dir).resolve()
        self.openapi_path = openapi_path

    def find(self, target: str) -> PageFile | None:
        """The page's file for a request target; None when the path is not the page's (the
        request is then the API's)."""
        path = unquote(urlsplit(target).path)
        if path in ("/", "/index.html"):
            return PageFile(self.web_dir / "index.html")
        if path.startswith("/static/"):
            return PageFile(self._static_file(path[len("/static/") :]))
        if path == "/openapi.json" and self.openapi_path.exists():
            return PageFile(self.openapi_path)
        return None

    def _static_file(self, name: str) -> Path | None:
        """A file directly in the page's folder, or None (a name the file system refuses, such
        as one too long, is no such file either)."""
        try:
            file = (self.web_dir / name).resolve()
            found = file.parent == self.web_dir and file.is_file()
        except (OSError, ValueError):
            return None
        return file if found else None


def file_headers(file: Path) -> dict[str, str]:
    """The headers a page file is sent with: its type, no caching, and for the page itself the
    content security policy."""
    kind = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
    if kind.startswith("text/") or kind in ("application/javascript", "application/json"):
        kind += "; charset=utf-8"
    headers = {
        "Content-Type": kind,
        "Cache-Control": "no-cache",
        "X-Content-Type-Options": "nosniff",
    }
    if file.suffix == ".html":
        headers["Content-Security-Policy"] = PAGE_POLICY
        headers["Referrer-Policy"] = "no-referrer"
    return headers
