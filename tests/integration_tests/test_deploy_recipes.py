"""The README's three deploy recipes, started as written (ports swapped for free loopback ones, workers 4 for 2).

Each ```bash block marked ``recipe NAME`` in README.md runs in a temporary folder as one shell script in its own
process group (the repository's ``examples/`` linked in, this environment's commands first on ``PATH``); the test
waits until the server answers, tells a fact as alice, checks it is stored for alice and never shown to bob, and
stops the group by its id. The workers recipe runs ``--workers 2`` where the README says ``--workers 4`` (each
worker loads the embedding model; that four workers serve is ``test_serve_workers.py``'s test).

The recipes run as written with an echo chat model chosen by the environment (``SESSION_RAG_SERVE_CHAT_MODEL``,
``SESSION_RAG_LANGGRAPH_MODEL``): it answers with what the memory recalled, so the answer shows alice's fact
recalled for alice and not for bob. The default model (SmolLM2 in process, Ollama being absent) is served in
``test_serve.py::test_the_real_local_model_answers_through_serve`` and
``test_langgraph_server.py::test_the_default_local_model_streams_and_with_a_master_key_only_langgraph_devs_run_records_hold_a_turn_in_clear``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_sync_client
from openai import OpenAI

from tests.integration_tests.serve_support import ECHO, free_port, stop_group

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
RECIPE = re.compile(
    r"<!-- not run: recipe (\w+), started by tests/integration_tests/test_deploy_recipes\.py -->\n```bash\n(.*?)```",
    re.DOTALL,
)
PORT = re.compile(r"(--port |127\.0\.0\.1:)(\d{4,5})\b")
ALICE, BOB = "alice-token-7c1e94f0a2b3", "bob-token-55d0e6a1c9f47"
WORKERS = ("--workers 4", "--workers 2")
"""What the README says, what the test runs: two workers are enough to land turns on another worker."""


def recipes() -> dict[str, str]:
    return dict(RECIPE.findall(README.read_text(encoding="utf-8")))


def test_the_readme_has_the_three_recipes() -> None:
    found = recipes()
    assert set(found) == {"langgraph", "serve", "workers"}
    assert WORKERS[0] in found["workers"]
    assert "--server 127.0.0.1:8000" in found["workers"]


class Recipe:
    """A README recipe running as a shell script in its own process group."""

    def __init__(self, name: str, folder: Path, ready_path: str) -> None:
        script = recipes()[name]
        ports = {old: str(free_port()) for _, old in PORT.findall(script)}
        script = PORT.sub(lambda m: m.group(1) + ports[m.group(2)], script).replace(*WORKERS)
        self.port = int(ports[PORT.findall(recipes()[name])[-1][1]])  # the last port named: the server's
        self.url = f"http://127.0.0.1:{self.port}"
        (folder / "examples").symlink_to(REPO / "examples", target_is_directory=True)
        path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        env = {
            **os.environ,
            "PATH": path,
            "PYTHONPATH": os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(REPO)) if p),
            "HOME": str(folder),
            "ANONYMIZED_TELEMETRY": "False",
            "LANGGRAPH_CLI_NO_ANALYTICS": "1",
            "OLLAMA_HOST": "http://127.0.0.1:9",  # no Ollama here
            "SESSION_RAG_SERVE_CHAT_MODEL": ECHO,  # answers with what the memory recalled (see the docstring)
            "SESSION_RAG_LANGGRAPH_MODEL": "echo",
        }
        env.pop("LANGSMITH_API_KEY", None)
        self.log = folder / "recipe.log"
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                ["bash", "-euo", "pipefail", "-c", script],
                cwd=folder,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        for _ in range(1200):  # bounded: at most about 4 minutes (workers load the embedding model)
            if self.proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{self.url}{ready_path}", timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        self.stop()
        pytest.fail(f"recipe {name} did not start:\n{self.log.read_text(errors='replace')[-3000:]}")

    def stop(self) -> None:
        stop_group(self.proc, timeout=30)


@pytest.fixture
def run_recipe(tmp_path: Path) -> Iterator[object]:
    started: list[Recipe] = []

    def start(name: str, ready_path: str) -> Recipe:
        recipe = Recipe(name, tmp_path, ready_path)
        started.append(recipe)
        return recipe

    yield start
    for recipe in started:
        recipe.stop()


def search(url: str, token: str, query: str) -> list[str]:
    found = httpx.get(
        f"{url}/v1/memory/search", params={"q": query}, headers={"Authorization": f"Bearer {token}"}, timeout=60
    )
    assert found.status_code == 200, found.text
    return [item["text"] for item in found.json()["data"]]


@pytest.mark.parametrize("name", ["serve", "workers"])
def test_serve_recipes_remember_per_user(run_recipe, name: str) -> None:
    server = run_recipe(name, "/readyz")
    alice = OpenAI(base_url=f"{server.url}/v1", api_key=ALICE, max_retries=0, timeout=300)
    facts = ["My locker code is 4471.", "My bike is a green Brompton.", "I water the ficus on Fridays."]
    for fact in facts:  # each told in its own conversation; with workers they land on any of them
        told = alice.chat.completions.create(model="session-rag", messages=[{"role": "user", "content": fact}])
        assert told.choices[0].message.content
        assert any(fact in text for text in search(server.url, ALICE, fact)), "stored by the time the answer ended"
    question = [{"role": "user", "content": "What is my locker code?"}]
    pieces = alice.chat.completions.create(model="session-rag", messages=question, stream=True)
    assert "4471" in "".join(c.choices[0].delta.content or "" for c in pieces if c.choices), "recalled, streamed"
    bob = OpenAI(base_url=f"{server.url}/v1", api_key=BOB, max_retries=0, timeout=300)
    answered = bob.chat.completions.create(model="session-rag", messages=question).choices[0].message.content
    assert answered
    assert "4471" not in answered, "bob's turn never recalls alice's memory"
    assert not any("4471" in text for text in search(server.url, BOB, "locker code")), "bob never sees alice's"


def test_langgraph_recipe_remembers_per_user(run_recipe) -> None:
    server = run_recipe("langgraph", "/ok")
    alice = get_sync_client(url=server.url, headers={"Authorization": f"Bearer {ALICE}"})
    bob = get_sync_client(url=server.url, headers={"Authorization": f"Bearer {BOB}"})
    thread = alice.threads.create()
    out = alice.runs.wait(
        thread["thread_id"], "session_rag", input={"messages": [{"role": "user", "content": "My locker code is 4471."}]}
    )
    assert out["messages"][-1]["type"] == "ai"
    asked = alice.runs.wait(
        alice.threads.create()["thread_id"],
        "session_rag",
        input={"messages": [{"role": "user", "content": "What is my locker code?"}]},
    )
    assert "4471" in asked["messages"][-1]["content"], "recalled in a new thread of alice's"
    found = alice.store.search_items(("memories", "alice"), query="locker code")
    assert any("4471" in str(item["value"]) for item in found["items"])
    with pytest.raises(httpx.HTTPStatusError) as refused:
        bob.store.search_items(("memories", "alice"), query="locker code")
    assert refused.value.response.status_code == 403
    with pytest.raises(httpx.HTTPStatusError) as hidden:
        bob.threads.get(thread["thread_id"])
    assert hidden.value.response.status_code == 404
