"""How many CPUs this process may use (its affinity where the system tells it), for the in-process models."""

from __future__ import annotations

import os


def available_cpus() -> int:
    """The CPUs this process may run on: its affinity mask on Linux, else the machine's count (at least 1)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1
