"""What the memory browser's tests share: Debian's Chromium under Playwright, ``session-rag ui`` as a real process.

Playwright is pointed at the system Chromium (``/usr/bin/chromium``, installed by ``scripts/setup.sh test``); it
downloads no browser. Chromium runs headless with its background networking off, so nothing leaves loopback.
With ``SESSION_RAG_SCREENSHOTS=DIR`` the tests save their screenshots of the main views in DIR (the docs' images
are made this way: ``SESSION_RAG_SCREENSHOTS=docs/images``); they are always taken, into the test's folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration_tests.serve_support import REPO, serve_env, stop_group

CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",  # root on the test machines
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-features=Translate,OptimizationHints,MediaRouter",
]
SCREENSHOTS_ENV = "SESSION_RAG_SCREENSHOTS"


def chromium_path() -> str:
    """The system Chromium; a missing one fails the test on a machine whose set-up installs it (root)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.geteuid() == 0:
        pytest.fail("No chromium on PATH although `bash scripts/setup.sh test` installs it as root: run it again.")
    pytest.skip("Debian's chromium is not installed (apt install chromium) and this user cannot install it")
    raise AssertionError  # pragma: no cover - pytest.skip raises


def shoot(page: object, folder: Path, name: str) -> Path:
    """A full-page screenshot in ``folder`` (and in ``SESSION_RAG_SCREENSHOTS``, when set)."""
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)  # type: ignore[attr-defined]
    wanted = os.environ.get(SCREENSHOTS_ENV)
    if wanted:
        target = Path(wanted) if Path(wanted).is_absolute() else REPO / wanted
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target / path.name)
    return path


class UiProcess:
    """A real ``session-rag ui --port 0`` process (its own process group); :attr:`address` signs in."""

    def __init__(self, log: Path, store: Path, user: str, *args: str, **env: str) -> None:
        """Start it (``env``: more environment) and wait (bounded) for the address it prints."""
        command = [sys.executable, "-m", "langchain_session_rag", "ui", "--port", "0", "--path", str(store),
                   "--user", user, *args]  # fmt: skip
        self.log = log
        with log.open("ab") as errors:
            self.proc = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=errors, env=serve_env(**env), start_new_session=True
            )
        assert self.proc.stdout is not None
        deadline = time.monotonic() + 120  # the embedding model loads first
        line = b""
        while time.monotonic() < deadline and not line.startswith(b"Open "):
            line = self.proc.stdout.readline()
            if not line and self.proc.poll() is not None:
                break
        if not line.startswith(b"Open "):
            self.stop()
            pytest.fail(f"session-rag ui did not start: {log.read_text(errors='replace')[-3000:]}")
        self.address = line.decode().split()[-1]
        self.base = self.address.split("/ui/")[0]

    def stop(self) -> None:
        """End it by its process group id."""
        stop_group(self.proc)
