"""The chat's prompt: a line read from the terminal that a signal ends whenever it lands."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading

_WAKE: tuple[int, int, int] | None = None
"""The process id and the pipe a signal writes a byte to while the prompt waits (one per process, kept)."""
_TYPED = bytearray()
"""What a terminal not in canonical mode returned past the line read (the next lines)."""


def _wake_pipe() -> tuple[int, int]:
    """This process's wake-up pipe, emptied of the bytes of signals handled since the last prompt."""
    global _WAKE  # noqa: PLW0603 - one pipe for the process, never one per prompt
    if _WAKE is None or _WAKE[0] != os.getpid():  # new, or made before a fork(): the parent's
        _TYPED.clear()
        _WAKE = (os.getpid(), *os.pipe())
        for end in _WAKE[1:]:
            os.set_blocking(end, False)
    with contextlib.suppress(BlockingIOError):
        os.read(_WAKE[1], 4096)
    return _WAKE[1], _WAKE[2]


def read_line(prompt: str) -> str | None:
    """``input(prompt)``, except that a signal never waits for the next Enter (on a POSIX terminal).

    ``input()`` runs a signal's handler only when the signal interrupts its blocking read: a Ctrl-C or SIGTERM that
    lands just before the read (between the prompt and the read, or on another thread) is acted on only after the
    next line is typed. Here the signal's wake-up byte (``signal.set_wakeup_fd``) ends the wait whenever it came, and
    the handler runs (Ctrl-C raises ``KeyboardInterrupt``); a wake-up fd set before (an asyncio loop's) gets the byte
    too. Off a terminal, or off the main thread: ``input()``. ``None`` at the end of input (Ctrl-D at the start of a
    line).
    """
    stdin, stdout = sys.stdin, sys.stdout
    try:
        fd = stdin.fileno()
        terminal = os.isatty(fd) and os.isatty(stdout.fileno())
    except (AttributeError, OSError, ValueError):  # replaced streams (notebooks, test runners)
        terminal = False
    if not terminal or os.name != "posix" or threading.current_thread() is not threading.main_thread():
        try:
            return input(prompt)
        except EOFError:
            return None
    wake, wake_write = _wake_pipe()
    stdout.flush()
    sys.stderr.write(prompt)  # where input() writes it on a terminal
    sys.stderr.flush()
    previous: int | None = None
    try:
        previous = signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
        line = _wait_for_line(fd, wake, None if previous in (-1, wake_write) else previous)
    except BaseException:  # Ctrl-C, a signal's handler: what was typed of the line goes, as with input()
        _TYPED.clear()
        raise
    finally:
        if previous is not None:
            try:
                signal.set_wakeup_fd(previous)
            except (OSError, ValueError):  # closed since, or made blocking: nobody can be woken through it
                signal.set_wakeup_fd(-1)
    return None if line is None else line.decode(stdin.encoding or "utf-8", "surrogateescape")


def _wait_for_line(fd: int, wake: int, forward: int | None) -> bytes | None:
    """The next line typed at ``fd`` (``None``: end of input); each signal byte on ``wake`` goes on to ``forward``."""
    waiting = select.poll()  # not select(): any fd number
    waiting.register(fd, select.POLLIN)
    waiting.register(wake, select.POLLIN)
    while b"\n" not in _TYPED:
        ready = dict(waiting.poll())
        if wake in ready:  # a signal came: its handler runs now (and raises, to end the read)
            with contextlib.suppress(BlockingIOError):
                woke = os.read(wake, 4096)
                if forward is not None:
                    with contextlib.suppress(OSError):  # never block on it: only a non-blocking fd is written
                        if not os.get_blocking(forward):
                            os.write(forward, woke)
        if fd in ready:
            chunk = os.read(fd, 4096)  # a terminal in canonical mode returns a line at most
            if not chunk:  # Ctrl-D: the end of input, or of the line typed so far
                if not _TYPED:
                    return None
                break
            _TYPED.extend(chunk)
    line, _, rest = bytes(_TYPED).partition(b"\n")
    _TYPED[:] = rest
    return line
