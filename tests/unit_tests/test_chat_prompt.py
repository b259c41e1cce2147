"""The chat's prompt ends on a signal whenever it lands, even just before the read (driven on a real terminal)."""

from __future__ import annotations

import os
import platform
import resource
import signal
import sys
import textwrap

import pexpect
import pytest

BLOCKED_READING = {"x86_64": {"0", "7", "23", "270", "271"}, "aarch64": {"63", "72", "73"}}
"""System call numbers of read, poll, select, pselect6 and ppoll: the main thread waits for the terminal."""

CHILD = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    from langchain_session_rag.cli.terminal import read_line

    if sys.argv[1] in ("lines", "raw"):  # echo each line typed (and the open files) until Ctrl-D
        if sys.argv[1] == "raw":  # a terminal not in canonical mode: each read returns what is there
            import termios
            attrs = termios.tcgetattr(0)
            attrs[3] &= ~termios.ICANON
            termios.tcsetattr(0, termios.TCSANOW, attrs)
        while (line := read_line("you> ")) is not None:
            print(repr(line), len(os.listdir("/proc/self/fd")), flush=True)
        print("end of input")
        sys.exit(0)
    if sys.argv[1] == "closed":  # a wake-up fd set before and closed since: the line typed is still returned
        r, w = os.pipe()
        os.dup2(w, 900)
        os.set_blocking(900, False)
        signal.set_wakeup_fd(900)
        for end in (r, w, 900):
            os.close(end)
        signal.signal(signal.SIGUSR1, lambda *_: None)
        print(repr(read_line("you> ")), signal.set_wakeup_fd(-1), flush=True)
        sys.exit(0)
    if sys.argv[1] == "asyncio":  # a wake-up fd set before (an asyncio loop's) still gets the signal
        import asyncio

        async def main() -> None:
            asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, print, "SIGUSR1 handled")
            print(repr(read_line("you> ")), flush=True)
            await asyncio.sleep(0.5)

        asyncio.run(main())
        sys.exit(0)
    main = threading.get_native_id()
    waits = set(sys.argv[1].split(","))

    def poke() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until the main thread is blocked on the terminal
            with open(f"/proc/self/task/{main}/syscall") as fh:
                if fh.read().split()[0] in waits:
                    break
            time.sleep(0.01)
        print("[poke]", flush=True)
        # Delivered to this thread: the main thread's read is not interrupted, as when a signal lands just
        # before the read. Only the wake-up byte can end the wait.
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)

    threading.Thread(target=poke, daemon=True).start()
    try:
        read_line("you> ")
    except KeyboardInterrupt:
        print("interrupted")
    """
)


def spawn(tmp_path: os.PathLike[str], *args: str) -> pexpect.spawn:
    script = os.path.join(tmp_path, "child.py")  # noqa: PTH118
    with open(script, "w", encoding="utf-8") as fh:  # noqa: PTH123
        fh.write(CHILD)
    return pexpect.spawn(  # use_poll: not select(), which fails once a test worker holds 1,024 descriptors
        sys.executable, [script, *args], encoding="utf-8", timeout=60, env={**os.environ, "TERM": "dumb"}, use_poll=True
    )


@pytest.mark.skipif(
    platform.machine() not in BLOCKED_READING or not sys.platform.startswith("linux"), reason="Linux /proc"
)
def test_a_signal_that_does_not_interrupt_the_read_still_ends_the_prompt(tmp_path: os.PathLike[str]) -> None:
    child = spawn(tmp_path, ",".join(BLOCKED_READING[platform.machine()]))
    child.expect_exact("you> ")
    child.expect_exact("[poke]")
    index = child.expect_exact(["interrupted", pexpect.TIMEOUT], timeout=20)
    if index == 1:
        child.sendline("")  # what input() needs before it runs the handler
        child.expect(pexpect.EOF)
        pytest.fail(f"the prompt waited for Enter after the signal:\n{child.before}")
    child.expect(pexpect.EOF)


def test_the_prompt_reads_lines_as_input_does(tmp_path: os.PathLike[str]) -> None:
    child = spawn(tmp_path, "lines")
    child.expect_exact("you> ")
    child.sendline("héllo wörld")
    child.expect_exact("'héllo wörld' ")
    opened = child.readline().strip()
    for _ in range(3):  # no file left open by a prompt
        child.expect_exact("you> ")
        child.sendline("")
        child.expect_exact("'' ")
        assert child.readline().strip() == opened
    child.expect_exact("you> ")
    child.sendeof()  # Ctrl-D at the start of a line
    child.expect_exact("end of input")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_lines_pasted_at_once_are_read_one_by_one_off_canonical_mode(tmp_path: os.PathLike[str]) -> None:
    child = spawn(tmp_path, "raw")
    child.expect_exact("you> ")
    child.send("one\ntwo\n")
    child.expect_exact("'one' ")
    child.expect_exact("'two' ")
    child.close(force=True)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("asyncio", ["'hello'", "SIGUSR1 handled"]),  # an asyncio loop's wake-up fd still gets the signal
        ("closed", ["'hello' -1"]),  # a wake-up fd set before and closed since: the line typed is not lost
    ],
)
def test_a_wake_up_fd_set_before_is_served_or_let_go(
    tmp_path: os.PathLike[str], mode: str, expected: list[str]
) -> None:
    child = spawn(tmp_path, mode)
    child.expect_exact("you> ")
    child.kill(signal.SIGUSR1)
    child.sendline("hello")
    for shown in expected:
        child.expect_exact(shown)
    child.expect(pexpect.EOF)


def test_the_pty_helper_works_in_a_worker_holding_more_than_1024_descriptors(tmp_path: os.PathLike[str]) -> None:
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 1200:
        pytest.skip("this machine lets a process open fewer than 1,200 files")
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]  # as a long pytest-xdist worker may
    try:
        child = spawn(tmp_path, "lines")  # its terminal's descriptor is past 1,024: select() cannot wait on it
        child.expect_exact("you> ")
        child.sendeof()
        child.expect_exact("end of input")
        child.expect(pexpect.EOF)
        child.close()
    finally:
        for fd in held:
            os.close(fd)
    assert child.exitstatus == 0
