"""The command line without Python: core memory edited, sessions forgotten by title or id prefix, search's floor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit_tests.test_cli import IMPORTS, run

pytestmark = pytest.mark.slow  # the CLI in subprocesses, on the real model


def test_core_memory_is_shown_edited_appended_undone_and_its_history_listed(tmp_path: Path) -> None:
    store = ["--path", str(tmp_path / "store")]
    assert "No store at" in run("core", "show", *store, check=2).stderr  # a mistyped --path creates nothing
    run("core", "edit", "memory", "Vegetarian. Prefers tea.", *store)
    assert "## now (0 of 300 tokens)\n(empty)" in run("core", "show", *store).stdout
    run("core", "append", "memory", "Lives in Porto.", *store)
    run("core", "edit", "now", "--file", "-", *store, stdin="Planning the Lisbon trip.\n")
    shown = run("core", "show", *store).stdout
    assert "Vegetarian. Prefers tea.\nLives in Porto." in shown
    assert "Planning the Lisbon trip." in shown
    assert "of 700 tokens" in shown
    assert "back to the text before the last edit" in run("core", "undo", "memory", *store).stdout
    assert "Lives in Porto" not in run("core", "show", "memory", *store).stdout
    history = run("core", "history", "memory", *store).stdout.splitlines()
    assert [line.split()[3] for line in history if line.startswith("v")] == ["write", "append", "undo"]
    bad = run("core", "edit", "bogus", "text", *store, check=1)
    assert "Unknown core memory block 'bogus'" in bad.stderr
    both = run("core", "edit", "memory", "x", "--file", "-", *store, check=2)
    assert "not both" in both.stderr


def test_forget_takes_a_title_or_the_start_of_an_id_and_refuses_an_ambiguous_name(tmp_path: Path) -> None:
    store = ["--path", str(tmp_path / "store")]
    run("ingest", str(IMPORTS / "chatgpt" / "chatgpt-export.zip"), *store)
    sessions = json.loads(run("sessions", "--json", *store).stdout)
    sourdough = next(s for s in sessions if "sourdough" in s["title"].lower())
    ambiguous = run("forget", "--session", "chatgpt", "--yes", *store, check=2)
    assert "names 6 sessions" in ambiguous.stderr
    assert "nothing was forgotten" in ambiguous.stderr
    assert (
        "has no session 'no such trip'" in run("forget", "--session", "no such trip", "--yes", *store, check=2).stderr
    )
    gone = run("forget", "--session", "SOURDOUGH", "--yes", *store).stdout
    assert sourdough["session_id"] in gone
    left = [s["session_id"] for s in json.loads(run("sessions", "--json", *store).stdout)]
    assert sourdough["session_id"] not in left
    by_prefix = run("forget", "--session", left[0][:16], "--yes", "--no-compact", *store).stdout
    assert left[0] in by_prefix
    assert len(json.loads(run("sessions", "--json", *store).stdout)) == len(left) - 1


def test_search_recalls_as_chat_does_with_its_floor_and_shows_all_with_minus_one(tmp_path: Path) -> None:
    store = ["--path", str(tmp_path / "store")]
    run("ingest", str(IMPORTS / "chatgpt" / "chatgpt-export.zip"), *store)
    query = "quantum chromodynamics lattice gauge"
    floored = json.loads(run("search", query, "-k", "20", "--json", *store).stdout)
    everything = json.loads(run("search", query, "-k", "20", "--threshold", "-1", "--json", *store).stdout)
    assert all(d["similarity"] >= 0.1 for d in floored)
    assert len(everything) > len(floored)
    assert min(d["similarity"] for d in everything) < 0.1
