"""Another Python process of the test session, driven through a pipe: what a second process on the store does.

Starting an interpreter that imports the package (and, for some tests, loads the embedding model) costs seconds of
CPU; a test that needs "another process" borrows one from the session's pool (``other_processes`` in the folder's
conftest) instead. Each borrowed process runs the code a test sends in a namespace of that test's own (cleared when
the test ends), and answers with what the code printed; an exception in it fails the test with its traceback.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ENVIRONMENT = {**os.environ, "PYTHONPATH": str(ROOT), "ANONYMIZED_TELEMETRY": "False"}
"""The session's environment as it was before any test ran: a test's own variables never leak into the pool."""
DEADLINE = 300.0
"""Seconds one command may run before the process is killed and the test fails (never a hang)."""
LOOP = """
import contextlib, gc, io, json, sys, traceback
namespace = {}
for line in sys.stdin:
    command = json.loads(line)
    if command.get("reset"):
        namespace.clear()
        gc.collect()
        answer = {"out": ""}
    else:
        namespace.update(command["values"])
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                exec(command["code"], namespace)
            answer = {"out": printed.getvalue()}
        except BaseException:
            answer = {"out": printed.getvalue(), "error": traceback.format_exc()}
    sys.__stdout__.write(json.dumps(answer) + "\\n")
    sys.__stdout__.flush()
"""
"""The child: one JSON command a line (``code`` run with ``values`` bound, or ``reset``), one JSON answer a line."""


class AnotherProcess:
    """A Python process (this checkout on its path, no telemetry) that runs code a test sends it."""

    def __init__(self) -> None:
        """Start it."""
        self.proc = subprocess.Popen(
            [sys.executable, "-c", LOOP],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=ENVIRONMENT,
        )
        self.pending = 0
        """Commands sent whose answer is not read yet."""
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")  # it exited

    def _answer(self) -> str:
        """Its next answer line; a process silent for ``DEADLINE`` seconds is killed and fails the test."""
        try:
            line = self.lines.get(timeout=DEADLINE)
        except queue.Empty:
            self.proc.kill()
            line = ""
        assert line, f"the other process {self.proc.pid} exited with {self.proc.wait()} (killed: silent {DEADLINE} s)"
        return line

    def send(self, code: str, **values: Any) -> None:
        """Have it start running ``code`` (names in ``values`` bound to them); :meth:`result` waits for the end."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"code": textwrap.dedent(code), "values": values}) + "\n")
        self.proc.stdin.flush()
        self.pending += 1

    def result(self) -> str:
        """What the code sent last printed, once it has run; its traceback fails the test."""
        line = self._answer()
        self.pending -= 1
        answer = json.loads(line)
        assert "error" not in answer, f"in the other process:\n{answer['error']}"
        return str(answer["out"])

    def run(self, code: str, **values: Any) -> str:
        """Run ``code`` there to its end; what it printed."""
        self.send(code, **values)
        return self.result()

    def reset(self) -> None:
        """Drop everything the code sent so far defined (a new test starts with an empty namespace).

        Answers a failed test left unread are read and dropped first.
        """
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"reset": True}) + "\n")
        self.proc.stdin.flush()
        for _ in range(self.pending + 1):
            self._answer()
        self.pending = 0

    def stop(self) -> None:
        """End it: its input closes, so its loop ends (killed if it does not within 30 s)."""
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
