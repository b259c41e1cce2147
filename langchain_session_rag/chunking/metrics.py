"""Segmentation error metrics: Pk (Beeferman et al. 1999) and WindowDiff (Pevzner and Hearst 2002).

A segmentation of ``n`` units (here, exchanges) is given as its boundaries: the indices of the units that open a
segment, the first unit (index 0) excluded. Both metrics slide a window of ``k`` units over the session and count
the windows where reference and hypothesis disagree, so 0 is perfect and lower is better. ``k`` defaults to half
the mean length of the reference segments, rounded half up, at least 1.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from langchain_session_rag.errors import InvalidArgumentError


def _check(reference: Sequence[int], hypothesis: Sequence[int], n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:  # noqa: PLR2004 - one window needs two units
        msg = f"n must be an integer >= 2 (a window needs two units), got {n!r}."
        raise InvalidArgumentError(msg)
    for name, bounds in (("reference", reference), ("hypothesis", hypothesis)):
        bad = [b for b in bounds if isinstance(b, bool) or not isinstance(b, int) or not 0 < b < n]
        if bad:
            msg = f"{name} boundaries must be integers in [1, {n - 1}] for n={n}, got {bad[0]!r}."
            raise InvalidArgumentError(msg)


def default_k(reference: Sequence[int], n: int) -> int:
    """Half the mean reference segment length, rounded half up, at least 1 and at most ``n - 1``."""
    _check(reference, [], n)
    mean_length = n / (len(set(reference)) + 1)
    return max(1, min(n - 1, int(mean_length / 2 + 0.5)))


def _resolve_k(reference: Sequence[int], n: int, k: int | None) -> int:
    if k is None:
        return default_k(reference, n)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k < n:
        msg = f"k must be an integer in [1, {n - 1}] for n={n}, got {k!r}."
        raise InvalidArgumentError(msg)
    return k


def _boundary_counts(boundaries: Sequence[int], n: int) -> list[int]:
    """``counts[j]`` is the number of boundaries at indices ``<= j``."""
    marks = set(boundaries)
    return list(itertools.accumulate(int(j in marks) for j in range(n)))


def _counted(
    reference: Sequence[int], hypothesis: Sequence[int], n: int, k: int | None
) -> tuple[list[int], list[int], int]:
    """Both segmentations checked and counted (see :func:`_boundary_counts`), with the window ``k`` resolved."""
    _check(reference, hypothesis, n)
    return _boundary_counts(reference, n), _boundary_counts(hypothesis, n), _resolve_k(reference, n, k)


def pk(reference: Sequence[int], hypothesis: Sequence[int], n: int, *, k: int | None = None) -> float:
    """The probability that units ``k`` apart are wrongly judged in the same or in different segments.

    Args:
        reference: The true boundaries (indices of the units that open a segment, 0 excluded).
        hypothesis: The boundaries to score.
        n: The number of units.
        k: The window; half the mean reference segment length by default.

    Returns:
        The share of the ``n - k`` pairs ``(i, i + k)`` on which the two segmentations disagree.

    Raises:
        InvalidArgumentError: If ``n`` < 2, a boundary lies outside ``[1, n - 1]``, or ``k`` outside ``[1, n - 1]``.
    """
    ref, hyp, k = _counted(reference, hypothesis, n, k)
    errors = sum((ref[i + k] == ref[i]) != (hyp[i + k] == hyp[i]) for i in range(n - k))
    return errors / (n - k)


def window_diff(reference: Sequence[int], hypothesis: Sequence[int], n: int, *, k: int | None = None) -> float:
    """The share of windows of ``k`` units holding a different number of boundaries in the two segmentations.

    Takes the arguments of :func:`pk` and raises as it does; returns the share of the ``n - k`` pairs
    ``(i, i + k)`` between which the boundary counts differ (Pevzner and Hearst: it also counts windows where both
    segmentations cut, but a different number of times, which Pk misses).
    """
    ref, hyp, k = _counted(reference, hypothesis, n, k)
    errors = sum((ref[i + k] - ref[i]) != (hyp[i + k] - hyp[i]) for i in range(n - k))
    return errors / (n - k)
