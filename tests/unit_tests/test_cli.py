"""The ``session-rag`` command as a person runs it: its output, its exit code, its errors.

Each command runs in this process (``run``: Click's ``CliRunner`` isolation, with its own stdin, stdout, stderr and
environment, through ``main``, the code behind the entry point), so the real model is loaded once, not once per
command. A few smoke tests start the real entry point in a subprocess for what only a process shows: exit codes as
seen by a shell, a closed stdout, a reader that goes away.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from langchain_session_rag.cli import main
from langchain_session_rag.cli.options import err, out

pytestmark = pytest.mark.slow  # the CLI on the real model, and a few subprocesses

ROOT = Path(__file__).parents[2]
IMPORTS = ROOT / "tests" / "data" / "imports"
LOCOMO_SAMPLE = ROOT / "benchmarks" / "data" / "locomo_sample.json"
COMMANDS = [
    "chat",
    "consolidate",
    "core",
    "demo",
    "eval",
    "export",
    "forget",
    "import",
    "ingest",
    "keys",
    "reembed",
    "search",
    "sessions",
    "stats",
]
ENV = {
    "OLLAMA_HOST": "http://127.0.0.1:9",  # nothing listens: the in-process model is used, and said to be
    "COLUMNS": "200",
    "NO_COLOR": "1",
}


@dataclass
class Done:
    """What a command did, as ``subprocess.run`` reports it."""

    returncode: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def _width(columns: int) -> Iterator[None]:
    """The consoles read COLUMNS once, when the CLI is imported: give them this command's width."""
    before = out._width, err._width  # None: measured when printing
    out.width = err.width = columns
    try:
        yield
    finally:
        out._width, err._width = before


def run(*args: str, env: dict[str, str | None] | None = None, stdin: str = "", check: int | None = 0) -> Done:
    """Run ``session-rag ARGS`` in this process, without a terminal, and check its exit code (``env``: over this
    process's environment, None removes a variable)."""
    full_env = {**ENV, **(env or {})}
    with (
        CliRunner().isolation(input=stdin, env=full_env) as (stdout, stderr, _),
        _width(int(full_env.get("COLUMNS") or 80)),
    ):
        try:
            code = main(list(args))
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        done = Done(code, stdout.getvalue().decode(), stderr.getvalue().decode())
    if check is not None:
        assert done.returncode == check, f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    return done


def run_process(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real entry point, ``python -m langchain_session_rag ARGS``, in a process of its own."""
    full_env = {**os.environ, **ENV, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "langchain_session_rag", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=300,
        check=False,
    )


def test_help_version_and_every_command_has_plain_help() -> None:
    top = run("--help")
    for command in COMMANDS:
        assert f"\n  {command} " in top.stdout
    line = next(row for row in (ROOT / "pyproject.toml").read_text().splitlines() if row.startswith("version"))
    version = line.split("=")[1].strip().strip('"')
    assert run("--version").stdout.strip() == f"session-rag {version}"  # the code's version, not a stale install
    for command in [*COMMANDS, "eval locomo"]:
        text = run(*command.split(), "--help").stdout
        assert text.startswith("Usage: session-rag")
        assert "``" not in text
        assert ":class:" not in text
        assert ":func:" not in text


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["search", "x", "--k", "0"], "0 is not in the range 1<=x<=1000"),
        (["search", "x", "--threshold", "5"], "5.0 is not in the range -1.0<=x<=1.0"),
        (["search", "x", "--since", "blue moon"], "'blue moon' is neither a date (YYYY-MM-DD) nor a phrase such as"),
        (["search", "x", "--since", "last week", "--until", "two weeks ago"], "is after --until"),
        (["search", "x", "--server", "nohost"], "expected HOST:PORT"),
        (["search", "x", "--server", "127.0.0.1:9", "--store-timeout", "0"], "above 0 and at most 3600, got '0'"),
        (["search", "x", "--server", "127.0.0.1:9", "--store-timeout", "nan"], "at most 3600, got 'nan'"),
        (["search", "x", "--server", "127.0.0.1:9", "--store-timeout", "inf"], "at most 3600, got 'inf'"),
        (["serve", "--server", "127.0.0.1:9", "--store-timeout", "5s"], "at most 3600, got '5s'"),
        (["ui", "--server", "127.0.0.1:9", "--store-timeout", "-1"], "at most 3600, got '-1'"),
        (["search", "x", "--embeddings", "openai"], "expected 'local', 'local-torch' or 'ollama:MODEL'"),
        (["nope"], "No such command 'nope'"),
        (["ingest"], "Missing argument 'FILES...'"),
        (["ingest", "/no/such/file.json"], "'/no/such/file.json' does not exist"),
        (["forget"], "Say what to forget"),
        (["forget", "--all", "--session", "s1"], "Say what to forget"),
        (["forget", "--session", "s1"], "pass --yes to confirm from a script"),
        (["chat", "--max-tokens", "2"], "2 is not in the range 16<=x<=4096"),
        (["chat", "--local", "--max-tokens", "4000"], "--max-tokens 4000 is too large for SmolLM2-135M in process"),
        (["chat", "--local", "--max-tokens", "4000"], "its window is 2048 tokens and the prompt needs room too"),
        (["chat", "--local", "--max-tokens", "2000"], "so --max-tokens can be at most 1024."),
        (["search", "x", "--since", "2026-01-01", "--until", "2025-01-01"], "--since 2026-01-01 is after --until"),
        (["export", str(ROOT / "pyproject.toml")], "exists; pass --force"),
        (["eval", "locomo", str(LOCOMO_SAMPLE), "--budgets", "a,b"], "expected positive integers"),
    ],
)
def test_a_bad_command_line_is_exit_2_with_the_reason(tmp_path: Path, args: list[str], fragment: str) -> None:
    done = (
        run(*args, "--path", str(tmp_path / "db"), check=2) if args[0] not in ("nope", "eval") else run(*args, check=2)
    )
    assert fragment in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "db").exists()  # refused before anything was opened


def test_errors_are_one_line_and_debug_shows_the_traceback(tmp_path: Path) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x", encoding="utf-8")
    done = run("sessions", env={"SESSION_RAG_PATH": str(a_file)}, check=2)
    assert "is a file" in done.stderr
    truncated = IMPORTS / "invalid" / "chatgpt_truncated.json"
    done = run("ingest", str(truncated), "--path", str(tmp_path / "db"), check=1)
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("session-rag: error: ")
    assert "chatgpt_truncated.json: not valid JSON" in line
    assert "nothing was imported" in line
    debug = run("--debug", "ingest", str(truncated), "--path", str(tmp_path / "db"), check=1)
    assert "Traceback (most recent call last)" in debug.stderr
    assert "ImportFormatError" in debug.stderr
    for user in (" ", "a\nb", "x" * 300):
        bad_user = run("sessions", "--user", user, "--path", str(tmp_path / "db2"), check=2)
        assert "Invalid value for --user: 1 to 256 characters without control characters" in bad_user.stderr
        assert len(bad_user.stderr) < 300  # the value is not echoed whole
    assert not (tmp_path / "db2").exists()


def test_a_closed_stdout_is_not_a_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "langchain_session_rag", "--version"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        close_fds=True,
        preexec_fn=lambda: os.close(1),  # `session-rag --version >&-`
    )
    assert done.returncode == 0
    assert done.stderr == ""


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "langchain_session_rag", "--help"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    proc.stdout.close()  # `session-rag --help | head -0`
    errors = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 1
    assert errors == ""  # no traceback, no "Broken pipe" complaint


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A store with the ChatGPT export imported for alice (by the command)."""
    env = {"SESSION_RAG_PATH": str(tmp_path_factory.mktemp("cli") / "db"), "SESSION_RAG_USER": "alice"}
    done = run("ingest", str(IMPORTS / "chatgpt" / "conversations.json"), env=env)
    assert "Sessions: 6 new, 0 added to, 0 already stored" in done.stdout
    assert "chatgpt" in done.stdout
    return env


def test_ingest_twice_stores_nothing_new_and_reports_as_json(store: dict[str, str]) -> None:
    done = run("ingest", str(IMPORTS / "chatgpt" / "chatgpt-export.zip"), "--json", env=store)
    report = json.loads(done.stdout)
    assert report["new_sessions"] == []
    assert len(report["unchanged_sessions"]) == 6
    assert report["chunks_added"] == 0
    skipped = run("ingest", str(IMPORTS / "invalid" / "chatgpt_parent_cycle.json"), env={**store, "COLUMNS": "300"})
    assert "Skipped (1)" in skipped.stdout
    assert "cycle" in skipped.stdout
    strict = run("ingest", "--strict", str(IMPORTS / "invalid" / "chatgpt_parent_cycle.json"), env=store, check=1)
    assert "nothing was imported (strict)" in strict.stderr


def test_search_shows_markers_scores_sessions_and_json(store: dict[str, str]) -> None:
    table = run("search", "What is my sourdough starter called?", "-k", "3", env=store).stdout
    assert "[S: 2025-" in table
    assert "Bubbles" in table
    results = json.loads(run("search", "sourdough starter", "--json", env=store).stdout)
    assert results[0]["session_id"].startswith("chatgpt-")
    assert {"marker", "score", "text", "id"} <= results[0].keys()
    assert run("search", "sourdough", "--user", "carol", env=store).stderr.startswith(
        "Nothing in the memory of 'carol'"
    )
    since = json.loads(run("search", "sourdough", "--since", "2030-01-01", "--json", env=store).stdout)
    assert since == []


def test_sessions_stats_export_import(store: dict[str, str], tmp_path: Path) -> None:
    sessions = json.loads(run("sessions", "--json", env=store).stdout)
    assert len(sessions) == 6
    stats = json.loads(run("stats", "--json", env=store).stdout)
    assert stats["user"] == "alice"
    assert stats["sessions"] == 6
    assert stats["embedding_model"] == "sentence-transformers/all-MiniLM-L6-v2:onnx-int8"
    assert stats["disk_bytes"] > 0
    exported = tmp_path / "alice.jsonl"
    assert f"Exported {stats['chunks']} chunk(s)" in run("export", str(exported), env=store).stdout
    assert len(exported.read_text(encoding="utf-8").splitlines()) == stats["chunks"]
    bob = {**store, "SESSION_RAG_USER": "bob"}
    refused = run("import", str(exported), env=bob, check=1).stderr  # alice's export is not bob's (issue 26)
    assert "'alice'" in refused
    assert "--reassign-user" in refused
    moved = run("import", str(exported), "--reassign-user", env=bob).stdout
    assert f"Imported {stats['chunks']} new chunk(s)" in moved
    assert "Bubbles" in run("search", "sourdough starter name", env=bob).stdout
    assert json.loads(run("stats", "--json", env=bob).stdout)["users"] == 2
    wrong = run("import", str(IMPORTS / "chatgpt" / "conversations.json"), env=bob, check=1)
    assert wrong.stderr.startswith("session-rag: error: ")


def test_consolidate_groups_exchanges_of_a_session(store: dict[str, str]) -> None:
    env = {**store, "SESSION_RAG_USER": "dana"}
    messages = [{"role": "user", "content": "I keep my bike in the shed."}, {"role": "assistant", "content": "OK."}]
    chat = Path(store["SESSION_RAG_PATH"]).parent / "one.json"
    for n in range(3):  # three imports of a growing chat: three exchange chunks in one session
        turns = messages + [{"role": "user", "content": f"Shed fact {i}: the lock code ends in {i}."} for i in range(n)]
        chat.write_text(json.dumps({"id": "shed", "messages": turns}), encoding="utf-8")
        run("ingest", str(chat), env=env)
    done = run("consolidate", "--session", "shed", env=env).stdout
    assert "shed" in done or "Nothing to consolidate" in done
    assert "Nothing to consolidate" in run("consolidate", env=env).stdout


def test_stored_text_is_printed_as_it_is_never_as_markup(store: dict[str, str], tmp_path: Path) -> None:
    env = {**store, "SESSION_RAG_USER": "[/u] frank"}
    chat = {"id": "[/red]", "title": "My notes [/b]", "messages": [
        {"role": "user", "content": "in Python, slicing is a[/2] wait, [bold]x[/bold]"},
        {"role": "assistant", "content": "[red]fine[/red]"}]}  # fmt: skip
    (tmp_path / "m.jsonl").write_text(json.dumps(chat), encoding="utf-8")
    run("ingest", str(tmp_path / "m.jsonl"), env=env)
    found = run("search", "python slicing", env=env).stdout
    assert "a[/2] wait, [bold]x[/bold]" in found
    assert "Memories of '[/u] frank'" in found
    listed = run("sessions", env=env).stdout
    assert "[/red]" in listed
    assert "My notes [/b]" in listed
    (tmp_path / "esc.jsonl").write_text(json.dumps({"id": "esc", "title": "Recipes\x1b[2J\x1b[H", "messages": [
        {"role": "user", "content": "My espresso \x1b]0;pwned\x07 machine is a Gaggia :rocket:"}]}))  # fmt: skip
    run("ingest", str(tmp_path / "esc.jsonl"), env=env)
    shown = run("search", "espresso machine", env=env).stdout + run("sessions", env=env).stdout
    assert "\x1b" not in shown
    assert "\x07" not in shown
    assert "Recipes\ufffd[2J" in shown
    assert ":rocket:" in shown  # not turned into an emoji
    unknown = run("forget", "--session", "nope", "--yes", env=env, check=2)
    assert "has no session 'nope'" in unknown.stderr
    assert "nothing was forgotten" in unknown.stderr


def test_forget_a_session_a_date_and_everything_with_a_receipt(store: dict[str, str]) -> None:
    env = {**store, "SESSION_RAG_USER": "erin"}
    run("ingest", str(IMPORTS / "chatgpt" / "conversations.json"), env=env)
    sourdough = json.loads(run("search", "my sourdough starter Bubbles", "--json", env=env).stdout)[0]["session_id"]
    done = run("forget", "--session", sourdough, "--yes", env=env).stdout
    assert f"session(s) {sourdough} of user 'erin'" in done
    assert "Erased from the store's files" in done
    after = json.loads(run("search", "my sourdough starter Bubbles", "-k", "10", "--json", env=env).stdout)
    assert sourdough not in {r["session_id"] for r in after}
    assert not any("Bubbles" in r["text"] for r in after)
    older = run("forget", "--before", "2024-10-01", "--yes", "--no-compact", env=env).stdout
    assert "every session, memories before 2024-10-01, of user 'erin'" in older
    left = json.loads(run("stats", "--json", env=env).stdout)["chunks"]
    assert f"Forgot {left} chunk(s): EVERYTHING" in run("forget", "--all", "-y", env=env).stdout
    assert json.loads(run("stats", "--json", env=env).stdout)["chunks"] == 0
    assert json.loads(run("stats", "--json", env=store).stdout)["chunks"] > 0  # alice keeps hers


def test_a_mistyped_path_is_refused_not_made_into_an_empty_store(tmp_path: Path) -> None:
    for command in (["forget", "--all", "--yes"], ["sessions"], ["search", "x"], ["stats"]):
        done = run(*command, "--path", str(tmp_path / "typo"), check=2)
        assert "No store at" in done.stderr
    assert not (tmp_path / "typo").exists()


def test_until_a_date_includes_that_day(store: dict[str, str]) -> None:
    found = json.loads(run("search", "sourdough starter Bubbles", "--json", env=store).stdout)[0]
    day = found["timestamp"][:10]
    same_day = json.loads(run("search", "sourdough starter Bubbles", "--since", day, "--until", day, "--json",
                              env=store).stdout)  # fmt: skip
    assert found["id"] in {r["id"] for r in same_day}


def test_since_and_until_take_time_phrases(store: dict[str, str]) -> None:
    query = "sourdough starter Bubbles"
    found = json.loads(run("search", query, "--json", env=store).stdout)[0]  # imported from a 2025 export
    within = json.loads(run("search", query, "--since", "10 years ago", "--until", "today", "--json", env=store).stdout)
    assert found["id"] in {r["id"] for r in within}
    assert json.loads(run("search", query, "--until", "10 years ago", "--json", env=store).stdout) == []
    assert json.loads(run("search", query, "--since", "last tuesday", "--json", env=store).stdout) == []


def _first_session_only(tmp_path: Path) -> Path:
    """The LoCoMo sample cut to its first session and the questions whose evidence is all in it."""
    (sample,) = json.loads(LOCOMO_SAMPLE.read_text(encoding="utf-8"))
    conversation = {k: v for k, v in sample["conversation"].items() if not k.startswith("session_") or
                    k.startswith("session_1_") or k == "session_1"}  # fmt: skip
    qa = [q for q in sample["qa"] if q.get("evidence") and all(e.startswith("D1:") for e in q["evidence"])]
    small = tmp_path / "locomo_first_session.json"
    small.write_text(json.dumps([{**sample, "conversation": conversation, "qa": qa}]), encoding="utf-8")
    return small


def test_eval_locomo_prints_the_recall_table(tmp_path: Path) -> None:
    small = _first_session_only(tmp_path)  # the whole sample's run: tests/unit_tests/test_evaluation.py
    done = run("eval", "locomo", str(small), "--budgets", "256,512", "--ks", "5").stdout
    assert "512 prompt tokens" in done
    assert "top 5 chunks" in done
    assert "4 questions" in done
    report = json.loads(run("eval", "locomo", str(small), "--ks", "1", "--budgets", "64", "--json").stdout)
    assert report["questions"] == 4
    assert 0 <= report["recall_at_tokens"]["64"]["overall"] <= 100
    assert report["with_markers"] is True
    text = run("eval", "locomo", str(small), "--budgets", "512", "--ks", "5", "--text-tokens").stdout
    assert "512 text tokens" in text
    missing = run("eval", "locomo", str(LOCOMO_SAMPLE), "--conversation", "conv-99", check=2)
    assert "has no conversation conv-99" in missing.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('[{"sample_id": "x"}]', encoding="utf-8")
    error = run("eval", "locomo", str(bad), check=1)
    assert error.stderr.startswith("session-rag: error: ")
    assert "conversation" in error.stderr


def test_demo_runs_on_its_own_folder(tmp_path: Path) -> None:
    done = run("demo", "--path", str(tmp_path / "demo"), "--no-llm").stdout
    assert "Stored 6 sessions" in done
    assert "Scoping: user 'bob' asks the first question and gets 0 results." in done
    # the relational question, answered from relations with the markers of their sessions
    assert "analytics service — uses → ClickHouse [S: 2026-03-09] (before: PostgreSQL until 2026-03-09)" in done
    store = ["--path", str(tmp_path / "demo"), "--user", "alice"]
    shown = run("relations", "analytics service", *store).stdout.splitlines()
    assert shown == ["analytics service — uses → PostgreSQL [S: 2026-03-09] (until 2026-03-09, then ClickHouse)",
                     "analytics service — uses → ClickHouse [S: 2026-03-09]"]  # fmt: skip
    assert run("relations", "analytics service", "--as-of", "2026-02-01", *store).stdout.count("\n") == 1
    assert "no relation of 'billing'" in run("relations", "billing", *store).stderr
    assert "Invalid as_of" in run("relations", "x", "--as-of", "soon", *store, check=1).stderr
    assert run("relations", "analytics service", *store[:2], "--user", "bob").stdout == ""


def test_the_entry_point_in_a_process_exits_0_1_and_2_with_one_line(tmp_path: Path) -> None:
    version = run_process("--version")
    assert version.returncode == 0
    assert version.stdout.startswith("session-rag ")
    unknown = run_process("nope")
    assert unknown.returncode == 2
    assert "No such command 'nope'" in unknown.stderr
    truncated = run_process(
        "ingest", str(IMPORTS / "invalid" / "chatgpt_truncated.json"), "--path", str(tmp_path / "db")
    )
    assert truncated.returncode == 1
    (line,) = truncated.stderr.strip().splitlines()
    assert line.startswith("session-rag: error: ")
    assert "chatgpt_truncated.json: not valid JSON" in line
