"""``session-rag eval locomo FILE``: the evidence-recall benchmark on LoCoMo conversations, with its table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from langchain_session_rag.cli.app import cli
from langchain_session_rag.cli.options import err, out, status
from langchain_session_rag.cli.store_commands import readable_files

_CATEGORIES = ("single", "multi", "temporal", "open", "adv", "overall")


@cli.group("eval")
def eval_group() -> None:
    """Measure retrieval quality on a benchmark."""


def _ints(ctx: click.Context, param: click.Parameter, value: str) -> tuple[int, ...]:
    del ctx
    try:
        numbers = tuple(int(v) for v in value.split(","))
    except ValueError:
        numbers = ()
    if not numbers or min(numbers) < 1:
        msg = f"expected positive integers separated by commas (e.g. 256,512,1024), got {value!r}"
        raise click.BadParameter(msg, param=param)
    return numbers


@eval_group.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path), callback=readable_files)
@click.option("--budgets", default="256,512,1024", show_default=True, callback=_ints,
              help="Prompt-token budgets to report recall within.")  # fmt: skip
@click.option("--ks", default="1,5,10,25", show_default=True, callback=_ints, help="Chunk counts to report recall at.")
@click.option("--conversation", "only", multiple=True, help="Only this sample id (repeatable; e.g. conv-26).")
@click.option("--chunking", type=click.Choice(["topic", "exchange"]), default=None, help="Override the chunking.")
@click.option("--lexical-weight", type=click.FloatRange(0.0, 1.0), default=None, help="Override the BM25 weight.")
@click.option("--text-tokens", is_flag=True,
              help="Budgets count chunk text only, not each chunk's [S: date] marker.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def locomo(file: Path, budgets: tuple[int, ...], ks: tuple[int, ...], only: tuple[str, ...], chunking: str | None,
           lexical_weight: float | None, text_tokens: bool, as_json: bool) -> None:  # fmt: skip
    """Evidence recall of the memory's defaults on a LoCoMo FILE (e.g. locomo10.json).

    Each conversation is stored in a temporary embedded store (its own user); each question with evidence
    retrieves from it; recall is the share of the evidence turns in the retrieved chunks, per question category,
    at each prompt-token budget and chunk count.
    """
    from langchain_session_rag.evaluation.locomo import evaluate_locomo  # noqa: PLC0415
    from langchain_session_rag.evaluation.locomo_data import load_locomo  # noqa: PLC0415

    with status(f"Reading {file} …"):
        conversations = load_locomo(file)
    if only:
        missing = sorted(set(only) - {c.sample_id for c in conversations})
        if missing:
            known = ", ".join(c.sample_id for c in conversations)
            msg = f"{file} has no conversation {', '.join(missing)} (it has {known})."
            raise click.BadParameter(msg, param_hint="--conversation")
        conversations = [c for c in conversations if c.sample_id in only]
    options: dict[str, Any] = {"chunking": chunking, "lexical_weight": lexical_weight}
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True, disable=not err.is_terminal) as bar:
        task = bar.add_task("Questions", total=None)
        report = evaluate_locomo(
            conversations,
            memory_options={k: v for k, v in options.items() if v is not None},
            ks=ks,
            budgets=budgets,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
            source=file.name,
            with_markers=not text_tokens,
        )
    if as_json:
        click.echo(json.dumps(report.as_dict(), indent=2))
        return
    present = [c for c in _CATEGORIES if any(c in row for row in report.recall_at_tokens.values())]
    table = Table("recall %", *present, title=report.data, title_justify="left")
    for budget, row in report.recall_at_tokens.items():
        unit = "prompt tokens" if report.with_markers else "text tokens"
        table.add_row(f"{budget} {unit}", *(f"{row.get(c, 0):.1f}" for c in present))
    for k, row in report.recall_at_k.items():
        table.add_row(f"top {k} chunks", *(f"{row.get(c, 0):.1f}" for c in present))
    out.print(table)
    out.print(
        f"{report.questions} questions, {report.chunks} chunks stored (mean {report.mean_chunk_tokens} tokens), "
        f"{report.seconds:.0f} s."
    )
