"""Export and import of one user's memories as JSON Lines."""

from __future__ import annotations

import json
import os
from pathlib import Path

from langchain_session_rag._records import RESULT_KEYS, metadata_value
from langchain_session_rag.errors import InvalidMessageError
from langchain_session_rag.stores import Record, decode_message_ids

__all__ = ["read_jsonl", "write_jsonl"]


def write_jsonl(records: list[Record], path: str | os.PathLike[str]) -> int:
    """Write records, one JSON object a line: ``id``, ``text``, ``metadata``, ``embedding``, ``embedding_model``."""
    ordered = sorted(
        records,
        key=lambda r: (str(r.metadata.get("session_id")), float(r.metadata.get("timestamp_epoch", 0)), r.id),
    )
    with Path(path).open("w", encoding="utf-8") as fh:
        for r in ordered:
            meta = {**r.metadata, "message_ids": decode_message_ids(r.metadata.get("message_ids"))}
            line = {
                "id": r.id,
                "text": r.text,
                "metadata": meta,
                "embedding": r.embedding,
                "embedding_model": meta.get("embedding_model"),
            }
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    return len(ordered)


def _valid(item: object) -> bool:
    return (
        isinstance(item, dict)
        and isinstance(item.get("id"), str)
        and isinstance(item.get("text"), str)
        and isinstance(item.get("metadata"), dict)
    )


def read_jsonl(path: str | os.PathLike[str], *, user_id: str, model_id: str) -> list[Record]:
    """Read and validate a whole export for ``user_id``; vectors are kept only if ``model_id`` wrote them.

    Raises:
        InvalidMessageError: A malformed line (the file is rejected whole).
    """
    records: list[Record] = []
    with Path(path).open(encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                item = json.loads(raw)
            except json.JSONDecodeError as exc:
                msg = f"{path}:{lineno}: not valid JSON ({exc.msg}); nothing was imported."
                raise InvalidMessageError(msg) from exc
            if not _valid(item):
                msg = (
                    f"{path}:{lineno}: each line needs string 'id', string 'text' and object 'metadata'; "
                    "nothing was imported."
                )
                raise InvalidMessageError(msg)
            meta = {k: metadata_value(v) for k, v in item["metadata"].items() if k not in RESULT_KEYS}
            meta["message_ids"] = json.dumps(decode_message_ids(item["metadata"].get("message_ids")))
            meta["user_id"] = user_id
            same_model = item.get("embedding_model") == model_id and isinstance(item.get("embedding"), list)
            meta["embedding_model"] = model_id
            vector = [float(x) for x in item["embedding"]] if same_model else None
            records.append(Record(id=item["id"], text=item["text"], metadata=meta, embedding=vector))
    return records
