"""Headless Chromium (Debian's ``chromium`` package, installed by .ci/system-deps.sh) for pages sqlext writes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

#: Flags for a sandboxed CI machine with no network: no sandbox as root, no background connections.
_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    """The Chromium binary, or skip the test saying why."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip("headless Chromium is not installed (make system-deps installs Debian's chromium package)")
    return binary


def _run(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [chromium(), *_FLAGS, f"--user-data-dir={profile}", *args, page.resolve().as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


def rendered_dom(page: Path, profile: Path) -> str:
    """The page's DOM as Chromium rendered it."""
    return _run(page, profile, "--dump-dom").stdout


def screenshot(page: Path, profile: Path, png: Path, width: int = 1150, height: int = 900) -> Path:
    """A PNG of the page as Chromium shows it."""
    _run(page, profile, f"--screenshot={png}", f"--window-size={width},{height}", "--hide-scrollbars")
    return png
