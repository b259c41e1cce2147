"""Pk and WindowDiff on tiny segmentations computed by hand."""

from __future__ import annotations

import pytest

from langchain_session_rag.chunking.metrics import default_k, pk, window_diff
from langchain_session_rag.errors import InvalidArgumentError


def test_perfect_segmentation_scores_zero() -> None:
    assert pk([3, 6], [3, 6], 9) == 0.0
    assert window_diff([3, 6], [3, 6], 9) == 0.0


def test_a_missed_boundary() -> None:
    # AA|BB, nothing found; k = 1: the pairs (0,1) (1,2) (2,3) disagree at (1,2) only.
    assert default_k([2], 4) == 1
    assert pk([2], [], 4) == pytest.approx(1 / 3)
    assert window_diff([2], [], 4) == pytest.approx(1 / 3)


def test_pk_and_windowdiff_differ_on_a_near_miss() -> None:
    # AAA|BBB against AA|B|BBB... hypothesis [2, 3]; k = round_half_up(3 / 2) = 2, windows (0,2) (1,3) (2,4) (3,5).
    # Reference boundaries per window: 0 1 1 0; hypothesis: 1 2 1 0.  WindowDiff: 2 of 4.
    # Same segment?  reference: yes no no yes; hypothesis: no no no yes.  Pk: 1 of 4.
    assert default_k([3], 6) == 2
    assert window_diff([3], [2, 3], 6) == pytest.approx(0.5)
    assert pk([3], [2, 3], 6) == pytest.approx(0.25)


def test_cutting_a_one_topic_session_everywhere() -> None:
    assert default_k([], 4) == 2
    assert pk([], [1, 2, 3], 4) == 1.0
    assert window_diff([], [1, 2, 3], 4) == 1.0
    assert pk([], [2], 4) == 1.0, "both windows span the false boundary"
    assert pk([], [1], 4) == pytest.approx(0.5)


def test_an_explicit_k() -> None:
    assert pk([2], [], 4, k=3) == 1.0
    assert window_diff([2], [1], 4, k=1) == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("reference", "hypothesis", "n", "k", "bad"),
    [
        ([2], [], 1, None, "n must"),
        ([0], [], 4, None, "reference boundaries"),
        ([2], [4], 4, None, "hypothesis boundaries"),
        ([2], [], 4, 4, "k must"),
        ([2], [], 4, 0, "k must"),
    ],
)
def test_bad_arguments_raise(reference: list[int], hypothesis: list[int], n: int, k: int | None, bad: str) -> None:
    for metric in (pk, window_diff):
        with pytest.raises(InvalidArgumentError, match=bad):
            metric(reference, hypothesis, n, k=k)
