"""Every example of README.md and docs/*.md runs, and prints exactly what the page shows.

The convention the pages follow:

- A ```python block runs; the blocks of one page share one namespace and run in order, in a temporary folder
  that holds a link to the repository's ``tests/`` (so ``tests/data/...`` paths work).
- A ```bash block whose lines are ``session-rag ...`` commands (or ``export NAME=value``) runs: each command is
  the real command line (``main``, behind the ``session-rag`` entry point, in Click's ``CliRunner`` isolation:
  ``tests/unit_tests/test_cli.py::run``), with ``HOME`` in a temporary folder, so the store is the default one
  under it. The blocks of a page share that ``HOME``.
- A ```text block right after a block that runs (only blank lines, or a line ``Output:``, between them) is that
  block's exact output (stdout, and stderr for the command line). A block that prints while the page shows no
  output fails, as does any difference. ``...`` in the shown output matches any text (for values that change
  from run to run, such as today's date).
- Any other block must carry ``<!-- not run: REASON -->`` on the line above it (a ``pip install`` from PyPI, a
  server this test does not start, a drawing); an unmarked block that this test does not run fails.

Besides, every ``langchain_session_rag...`` dotted name and every ``from langchain_session_rag... import X`` on
the pages must resolve, without a DeprecationWarning (names moved in 0.7 are given by their new path).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import re
import shlex
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.unit_tests.test_cli import run

pytestmark = pytest.mark.slow  # the user's examples run on the real parts: the bundled model, the CLI

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
NOT_RUN = re.compile(r"<!--\s*not run:\s*\S[^>]*-->\s*$")
CLI_LINE = re.compile(r"^(session-rag\s.*|export [A-Z_][A-Z0-9_]*=\S*)$")


@dataclass
class Block:
    lang: str
    body: str
    line: int
    before: str  # the page's text between the previous block and this one


def blocks(text: str) -> list[Block]:
    found, end = [], 0
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(match.group(1), match.group(2), line, text[end : match.start()]))
        end = match.end()
    return found


def runs(block: Block) -> bool:
    if block.lang == "python":
        return True
    lines = [ln.strip() for ln in block.body.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    return block.lang in {"bash", "console", "sh"} and bool(lines) and all(CLI_LINE.match(ln) for ln in lines)


def is_output(block: Block, previous: Block | None) -> bool:
    between = block.before.strip()
    return block.lang == "text" and previous is not None and runs(previous) and between in {"", "Output:"}


def matches(expected: str, actual: str) -> bool:
    """Line-wise equality (trailing spaces ignored); ``...`` in ``expected`` matches any text."""
    expected = "\n".join(ln.rstrip() for ln in expected.strip("\n").splitlines())
    actual = "\n".join(ln.rstrip() for ln in actual.strip("\n").splitlines())
    pattern = ".*?".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, actual, flags=re.DOTALL) is not None


class PageRunner:
    """Runs the examples of one page, in order, and collects every difference from what the page shows."""

    def __init__(self, name: str, workdir: Path) -> None:
        self.name = name
        self.workdir = workdir
        self.namespace: dict[str, object] = {"__name__": f"docs_example_{Path(name).stem}"}
        self.env: dict[str, str | None] = {  # over this process's environment; None removes a variable
            "HOME": str(workdir / "home"),
            "COLUMNS": "100",
            "NO_COLOR": "1",
            "TERM": "dumb",
            "OLLAMA_HOST": os.environ.get("OLLAMA_HOST"),
        }
        for key in ("SESSION_RAG_PATH", "SESSION_RAG_USER", "SESSION_RAG_SERVER", "SESSION_RAG_EMBEDDINGS"):
            self.env[key] = None
        self.failures: list[str] = []
        self.ran = 0
        self.compared = 0

    def run_python(self, block: Block) -> str:
        out = io.StringIO()
        code = compile(block.body, f"{self.name}:{block.line}", "exec")
        with contextlib.redirect_stdout(out):
            exec(code, self.namespace)  # noqa: S102 - the examples are the project's own pages
        return out.getvalue()

    def run_cli(self, block: Block) -> str:
        output = []
        for raw in block.body.splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("export "):
                key, _, value = line.removeprefix("export ").partition("=")
                self.env[key] = value
                continue
            proc = run(*shlex.split(line)[1:], env=self.env, check=None)
            if proc.returncode != 0:
                msg = f"{self.name}:{block.line}: `{line}` exited {proc.returncode}:\n{proc.stdout}{proc.stderr}"
                raise AssertionError(msg)
            output.append(proc.stdout + proc.stderr)
        return "".join(output)

    def run_page(self, text: str) -> None:
        found = blocks(text)
        for n, block in enumerate(found):
            previous = found[n - 1] if n else None
            if is_output(block, previous):
                continue
            if NOT_RUN.search(block.before.rstrip()):
                continue
            if not runs(block):
                self.failures.append(
                    f"{self.name}:{block.line}: a ```{block.lang} block that is not run: mark it "
                    "<!-- not run: REASON --> or make it runnable"
                )
                continue
            printed = self.run_python(block) if block.lang == "python" else self.run_cli(block)
            self.ran += 1
            following = found[n + 1] if n + 1 < len(found) else None
            if following is not None and is_output(following, block):
                self.compared += 1
                if not matches(following.body, printed):
                    self.failures.append(
                        f"{self.name}:{following.line}: the page shows\n{following.body}\nbut the example printed\n"
                        f"{printed}"
                    )
            elif printed.strip():
                self.failures.append(
                    f"{self.name}:{block.line}: the example printed\n{printed}\nbut the page shows no output block"
                )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_page_examples_print_what_the_page_shows(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    monkeypatch.chdir(tmp_path)
    runner = PageRunner(str(page.relative_to(ROOT)), tmp_path)
    try:
        runner.run_page(page.read_text(encoding="utf-8"))
    finally:
        from langchain_core.globals import set_llm_cache

        set_llm_cache(None)
    assert not runner.failures, "\n\n".join(runner.failures)


def test_the_pages_hold_examples_and_outputs() -> None:
    runnable = [b for p in PAGES for b in blocks(p.read_text(encoding="utf-8")) if runs(b)]
    outputs = [
        b
        for p in PAGES
        for found in [blocks(p.read_text(encoding="utf-8"))]
        for n, b in enumerate(found)
        if n and is_output(b, found[n - 1])
    ]
    assert len(runnable) >= 30
    assert len(outputs) >= 15


DOTTED = re.compile(r"\blangchain_session_rag(?:\.[A-Za-z_]\w*)+")
FROM_IMPORT = re.compile(r"^\s*from (langchain_session_rag[\w.]*) import (\([^)]*\)|[^\n#]+)", re.MULTILINE)


def resolve(dotted: str) -> object:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


def named_things(text: str) -> set[str]:
    names = {m.group(0) for m in DOTTED.finditer(text)}
    for module, imported in FROM_IMPORT.findall(text):
        for name in imported.strip("()").replace("\n", " ").split(","):
            if name.strip():
                names.add(f"{module}.{name.split(' as ')[0].strip()}")
    return names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_name_a_page_uses_is_importable_from_where_it_says(page: Path) -> None:
    unresolved = []
    for name in sorted(named_things(page.read_text(encoding="utf-8"))):
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            try:
                resolve(name)
            except (AttributeError, ImportError, DeprecationWarning) as err:
                unresolved.append(f"{name}: {err}")
    assert not unresolved, "\n".join(unresolved)


STALE_PAGE = """
```python
print("system 151")
```

```text
system 102
```
"""


def test_a_page_whose_output_is_stale_fails(tmp_path: Path) -> None:
    runner = PageRunner("stale.md", tmp_path)
    runner.run_page(STALE_PAGE)
    assert runner.ran == 1
    assert runner.compared == 1
    assert len(runner.failures) == 1
    assert "system 102" in runner.failures[0]
    assert "system 151" in runner.failures[0]


@pytest.mark.parametrize(
    "page",
    [
        "```python\nprint('hidden')\n```\n",  # prints, but the page shows nothing
        "```bash\npip install langchain-session-rag\n```\n",  # not run and not marked
        "```text\nan orphan transcript\n```\n",  # an output of nothing
    ],
)
def test_an_unchecked_example_fails(page: str, tmp_path: Path) -> None:
    runner = PageRunner("unchecked.md", tmp_path)
    runner.run_page(page)
    assert len(runner.failures) == 1


def test_a_marked_block_and_a_wildcard_pass(tmp_path: Path) -> None:
    page = (
        "<!-- not run: needs PyPI -->\n```bash\npip install x\n```\n\n"
        "```python\nimport datetime\nprint('today', datetime.date.today())\n```\n\nOutput:\n\n```text\ntoday ...\n```\n"
    )
    runner = PageRunner("marked.md", tmp_path)
    runner.run_page(page)
    assert runner.failures == []
    assert (runner.ran, runner.compared) == (1, 1)
    assert not matches("today 2026...\nx", "today 2027-01-01\nx")


def test_the_names_check_catches_a_wrong_path() -> None:
    names = named_things("from langchain_session_rag.memory import NoSuchThing\n")
    assert "langchain_session_rag.memory.NoSuchThing" in names
    with pytest.raises(AttributeError):
        resolve("langchain_session_rag.memory.NoSuchThing")


def test_the_readme_is_a_short_guide() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    headings = re.findall(r"^## (.+)$", text, flags=re.MULTILINE)
    assert headings[:4] == ["Install", "The two commands", "Quick start", "Ways to use it"]
    assert "<!-- times -->" in text
    for way in ("LCEL", "graph", "Agent tools", "store", "command line"):
        assert re.search(rf"^### .*{way}", text, flags=re.MULTILINE | re.IGNORECASE), way


def test_the_api_reference_covers_the_public_surface() -> None:
    import langchain_session_rag

    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = re.findall(r"[\w/-]+\.md", str(config["nav"]))
    pages = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md") if "_ext" not in p.parts}
    assert set(nav) == pages
    root_page = (ROOT / "docs/reference/index.md").read_text(encoding="utf-8")
    assert set(re.findall(r"^\s+- (\w+)$", root_page, flags=re.MULTILINE)) == set(langchain_session_rag.__all__)
    for sub in (
        "memory",
        "chunking",
        "prompt",
        "cache",
        "graph",
        "agents",
        "importers",
        "models",
        "evaluation",
        "errors",
    ):
        page = (ROOT / f"docs/reference/{sub}.md").read_text(encoding="utf-8")
        assert f"::: langchain_session_rag.{sub}\n" in page


def test_the_test_command_builds_the_docs_strictly() -> None:
    """``mkdocs build --strict --quiet`` ignores warnings in mkdocs 1.6: the command must not pass ``--quiet``."""
    line = next(x for x in (ROOT / "scripts" / "test.sh").read_text().splitlines() if "mkdocs build" in x)
    assert "--strict" in line
    assert "--quiet" not in line.split("#")[0]
    assert " -q " not in line.split("#")[0]
