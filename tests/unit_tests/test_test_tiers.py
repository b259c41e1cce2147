"""The fast tier is fast and offline, the slow tier holds the real parts, and crash tests kill at named points."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
from pathlib import Path

import pytest
from pytest_socket import SocketBlockedError

from langchain_session_rag import _faults, get_default_embeddings
from tests.conftest import SLOW_FIXTURES, SLOW_FOLDERS, SLOW_TESTS

ROOT = Path(__file__).parents[2]


def test_the_slow_marker_is_registered_and_sockets_are_disabled_by_default(pytestconfig: pytest.Config) -> None:
    assert any(m.startswith("slow:") for m in pytestconfig.getini("markers"))
    assert {"--disable-socket", "--allow-unix-socket"} <= set(pytestconfig.getini("addopts"))
    test_extra = (ROOT / "pyproject.toml").read_text(encoding="utf-8").split("\ntest = [", 1)[1].split("\n]", 1)[0]
    assert '"pytest-socket' in test_extra


def test_a_fast_test_cannot_open_a_tcp_socket() -> None:
    with pytest.raises(SocketBlockedError):
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    with pytest.raises(SocketBlockedError):
        socket.create_connection(("127.0.0.1", 9), timeout=1)


def test_a_fast_test_cannot_run_the_real_model_or_spawn_a_process() -> None:
    with pytest.raises(RuntimeError, match="runs the real embedding model"):
        get_default_embeddings().embed_query("hello")
    with pytest.raises(RuntimeError, match="spawns a subprocess: mark it slow"):
        subprocess.run(["true"], check=False)  # never runs


def test_every_test_of_the_real_model_a_server_or_a_notebook_is_slow(request: pytest.FixtureRequest) -> None:
    items = request.session.items
    assert request.node.get_closest_marker("slow") is None
    for item in items:
        heavy = SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        folder = set(SLOW_FOLDERS).intersection(Path(str(item.path)).parts)
        if heavy or folder or Path(str(item.path)).suffix == ".ipynb":
            assert item.get_closest_marker("slow") is not None, f"{item.nodeid} uses {heavy or folder} but is fast"
            assert item.get_closest_marker("enable_socket") is not None, f"{item.nodeid} may not open a socket"


@pytest.mark.parametrize("entry", sorted(SLOW_TESTS))
def test_each_listed_slow_test_exists(entry: str) -> None:
    """A renamed test would silently leave the list (and land in the fast tier, where the guard may not see it)."""
    module, name = entry.split("::", 1)
    source = (ROOT / "tests" / "unit_tests" / module).read_text(encoding="utf-8")
    assert re.search(rf"^\s*(async def|def|class) {re.escape(name)}\b", source, re.MULTILINE), entry


WALL_CLOCK = re.compile(r"\bassert\b.*\b(elapsed|monotonic|perf_counter|time\.time)\b")
RANDOM_SLEEP = re.compile(r"sleep\(.*\b(random|uniform)\b")


def test_no_test_asserts_on_wall_clock_time_or_kills_after_a_random_sleep() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if WALL_CLOCK.search(line) or RANDOM_SLEEP.search(line)
    ]
    assert found == []


def test_every_named_fault_point_is_called_by_the_package() -> None:
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "langchain_session_rag").rglob("*.py"))
    called = set(re.findall(r"(?<![_\w])fault_point\(\"([^\"]+)\"\)", source))  # not the chat's _fault_point
    assert called == set(_faults.POINTS)
    assert all(f"``{point}``" in (_faults.__doc__ or "") for point in _faults.POINTS), "the docstring names each"


def _exit_of_child(point: str, reached: list[str]) -> int:
    """Fork; the child sets ``SESSION_RAG_FAULT=point`` and passes the ``reached`` points in order."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.environ[_faults.FAULT_ENV] = point
        for name in reached:
            _faults.fault_point(name)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_a_fault_point_kills_the_process_exactly_where_it_is_named() -> None:
    assert _exit_of_child("rebuild:switch", ["rebuild:copy-page", "rebuild:copied"]) == 0
    assert _exit_of_child("rebuild:switch", ["rebuild:copied", "rebuild:switch"]) == -signal.SIGKILL
    assert _exit_of_child("rebuild:copy-page@3", ["rebuild:copy-page"] * 2) == 0
    assert _exit_of_child("rebuild:copy-page@3", ["rebuild:copy-page"] * 3) == -signal.SIGKILL
    _faults.fault_point("rebuild:switch")  # unset here: nothing happens


def test_hypothesis_keeps_its_examples_and_caches_outside_the_checkout() -> None:
    from hypothesis.configuration import storage_directory

    where = storage_directory("examples", intent_to_write=False).path.resolve()
    assert not where.is_relative_to(ROOT.resolve()), f"Hypothesis writes into the checkout: {where}"
