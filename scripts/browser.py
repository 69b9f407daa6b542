"""Make sure a headless Chromium is available for the browser test (`make tools` runs this).

Nothing may download a browser here, so the test drives Debian's `chromium` package. As root
with apt-get, a missing browser is installed; otherwise this explains what to install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


def find_browser() -> str | None:
    override = os.environ.get("CHROMIUM_PATH")
    if override:
        return override if os.path.exists(override) else None
    return next((path for name in CANDIDATES if (path := shutil.which(name))), None)


def main() -> int:
    if find_browser():
        return 0
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print("installing Debian's chromium for the browser test (apt-get install chromium)")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        done = subprocess.run(
            ["apt-get", "install", "-y", "-q", "chromium"], env=env, stdout=subprocess.DEVNULL
        )
        if done.returncode != 0:  # stale package lists on a fresh machine
            subprocess.run(["apt-get", "update", "-q"], env=env, stdout=subprocess.DEVNULL)
            subprocess.run(
                ["apt-get", "install", "-y", "-q", "chromium"],
                env=env,
                check=True,
                stdout=subprocess.DEVNULL,
            )
        return 0 if find_browser() else 1
    print(
        "No Chromium found: the browser test will be skipped. Install it with "
        "`sudo apt-get install chromium` (or set CHROMIUM_PATH).",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
