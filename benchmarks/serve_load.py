"""Load benchmark: many users chatting at once with a memory server, over a Chroma server, with a fake chat model.

A Chroma server (``chroma run`` on a free loopback port, stopped by its PID; a new one per target) holds the memory. ``--users``
concurrent users (default 50) each send ``--pairs`` pairs of turns: a new fact ("My gym PIN is 4471-1."), then
at once, on a new connection (so that any worker may take it), the question for it ("What is my gym PIN?"); a
pair whose answer does not contain the fact is a read-your-writes miss (each pair asks about another thing, so one
memory answers each question). The chat model is fake and instant: it answers with the user lines
of the memories its prompt recalled (what the graph retrieved shows in the answer), so the numbers are the
memory's and the server's, not a model's.

Targets (``--target``, several allowed):
- ``plain``: a FastAPI endpoint without memory, the same fake model (uvicorn, ``--workers``);
- ``inprocess``: a FastAPI endpoint running the session-RAG graph in process (what a user wrote before
  ``session-rag serve``): ``create_session_rag_graph(model, SessionVectorMemory.server(...))``;
- ``serve``: ``session-rag serve --server HOST:PORT --workers N --token-file ... --chat-model serve_load:echo_model``;
- ``langgraph``: ``langgraph dev`` on examples/langgraph/langgraph.json (one process, its in-memory runtime),
  driven with the LangGraph SDK (``runs.wait``), the Chroma server as its store.
Per target: turns/s, p50/p95 turn latency (client side), RSS per worker (at the end, and its peak), CPU per turn
(server processes; Chroma's apart), misses. ``--breakdown`` adds a turn's parts in one process, one at a time (the
0.6.0 measurement): query embedding, exchange embedding, retrieval, an awaited write, a graph turn and a bare
one-node graph turn, and the added latency against the embedding floor (query + exchange embedding).

Run: bash scripts/benchmark.sh serve_load [--target plain,inprocess,serve,langgraph] [--workers 4] [--users 50]
     [--breakdown]
Results: benchmarks/results/serve_load.json (the load average is recorded: times on a busy machine are higher).
"""

# ruff: noqa: ARG002 - the chat model interface's unused arguments
from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results" / "serve_load.json"
CHROMA_ENV = "SERVE_LOAD_CHROMA"
TARGETS = ("plain", "inprocess", "serve", "langgraph")


class EchoModel(BaseChatModel):
    """The fake chat model: answers with the user lines of the memories in its prompt, instantly."""

    @property
    def _llm_type(self) -> str:
        return "serve-load-echo"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        said = [
            line.removeprefix("> User: ")
            for m in messages
            for line in m.text.splitlines()
            if line.startswith("> User: ")
        ]
        text = "Recalled: " + " / ".join(said) if said else "Recalled nothing."
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])


def echo_model() -> EchoModel:
    """``--chat-model serve_load:echo_model`` for ``session-rag serve``."""
    return EchoModel()


# ---------------------------------------------------------------- the apps uvicorn serves (factories)
def _app(answer: Any) -> Any:
    app = FastAPI()

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        user = request.headers.get("authorization", "Bearer anonymous").removeprefix("Bearer ")
        content = await answer(user, body["messages"][-1]["content"])
        reply = {
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        }
        return JSONResponse(reply, headers={"x-worker-pid": str(os.getpid())})

    return app


def plain_app() -> Any:
    """The same fake model behind a bare FastAPI endpoint: no memory."""
    from langchain_core.messages import HumanMessage  # noqa: PLC0415

    model = EchoModel()

    async def answer(_user: str, text: str) -> str:
        return (await model.ainvoke([HumanMessage(text)])).text

    return _app(answer)


def inprocess_app() -> Any:
    """The session-RAG graph in process over the Chroma server at ``$SERVE_LOAD_CHROMA``."""
    from langchain_core.messages import HumanMessage  # noqa: PLC0415

    from langchain_session_rag import SessionVectorMemory, get_default_embeddings  # noqa: PLC0415
    from langchain_session_rag.graph import create_session_rag_graph  # noqa: PLC0415

    host, _, port = os.environ[CHROMA_ENV].rpartition(":")
    memory = SessionVectorMemory.server(host, int(port), user_id="server")
    get_default_embeddings().warm_up()
    graph = create_session_rag_graph(EchoModel(), memory).compile()

    async def answer(user: str, text: str) -> str:
        state = await graph.ainvoke(
            {"messages": [HumanMessage(text)]}, context={"user_id": user, "session_id": f"{user}-load"}
        )
        return str(state["messages"][-1].text)

    return _app(answer)


# ---------------------------------------------------------------- processes
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(
    command: list[str], log: Path, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            cwd=cwd,
            start_new_session=True,
        )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a process we started, and its group (uvicorn's workers), by its PID."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=15)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _wait_http(url: str, proc: subprocess.Popen[bytes], log: Path, tries: int = 600) -> None:
    import httpx  # noqa: PLC0415

    for _ in range(tries):  # bounded: about 60 s
        if proc.poll() is not None:
            msg = f"{url}: the process exited; see {log}"
            raise RuntimeError(msg)
        try:
            if httpx.get(url, timeout=1).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    msg = f"{url} did not answer; see {log}"
    raise RuntimeError(msg)


def _tree(pid: int) -> list[int]:
    import psutil  # noqa: PLC0415

    try:
        root = psutil.Process(pid)
        return [root.pid, *(c.pid for c in root.children(recursive=True))]
    except psutil.NoSuchProcess:
        return []


def _helper(pid: int) -> bool:
    """A helper process of the server (multiprocessing's resource tracker), not a worker."""
    try:
        return b"resource_tracker" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True


def _usage(pids: list[int]) -> dict[int, dict[str, float]]:
    """CPU seconds, RSS and peak RSS (MB) of each process."""
    import psutil  # noqa: PLC0415

    out: dict[int, dict[str, float]] = {}
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            times, status = proc.cpu_times(), Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
        except (psutil.NoSuchProcess, OSError):
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        out[pid] = {
            "cpu_s": times.user + times.system,
            "rss_mb": int(fields["VmRSS"].split()[0]) / 1024,
            "peak_rss_mb": int(fields["VmHWM"].split()[0]) / 1024,
        }
    return out


# ---------------------------------------------------------------- the load
THINGS = ("locker code", "gym PIN", "bike lock combination", "parking spot number", "badge number", "flat number")
"""One thing per pair: each question has exactly one memory that answers it (a miss is not a ranking tie)."""


def _facts(users: int, pairs: int) -> dict[str, list[tuple[str, str]]]:
    return {
        f"user{u:03d}": [(THINGS[p % len(THINGS)], f"{4000 + 37 * u + 7 * p}-{p}") for p in range(pairs)]
        for u in range(users)
    }


async def _drive(send: Any, users: int, pairs: int) -> dict[str, Any]:
    """Every user at once: tell a fact, ask it at once; latencies, misses, the workers that answered."""
    latencies: list[float] = []
    misses: list[str] = []
    cross = [0, 0]  # asks answered by another worker than the tell, of them missed
    known = [False]  # whether the server names its worker (x-worker-pid)

    async def user(name: str, facts: list[tuple[str, str]]) -> None:
        for thing, code in facts:
            t0 = time.perf_counter()
            _, told_by = await send(name, f"My {thing} is {code}.")
            t1 = time.perf_counter()
            answer, asked_by = await send(name, f"What is my {thing}?")
            latencies.extend((t1 - t0, time.perf_counter() - t1))
            missed = code not in answer
            if missed:
                misses.append(f"{name}:{code} -> {answer[:160]!r}")
            known[0] = known[0] or bool(asked_by)
            if told_by and asked_by and told_by != asked_by:
                cross[0] += 1
                cross[1] += missed

    started = time.perf_counter()
    await asyncio.gather(*(user(name, facts) for name, facts in _facts(users, pairs).items()))
    wall = time.perf_counter() - started
    ordered = sorted(latencies)
    return {
        "turns": len(latencies),
        "wall_s": round(wall, 2),
        "turns_per_s": round(len(latencies) / wall, 2),
        "p50_ms": round(statistics.median(ordered) * 1e3, 1),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1e3, 1),
        "read_your_writes_misses": len(misses),
        "asks": users * pairs,
        "asks_on_another_worker": cross[0] if known[0] else None,
        "misses_on_another_worker": cross[1] if known[0] else None,
        "missed_examples": misses[:5],
    }


def _openai_sender(base: str, tokens: dict[str, str]) -> tuple[Any, Any]:
    import httpx  # noqa: PLC0415

    client = httpx.AsyncClient(base_url=base, timeout=120, limits=httpx.Limits(max_keepalive_connections=0))

    async def send(user: str, text: str) -> tuple[str, str]:
        body = {"model": "session-rag", "messages": [{"role": "user", "content": text}]}
        response = await client.post(
            "/v1/chat/completions", json=body, headers={"authorization": f"Bearer {tokens.get(user, user)}"}
        )
        response.raise_for_status()
        return str(response.json()["choices"][0]["message"]["content"]), response.headers.get("x-worker-pid", "")

    return send, client.aclose


def _langgraph_sender(base: str, tokens: dict[str, str]) -> tuple[Any, Any]:
    from langgraph_sdk import get_client  # noqa: PLC0415

    clients = {
        user: get_client(url=base, headers={"Authorization": f"Bearer {token}"}) for user, token in tokens.items()
    }

    async def send(user: str, text: str) -> tuple[str, str]:
        client = clients[user]
        thread = await client.threads.create()
        state = await client.runs.wait(
            thread["thread_id"],
            "session_rag",
            input={"messages": [{"role": "user", "content": text}]},
            context={"session_id": f"{user}-load"},
        )
        return str(state["messages"][-1]["content"]), ""  # type: ignore[index,call-overload]

    async def close() -> None:
        return None

    return send, close


def run_target(
    target: str, args: argparse.Namespace, chroma: tuple[str, int], chroma_pid: int, folder: Path
) -> dict[str, Any]:
    port = _free_port()
    log = folder / f"{target}.log"
    root = Path(args.repo).resolve()
    env = {
        "PYTHONPATH": os.pathsep.join([str(root), str(HERE), os.environ.get("PYTHONPATH", "")]),
        CHROMA_ENV: f"{chroma[0]}:{chroma[1]}",
        "ANONYMIZED_TELEMETRY": "False",
    }
    tokens = {name: f"token-{name}-{'x' * 24}" for name in _facts(args.users, 1)}
    token_file = folder / "tokens.txt"
    token_file.write_text("".join(f"{t} {u}\n" for u, t in tokens.items()), encoding="utf-8")
    token_file.chmod(0o600)
    python = sys.executable
    base, health, sender = f"http://127.0.0.1:{port}", "/healthz", _openai_sender
    if target in ("plain", "inprocess"):
        command = [
            python,
            "-m",
            "uvicorn",
            "--factory",
            f"serve_load:{target}_app",
            "--app-dir",
            str(HERE),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            str(args.workers),
            "--log-level",
            "warning",
        ]
    elif target == "serve":
        command = [
            python,
            "-m",
            "langchain_session_rag",
            "serve",
            "--server",
            f"{chroma[0]}:{chroma[1]}",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            str(args.workers),
            "--token-file",
            str(token_file),
            "--chat-model",
            "serve_load:echo_model",
        ]
    elif target == "langgraph":
        graph_env = {
            "SESSION_RAG_LANGGRAPH_CHROMA": f"{chroma[0]}:{chroma[1]}",
            "SESSION_RAG_LANGGRAPH_MODEL": "serve_load:echo_model",
            "SESSION_RAG_LANGGRAPH_TOKENS": str(token_file),
            "LANGSMITH_TRACING": "false",
            "LANGGRAPH_CLI_NO_ANALYTICS": "1",
            "LANGCHAIN_TRACING_V2": "false",
        }
        env.update(graph_env)
        command = [
            str(Path(python).parent / "langgraph"),
            "dev",
            "--no-browser",
            "--no-reload",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--config",
            str(root / "examples" / "langgraph" / "langgraph.json"),
        ]
        health, sender = "/ok", _langgraph_sender
    else:
        msg = f"unknown target {target!r}: one of {', '.join(TARGETS)}"
        raise ValueError(msg)
    proc = _start(command, log, env, cwd=root)
    try:
        _wait_http(base + health, proc, log)
        send, close = sender(base, tokens if target in ("serve", "langgraph") else {})

        async def warm_then_measure() -> dict[str, Any]:
            await asyncio.gather(
                *(
                    send(f"user{u:03d}", "Hello, just warming up.")
                    for u in range(min(args.users, max(8, 2 * args.workers)))
                )
            )
            before = _usage([*_tree(proc.pid), chroma_pid])
            result = await _drive(send, args.users, args.pairs)
            after = _usage([*_tree(proc.pid), chroma_pid])
            await close()
            server = [p for p in after if p != chroma_pid]
            workers = [p for p in server if p != proc.pid and not _helper(p)] or server
            cpu = sum(after[p]["cpu_s"] - before.get(p, {"cpu_s": 0.0})["cpu_s"] for p in server)
            chroma_cpu = after[chroma_pid]["cpu_s"] - before[chroma_pid]["cpu_s"]
            result.update({
                "processes": len(server),
                "rss_per_worker_mb": [round(after[p]["rss_mb"]) for p in workers],
                "peak_rss_per_worker_mb": [round(after[p]["peak_rss_mb"]) for p in workers],
                "server_cpu_ms_per_turn": round(1e3 * cpu / result["turns"], 1),
                "chroma_cpu_ms_per_turn": round(1e3 * chroma_cpu / result["turns"], 1),
            })  # fmt: skip
            return result

        return asyncio.run(warm_then_measure())
    finally:
        _stop(proc)


# ---------------------------------------------------------------- the breakdown of one turn (one process)
def _time_parts(parts: dict[str, Any], repeats: int) -> dict[str, Any]:
    """Each part ``repeats`` times, interleaved (every part sees the same machine): wall p50/p95 and CPU p50."""
    samples: dict[str, list[float]] = {name: [] for name in parts}
    cpu: dict[str, list[float]] = {name: [] for name in parts}
    for call in parts.values():
        for _ in range(5):
            call()
    for _ in range(repeats):
        for name, call in parts.items():
            w0, c0 = time.perf_counter(), time.process_time()
            call()
            cpu[name].append(time.process_time() - c0)
            samples[name].append(time.perf_counter() - w0)
    out: dict[str, Any] = {}
    for name in parts:
        ordered = sorted(samples[name])
        out[name] = {
            "p50_ms": round(statistics.median(ordered) * 1e3, 2),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1e3, 2),
            "cpu_ms": round(statistics.median(cpu[name]) * 1e3, 2),
        }
    return out


def breakdown(chroma: tuple[str, int] | None, repeats: int, folder: Path | None = None) -> dict[str, Any]:
    """A turn's parts over a Chroma server (``chroma``: write-through) or an embedded store in ``folder``
    (background writes, the graph's default there)."""
    from langchain_core.messages import HumanMessage  # noqa: PLC0415
    from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: PLC0415

    from langchain_session_rag import SessionVectorMemory, get_default_embeddings  # noqa: PLC0415
    from langchain_session_rag.graph import create_session_rag_graph  # noqa: PLC0415

    embeddings = get_default_embeddings().warm_up()
    if chroma is not None:
        memory = SessionVectorMemory.server(chroma[0], chroma[1], user_id="server")
    else:
        memory = SessionVectorMemory.local(path=folder, user_id="server")
    alice = memory.for_user("breakdown-alice")
    for n in range(40):  # a history to retrieve from
        alice.add_messages(
            [
                {"role": "user", "content": f"Note {n}: the deploy of service {n % 9} moved to rack {n}."},
                {"role": "assistant", "content": f"Noted, rack {n}."},
            ],
            session_id=f"seed{n // 10}",
        )
    question = "Which rack did the deploy of service 4 move to?"
    exchange = f"User: {question}\nAssistant: It moved to rack 13, next to the storage shelf, after the audit."
    model = EchoModel()
    graph = create_session_rag_graph(model, memory).compile()

    def bare(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    one_node = (
        StateGraph(MessagesState).add_node("model", bare).add_edge(START, "model").add_edge("model", END).compile()
    )
    context = {"user_id": "breakdown-alice", "session_id": "timed"}
    counter = itertools.count()
    nodes: dict[str, list[float]] = {}

    def streamed_turn() -> None:  # a new question each turn: a repeated exchange would not be written again
        last = time.perf_counter()
        turn = {"messages": [HumanMessage(f"{question} ({next(counter)})")]}
        for update in graph.stream(turn, context=context, stream_mode="updates"):
            now = time.perf_counter()
            for node in update:
                nodes.setdefault(node, []).append(now - last)
            last = now

    parts = {
        "query_embedding": lambda: embeddings.embed_query(question),
        "exchange_embedding": lambda: embeddings.embed_documents([exchange]),
        "retrieval_with_query_embedding": lambda: alice.invoke(question),
        "awaited_write_with_embedding": lambda: alice.add_messages(
            [
                {"role": "user", "content": f"{question} ({next(counter)})"},
                {"role": "assistant", "content": "Rack 13."},
            ],
            session_id="writes",
        ),
        "graph_turn": streamed_turn,
        "bare_graph_turn": lambda: one_node.invoke({"messages": [HumanMessage(question)]}),
    }
    out = _time_parts(parts, repeats)
    memory.flush()
    floor = out["query_embedding"]["p50_ms"] + out["exchange_embedding"]["p50_ms"]
    added = out["graph_turn"]["p50_ms"] - out["bare_graph_turn"]["p50_ms"]
    out["embedding_floor_ms"] = round(floor, 2)
    out["retrieval_without_embedding_ms"] = round(
        out["retrieval_with_query_embedding"]["p50_ms"] - out["query_embedding"]["p50_ms"], 2
    )
    out["write_without_embedding_ms"] = round(
        out["awaited_write_with_embedding"]["p50_ms"] - out["exchange_embedding"]["p50_ms"], 2
    )
    out["added_p50_ms"] = round(added, 2)
    out["added_over_floor"] = round(added / floor, 2)
    out["graph_cpu_ms_per_turn"] = out["graph_turn"]["cpu_ms"]
    out["graph_nodes_p50_ms"] = {node: round(statistics.median(times) * 1e3, 2) for node, times in nodes.items()}
    return out


@contextlib.contextmanager
def _chroma(folder: Path) -> Iterator[tuple[int, int]]:
    """A Chroma server on a free loopback port in ``folder``: its port and PID; stopped by its PID."""
    folder.mkdir(parents=True)
    port = _free_port()
    chroma = str(Path(sys.executable).parent / "chroma")
    command = [chroma, "run", "--path", str(folder / "db"), "--host", "127.0.0.1", "--port", str(port)]
    proc = _start(command, folder / "chroma.log", {"ANONYMIZED_TELEMETRY": "False"})
    try:
        _wait_http(f"http://127.0.0.1:{port}/api/v2/heartbeat", proc, folder / "chroma.log")
        yield port, proc.pid
    finally:
        _stop(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="plain,inprocess", help=f"comma-separated: {', '.join(TARGETS)}")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--pairs", type=int, default=3, help="tell/ask pairs per user")
    parser.add_argument("--breakdown", action="store_true", help="also time a turn's parts in one process")
    parser.add_argument("--repeats", type=int, default=100, help="turns timed per part in the breakdown")
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--repo", default=str(ROOT), help="the checkout whose package and examples the servers run")
    args = parser.parse_args()
    report: dict[str, Any] = {
        "load_average_before": os.getloadavg(),
        "cpus": os.cpu_count(),
        "workers": args.workers,
        "users": args.users,
        "pairs": args.pairs,
        "targets": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.breakdown:
            with _chroma(folder / "breakdown") as (port, _):
                report["breakdown"] = breakdown(("127.0.0.1", port), args.repeats)
            print("breakdown", json.dumps(report["breakdown"]), flush=True)
            report["breakdown_embedded"] = breakdown(None, args.repeats, folder / "breakdown-embedded")
            print("breakdown_embedded", json.dumps(report["breakdown_embedded"]), flush=True)
        for target in args.target.split(","):  # a new Chroma server each: no target reads another's memories
            with _chroma(folder / target) as (port, pid):
                try:
                    report["targets"][target] = run_target(target, args, ("127.0.0.1", port), pid, folder)
                except (RuntimeError, ValueError, OSError) as exc:
                    log = folder / f"{target}.log"
                    tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
                    report["targets"][target] = {"error": str(exc), "log_tail": tail}
            print(target, json.dumps(report["targets"][target]), flush=True)
    report["load_average_after"] = os.getloadavg()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(
        f"load average {report['load_average_before'][0]:.2f} -> {report['load_average_after'][0]:.2f}; wrote {args.out}"
    )


if __name__ == "__main__":
    main()
