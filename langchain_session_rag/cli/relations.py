"""``session-rag relations``: what the memory says about an entity, and how two entities are linked."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import click

from langchain_session_rag.cli.app import cli
from langchain_session_rag.cli.options import StoreOptions, err, out, printable, store_options


@cli.command()
@click.argument("entity")
@click.option("--to", "other", metavar="ENTITY", default=None, help="Show how ENTITY is linked to this one (2 steps).")
@click.option("--as-of", "as_of", metavar="DATE", default=None, help="Only what held on DATE (YYYY-MM-DD).")
@click.option("--hops", type=click.IntRange(1, 2), default=1, show_default=True, help="2: also its neighbours'.")
@click.option("--json", "as_json", is_flag=True, help="Print the relations as JSON.")
@store_options
def relations(entity: str, other: str | None, as_of: str | None, hops: int, as_json: bool, **store: Any) -> None:
    """Show what the memory says about ENTITY: its relations, current and past, with their markers.

    \b
    Examples:
      session-rag relations "analytics service"
      session-rag relations "billing API" --to Kubernetes
      session-rag relations Lisbon --as-of 2025-06-01
    """
    if not entity.strip():
        msg = "The entity is empty: give the name of a project, tool, person or place."
        raise click.UsageError(msg)
    memory = StoreOptions.of(store).memory(create=False)
    if other:
        found = [r for path in memory.paths(entity, other, as_of=as_of) for r in path]
    elif hops == 2:  # noqa: PLR2004
        found = memory.neighbours(entity, hops=2, as_of=as_of)
    else:
        found = memory.relations(entity, as_of=as_of)
    if as_json:
        click.echo(json.dumps([asdict(r) for r in found], ensure_ascii=False, indent=2, default=str))
        return
    if not found:
        err.print(printable(f"The memory of {memory.user_id!r} holds no relation of {entity!r}."))
        return
    for rel in found:
        out.print(printable(rel.render()))
