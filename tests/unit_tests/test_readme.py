"""Every ```python block of the README runs, in order, in one namespace (```python skip blocks need a server)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the README's examples, on the real model

README = Path(__file__).resolve().parents[2] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_readme_has_examples() -> None:
    assert len(python_blocks()) >= 6


def test_readme_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "readme"}
    for n, block in enumerate(python_blocks()):
        code = compile(block, f"README.md python block {n}", "exec")
        exec(code, namespace)  # noqa: S102 - the README is ours
