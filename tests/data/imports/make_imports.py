"""Writes the importer fixtures next to this file, and expected.json (run: python tests/data/imports/make_imports.py).

Every file is synthetic, written for this project: the people, facts and ids are made up; the formats follow the
real ones (ChatGPT data export, OpenAI chat / fine-tuning JSONL, LangChain message dumps, this package's daily
logs, plain markdown notes). Deterministic: fixed ids and timestamps, no randomness, so running it twice gives
byte-identical files. expected.json says what a correct importer keeps from each file; the generator checks its
own annotations against the data it writes (markers present where they should be, absent from kept text).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
import uuid
import zipfile
import zlib
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from langchain_core.load import dumpd
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage, messages_to_dict

from langchain_session_rag.chunking.messages import normalize_messages
from langchain_session_rag.memory.daily_log import append_daily_log

HERE = Path(__file__).resolve().parent
UTC = timezone.utc
SEED = "session-rag import fixtures v1"
ZIP_TIME = (2025, 6, 2, 9, 30, 0)
USER_ID = "user-4kQ9vX2mB7nLp3Rt8ZsW1cYd"
Json = dict[str, Any]

DECISIONS: dict[str, dict[str, str]] = {
    "chatgpt_current_branch": {
        "choice": "keep only the branch from the root to current_node (follow parent links up from current_node)",
        "why": "it is the conversation as the user last saw it; regenerated-away replies and pre-edit messages were replaced",
    },
    "chatgpt_hidden": {
        "choice": "skip messages with metadata.is_visually_hidden_from_conversation (the empty system message, custom instructions)",
        "why": "they were never said in the conversation; the UI does not show them",
    },
    "chatgpt_custom_instructions": {
        "choice": "skip user_editable_context (custom instructions); its text is in must_not_contain",
        "why": "hidden, and injected into every conversation: imported per conversation it would be stored N times; a profile importer could store it once",
    },
    "chatgpt_thoughts": {
        "choice": "skip content_type thoughts and reasoning_recap (o-series reasoning); their text is in must_not_contain",
        "why": "not the answer the user saw; the scratch work holds ideas the model rejected, which would become false memories",
    },
    "chatgpt_code_interpreter": {
        "choice": "keep the assistant's code message (recipient python, role assistant) and the execution_output (role tool)",
        "why": "the user sees both in the 'Analysis' panel and the output is the source of a computed fact; marked with this decision so a test may treat them as optional",
    },
    "chatgpt_browsing": {
        "choice": "skip browsing traffic: the assistant's code to recipient 'browser' (search, mclick) and the tool's tether_browsing_display / tether_quote; listed under skipped_by_decision",
        "why": "commands and third-party web text, not the user's conversation; the assistant's answer after them says what was found",
    },
    "chatgpt_images": {
        "choice": "keep the text parts of multimodal_text; the image_asset_pointer part is not text (an importer may add a placeholder such as '[image]')",
        "why": "the export holds only a pointer (file-service:// or sediment://), not the picture's content",
    },
    "chatgpt_null_create_time": {
        "choice": "expected timestamp is null where create_time is null; an importer may file such a message at the previous message's time",
        "why": "the source has no time for it; the daily log already files a timeless message at the one before",
    },
    "chatgpt_conversation_order": {
        "choice": "conversations are expected in file order (index = position in the array); the real export lists the newest first",
        "why": "keeps the check independent of any sorting an importer might do; compare by index or by id",
    },
    "chatgpt_citations": {
        "choice": "assistant text is given as exported, citation marks such as 【11†source】 included; 'contains' substrings avoid them",
        "why": "an importer may strip them or not",
    },
    "system_prompts": {
        "choice": "skip system and developer messages in OpenAI and LangChain files; listed under skipped_by_decision",
        "why": "application configuration, repeated verbatim across conversations, not something the person said or was told",
    },
    "tool_calls": {
        "choice": "keep an assistant message whose only content is tool_calls / function_call (as the package renders it: '[called name({args})]'), and tool / legacy function results as role tool",
        "why": "they are part of the exchange and the results can hold the facts; OpenAI arguments are a JSON string and must be parsed into args, so the function name must survive",
    },
    "openai_weight": {
        "choice": "ignore the fine-tuning 'weight' field; a weight-0 assistant message is kept",
        "why": "weight says what to train on, not what was said",
    },
    "openai_image_parts": {
        "choice": "image_url content parts are skipped (non-text), text parts kept",
        "why": "the URL is not the picture's content",
    },
    "timestamps_absent": {
        "choice": "OpenAI-format files have no times: every expected timestamp is null (an importer may use the import time)",
        "why": "the format has no timestamp field",
    },
    "langchain_timestamps": {
        "choice": "LangChain messages carry their time in additional_kwargs['timestamp'] (this package's convention); SystemMessage has none",
        "why": "LangChain has no timestamp field; the package reads that key",
    },
    "daily_log_sessions": {
        "choice": "a daily-log file's conversations are its sessions in order of first appearance; a session crossing midnight is split over two files",
        "why": "that is how append_daily_log files messages (by each message's own day)",
    },
    "notes_documents": {
        "choice": "a markdown note is one document written by the user (role user); title from its first heading; a YYYY-MM-DD file name gives the timestamp (midnight UTC), otherwise null",
        "why": "notes have no speakers or times; an importer may split a note by heading, so check facts and contains, not message counts",
    },
    "invalid_files": {
        "choice": "an invalid file is rejected as a whole: nothing of it is stored, not even the valid conversations before the broken part",
        "why": "same rule as add_messages: nothing of an invalid batch is stored",
    },
}

CUSTOM_ABOUT_USER = (
    "I'm Sam. I live in Leeds and I teach cello at a community music school. I bake bread most weekends."
)
CUSTOM_ABOUT_MODEL = "Use metric units and British spelling. Keep answers short unless I ask for detail."
CUSTOM_MARKERS = ["I teach cello at a community music school", "Use metric units and British spelling"]


# ---------------------------------------------------------------- helpers


def at(text: str) -> float:
    """Unix seconds (float, microseconds) of an ISO time taken as UTC, as the ChatGPT export writes them."""
    value = datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()
    if iso(value) != datetime.fromisoformat(text).replace(tzinfo=UTC).isoformat():
        msg = f"{text} does not survive the float round trip"
        raise ValueError(msg)
    return value


def iso(value: float | None) -> str | None:
    return None if value is None else datetime.fromtimestamp(value, tz=UTC).isoformat()


def uid(*key: str) -> str:
    """A fixed random-looking version-4 UUID (the export's message ids are uuid4) derived from ``key``."""
    digest = hashlib.sha256("/".join((SEED, *key)).encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def client_id(*key: str) -> str:
    """Ids the ChatGPT web client makes for user messages and roots start with aaa1 / aaa2."""
    return "aaa2" + uid(*key)[4:]


def conversation_id(created: float, key: str) -> str:
    """Newer conversation ids start with the creation time in hex and have 800x in the third group."""
    tail = uid("conversation", key)
    return f"{int(created):08x}-{tail[9:13]}-800{tail[15]}-{tail[19:]}"


def ray_id(*key: str) -> str:
    return uid("request", *key).replace("-", "")[:16] + "-LHR"


def dump(data: Any, *, indent: int | None = 2, ascii_only: bool = False) -> str:
    text = json.dumps(data, ensure_ascii=ascii_only, indent=indent)
    return text if indent is None else text + "\n"


def write(relative: str, data: str | bytes) -> Path:
    path = HERE / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def write_zip(relative: str, members: list[tuple[str, bytes]]) -> None:
    path = HERE / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)


def tiny_png(rgb: tuple[int, int, int]) -> bytes:
    """A valid 1x1 PNG (the export's uploaded image files are stood in for by this)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00" + bytes(rgb), 9))
        + chunk(b"IEND", b"")
    )


def expect(role: str, contains: str, timestamp: str | None, **extra: Any) -> Json:
    return {"role": role, "contains": contains, "timestamp": timestamp, **{k: v for k, v in extra.items() if v}}


def fact(question: str, answer: str, lang: str = "en") -> Json:
    return {"question": question, "answer_contains": answer, "lang": lang}


def check_texts(where: str, conversation: Json, kept_texts: list[str], all_kept_texts: list[str]) -> None:
    """The generator's own consistency check of an expected conversation against the texts it wrote."""
    problems = []
    if len(kept_texts) != len(conversation["messages"]):
        problems.append(f"{len(kept_texts)} kept texts for {len(conversation['messages'])} expected messages")
    for text, message in zip(kept_texts, conversation["messages"], strict=False):
        if message["contains"] not in text:
            problems.append(f"{message['contains']!r} is not in its message")
        if sum(message["contains"] in other for other in kept_texts) != 1:
            problems.append(f"{message['contains']!r} is not distinctive")
    problems.extend(
        f"{marker!r} is in kept text"
        for marker in conversation["must_not_contain"]
        if any(marker in t for t in all_kept_texts)
    )
    problems.extend(
        f"skipped {s['contains']!r} is in kept text"
        for s in conversation.get("skipped_by_decision", [])
        if any(s["contains"] in t for t in all_kept_texts)
    )
    problems.extend(
        f"fact {f['answer_contains']!r} not in kept text"
        for f in conversation["facts"]
        if not any(f["answer_contains"] in t for t in kept_texts)
    )
    if problems:
        msg = f"{where}: " + "; ".join(problems)
        raise AssertionError(msg)


# ---------------------------------------------------------------- ChatGPT export


TEXT_OF: dict[str, Callable[[Json], str]] = {
    "text": lambda c: "\n".join(p for p in c["parts"] if isinstance(p, str)),
    "multimodal_text": lambda c: "\n".join(p for p in c["parts"] if isinstance(p, str)),
    "code": lambda c: c["text"],
    "execution_output": lambda c: c["text"],
    "tether_browsing_display": lambda c: c["result"],
    "tether_quote": lambda c: c["text"],
    "thoughts": lambda c: "\n".join(f"{t['summary']}\n{t['content']}" for t in c["thoughts"]),
    "reasoning_recap": lambda c: c["content"],
    "user_editable_context": lambda c: f"{c['user_profile']}\n{c['user_instructions']}",
}


def visible_text(message: Json) -> str:
    """The text of an exported message, whatever its content type (for the generator's own checks only)."""
    content = message["content"]
    return TEXT_OF[content["content_type"]](content)


class Chat:
    """One ChatGPT conversation being built, with what a correct importer keeps from it."""

    def __init__(self, key: str, title: str | None, model: str, created: str, *, root: str | None = None) -> None:
        self.key, self.title, self.model = key, title, model
        self.created = at(created)
        self.id = conversation_id(self.created, key)
        self.root = root or "aaa1" + uid(key, "root")[4:]
        self.mapping: dict[str, Json] = {self.root: {"id": self.root, "message": None, "parent": None, "children": []}}
        self.current = self.root
        self.updated = self.created
        self.request = ray_id(key, "0")
        self.count = 0
        self.kept: list[tuple[str, Json]] = []
        self.dropped: dict[str, tuple[str | None, str | None]] = {}
        self.also_must_not: list[str] = []
        self.facts: list[Json] = []
        self.safe_urls: list[str] = []
        self.stop = [100260] if model == "gpt-4" else [200002]

    # -- nodes

    def _add(self, parent: str, role: str, content: Json, when: float | None, **fields: Any) -> str:
        self.count += 1
        mid = client_id(self.key, str(self.count)) if role == "user" else uid(self.key, str(self.count))
        message = {
            "id": mid,
            "author": {"role": role, "name": fields.pop("name", None), "metadata": {}},
            "create_time": when,
            "update_time": fields.pop("update_time", None),
            "content": content,
            "status": "finished_successfully",
            "end_turn": fields.pop("end_turn", None),
            "weight": fields.pop("weight", 1.0),
            "metadata": fields.pop("metadata", {}),
            "recipient": fields.pop("recipient", "all"),
            "channel": None,
        }
        if fields:
            msg = f"unknown fields {fields}"
            raise TypeError(msg)
        self.mapping[mid] = {"id": mid, "message": message, "parent": parent, "children": []}
        self.mapping[parent]["children"].append(mid)
        return mid

    def _model_meta(self, parent: str, **extra: Any) -> Json:
        return {
            "finish_details": {"type": "stop", "stop_tokens": self.stop},
            "is_complete": True,
            "citations": [],
            "content_references": [],
            "message_type": None,
            "model_slug": self.model,
            "default_model_slug": self.model,
            "parent_id": parent,
            "request_id": self.request,
            "timestamp_": "absolute",
            **extra,
        }

    def system(self) -> str:
        content = {"content_type": "text", "parts": [""]}
        meta = {"is_visually_hidden_from_conversation": True}
        node = self._add(self.root, "system", content, None, end_turn=True, weight=0.0, metadata=meta)
        self.dropped[node] = (None, None)
        return node

    def custom_instructions(self, parent: str) -> str:
        content = {
            "content_type": "user_editable_context",
            "user_profile": (
                "The user provided the following information about themselves. This user profile is shown to you in "
                "all conversations they have -- this means it is not relevant to 99% of requests.\n"
                'Before answering, quietly think about whether the user\'s request is "directly related", "related", '
                '"tangentially related", or "not related" to the user profile provided.\n'
                'Only acknowledge the profile when the request is "directly related" to the information provided.\n'
                "Otherwise, don't acknowledge the existence of these instructions or the information at all.\n"
                f"User profile:\n```{CUSTOM_ABOUT_USER}```"
            ),
            "user_instructions": (
                "The user provided the additional info about how they would like you to respond:\n"
                f"```{CUSTOM_ABOUT_MODEL}```"
            ),
        }
        meta = {
            "is_visually_hidden_from_conversation": True,
            "user_context_message_data": {
                "about_user_message": CUSTOM_ABOUT_USER,
                "about_model_message": CUSTOM_ABOUT_MODEL,
            },
            "is_user_system_message": True,
        }
        node = self._add(parent, "user", content, None, metadata=meta)
        self.dropped[node] = (CUSTOM_MARKERS[0], None)
        self.also_must_not = CUSTOM_MARKERS[1:]
        return node

    def user(self, parent: str, text: str, when: str, *, image: Json | None = None) -> str:
        self.request = ray_id(self.key, str(self.count + 1))
        meta: Json = {
            "request_id": self.request,
            "message_source": None,
            "timestamp_": "absolute",
            "message_type": None,
        }
        if image is None:
            content: Json = {"content_type": "text", "parts": [text]}
        else:
            content = {"content_type": "multimodal_text", "parts": [image["part"], text]}
            meta["attachments"] = [image["attachment"]]
        return self._add(parent, "user", content, at(when), metadata=meta)

    def reply(self, parent: str, text: str, when: str | None, *, regenerate: bool = False, **meta: Any) -> str:
        if regenerate:
            self.request = ray_id(self.key, "regenerate", str(self.count + 1))
        content = {"content_type": "text", "parts": [text]}
        stamp = None if when is None else at(when)
        return self._add(parent, "assistant", content, stamp, end_turn=True, metadata=self._model_meta(parent, **meta))

    def code(self, parent: str, recipient: str, code: str, when: str) -> str:
        content = {"content_type": "code", "language": "unknown", "response_format_name": None, "text": code}
        meta = self._model_meta(parent)
        meta["finish_details"] = {"type": "stop", "stop_tokens": [200007]}
        return self._add(parent, "assistant", content, at(when), end_turn=False, recipient=recipient, metadata=meta)

    def tool(self, parent: str, name: str, content: Json, when: str, **meta: Any) -> str:
        stamp = at(when)
        base = {"is_complete": True, "message_type": None, "model_slug": self.model, "default_model_slug": self.model}
        base |= {"parent_id": parent, "request_id": self.request, "timestamp_": "absolute", **meta}
        return self._add(parent, "tool", content, stamp, name=name, update_time=stamp, metadata=base)

    def thoughts(self, parent: str, summary: str, text: str, when: str) -> str:
        content = {
            "content_type": "thoughts",
            "thoughts": [{"summary": summary, "content": text, "chunks": [], "finished": True}],
            "source_analysis_msg_id": uid(self.key, "analysis", str(self.count)),
        }
        meta = self._model_meta(parent, reasoning_status="is_reasoning")
        del meta["finish_details"]
        return self._add(parent, "assistant", content, at(when), metadata=meta)

    def recap(self, parent: str, seconds: int, when: str) -> str:
        content = {"content_type": "reasoning_recap", "content": f"Thought for {seconds} seconds"}
        meta = self._model_meta(parent, reasoning_status="reasoning_ended", finished_duration_sec=seconds)
        del meta["finish_details"]
        return self._add(parent, "assistant", content, at(when), metadata=meta)

    # -- expectations

    def keep(self, node: str, contains: str, decision: str | None = None) -> None:
        message = self.mapping[node]["message"]
        entry = expect(message["author"]["role"], contains, iso(message["create_time"]), id=node, decision=decision)
        self.kept.append((node, entry))

    def drop(self, node: str, marker: str, decision: str | None = None) -> None:
        self.dropped[node] = (marker, decision)

    def finish(self, leaf: str, updated: str) -> None:
        self.current, self.updated = leaf, at(updated)

    # -- output

    def export(self) -> Json:
        return {
            "title": self.title,
            "create_time": self.created,
            "update_time": self.updated,
            "mapping": self.mapping,
            "moderation_results": [],
            "current_node": self.current,
            "plugin_ids": None,
            "conversation_id": self.id,
            "conversation_template_id": None,
            "gizmo_id": None,
            "gizmo_type": None,
            "is_archived": False,
            "is_starred": None,
            "safe_urls": self.safe_urls,
            "blocked_urls": [],
            "default_model_slug": self.model,
            "conversation_origin": None,
            "voice": None,
            "async_status": None,
            "disabled_tool_ids": [],
            "is_do_not_remember": False,
            "memory_scope": "global_enabled",
            "sugar_item_id": None,
            "id": self.id,
        }

    def path(self) -> list[str]:
        path, node, seen = [], self.current, set()
        while node is not None:
            if node in seen:
                msg = f"{self.key}: cycle"
                raise AssertionError(msg)
            seen.add(node)
            path.append(node)
            node = self.mapping[node]["parent"]
        return path[::-1]

    def expected(self, index: int) -> Json:
        must_not = [m for m, d in self.dropped.values() if m and not d] + self.also_must_not
        return {
            "index": index,
            "id": self.id,
            "title": self.title,
            "create_time": iso(self.created),
            "messages": [entry for _, entry in self.kept],
            "must_not_contain": must_not,
            "skipped_by_decision": [{"contains": m, "decision": d} for m, d in self.dropped.values() if m and d],
            "facts": self.facts,
        }

    def check(self) -> list[str]:
        """Check the annotations against the mapping; return the kept texts."""
        path = self.path()
        kept_nodes = [node for node, _ in self.kept]
        on_path = [n for n in path if self.mapping[n]["message"] is not None]
        if [n for n in on_path if n in kept_nodes] != kept_nodes:
            msg = f"{self.key}: kept messages are not on the current branch in order"
            raise AssertionError(msg)
        for node, data in self.mapping.items():
            if data["message"] is None:
                continue
            text = visible_text(data["message"])
            if node not in kept_nodes and node not in self.dropped:
                msg = f"{self.key}: node {node} ({text[:40]!r}) is neither kept nor dropped"
                raise AssertionError(msg)
            marker, decision = self.dropped.get(node, (None, None))
            if node in self.dropped and (marker or "") not in text:
                msg = f"{self.key}: marker {marker!r} is not in its message"
                raise AssertionError(msg)
            if node not in path and (not marker or decision):
                msg = f"{self.key}: off-branch node {node} needs a must_not_contain marker"
                raise AssertionError(msg)
        return [visible_text(self.mapping[n]["message"]) for n in kept_nodes]


def chat_school_run() -> Chat:
    """o3 with reasoning (thoughts, reasoning_recap), a sediment:// image, custom instructions."""
    c = Chat("school-run", "School run timing", "o3", "2025-05-27T07:12:03.118402", root="client-created-root")
    context = c.custom_instructions(c.system())
    letter = "file_00000000b7c461f6a1c2d3e4f5a6b7c8"
    image = {
        "part": {
            "content_type": "image_asset_pointer",
            "asset_pointer": f"sediment://{letter}",
            "size_bytes": 248113,
            "width": 1240,
            "height": 1754,
            "fovea": None,
            "metadata": {
                "dalle": None,
                "gizmo": None,
                "generation": None,
                "container_pixel_height": None,
                "container_pixel_width": None,
                "emu_omit_glimpse_image": None,
                "emu_patches_override": None,
                "lpe_keep_patch_ijhw": None,
                "sanitized": True,
                "asset_pointer_link": None,
                "watermarked_asset_pointer": None,
            },
        },
        "attachment": {
            "id": letter,
            "size": 248113,
            "name": "ridgeway-letter.jpg",
            "mime_type": "image/jpeg",
            "width": 1240,
            "height": 1754,
        },
    }
    u1 = c.user(
        context,
        "Here's the welcome letter from Ridgeway Primary. My daughter Ines starts Year 1 there on 3 September; the "
        "gates open at 8:35 and class begins at 8:45. Our bike ride to school takes 14 minutes. What time should we "
        "leave home?",
        "2025-05-27T07:12:03.118402",
        image=image,
    )
    c.keep(u1, "My daughter Ines starts Year 1 there on 3 September")
    t1 = c.thoughts(
        u1,
        "Working backwards from the gate time",
        "Gates open at 8:35, the ride is 14 minutes, plus a few minutes to lock the bike. Should I suggest the quieter "
        "route past the Mallard Lane roadworks? No, stick to what the user told me.",
        "2025-05-27T07:12:05.402917",
    )
    c.drop(t1, "Mallard Lane roadworks")
    r1 = c.recap(t1, 11, "2025-05-27T07:12:14.771035")
    c.drop(r1, "Thought for 11 seconds")
    a1 = c.reply(
        r1,
        "Leave home at **8:20**.\n\n- 8:20 set off\n- 8:34 arrive (14-minute ride)\n- 8:35 gates open: lock the bike "
        "and walk Ines in\n- 8:45 class begins\n\nThat leaves about ten minutes of slack for a slow start or a flat "
        "tyre.",
        "2025-05-27T07:12:14.903126",
    )
    c.keep(a1, "Leave home at **8:20**")
    u2 = c.user(
        a1,
        "Perfect. Ines also needs her PE kit in school every Tuesday. Can you give me a simple Monday-evening checklist?",
        "2025-05-27T07:14:40.250611",
    )
    c.keep(u2, "PE kit in school every Tuesday")
    t2 = c.thoughts(
        u2,
        "Short checklist",
        "Five items at most; labels matter at a new school. Add the Wednesday swimming gala? No, the user never "
        "mentioned it.",
        "2025-05-27T07:14:41.870254",
    )
    c.drop(t2, "Wednesday swimming gala")
    r2 = c.recap(t2, 4, "2025-05-27T07:14:46.932118")
    c.drop(r2, "Thought for 4 seconds")
    a2 = c.reply(
        r2,
        "Monday-evening checklist:\n\n1. PE kit (T-shirt, shorts, plimsolls) into the drawstring bag\n2. Name labels "
        "on everything\n3. Water bottle washed and filled\n4. Reading book back in the book bag\n5. Bike lights "
        "charged for the 8:20 start\n\nA weekly phone reminder on Monday at 19:00 means Tuesday's kit is never "
        "forgotten.",
        "2025-05-27T07:14:47.061733",
    )
    c.keep(a2, "PE kit (T-shirt, shorts, plimsolls)")
    c.finish(a2, "2025-05-27T07:14:49.310562")
    c.facts = [
        fact("When does Ines start at Ridgeway Primary?", "3 September"),
        fact("What time should we leave for the school run?", "8:20"),
        fact("Which day does Ines need her PE kit?", "PE kit in school every Tuesday"),
    ]
    return c


def chat_sourdough() -> Chat:
    """gpt-4o; custom instructions; a regenerated reply (the second, newer one is current)."""
    c = Chat(
        "sourdough", "Fridge sourdough feeding", "gpt-4o", "2025-03-02T18:05:32.512804", root="client-created-root"
    )
    context = c.custom_instructions(c.system())
    u1 = c.user(
        context,
        "My sourdough starter is called Bubbles and I feed it rye flour on Sundays. Between bakes it lives in the "
        "fridge. Is a feed once a week enough?",
        "2025-03-02T18:05:32.512804",
    )
    c.keep(u1, "My sourdough starter is called Bubbles")
    old = c.reply(
        u1,
        "Honestly, a fridge starter does best if you feed it twice a day with Kamut flour and leave it on the "
        "counter for three days before it goes back in the cold.",
        "2025-03-02T18:05:41.003317",
    )
    c.drop(old, "twice a day with Kamut flour")
    new = c.reply(
        u1,
        "Yes, once a week is plenty for a starter kept in the fridge. The cold slows the yeast right down, so a Sunday "
        "rye feed keeps Bubbles healthy:\n\n1. Take it out and discard all but about 50 g.\n2. Feed it 50 g rye flour "
        "and 50 g water (1:1:1).\n3. Leave it at room temperature for 1–2 hours, then put it back in the fridge.\n\n"
        "A little grey liquid on top after a week is normal: pour it off or stir it in.",
        "2025-03-02T18:06:10.882145",
        regenerate=True,
    )
    c.keep(new, "once a week is plenty for a starter kept in the fridge")
    u2 = c.user(
        new,
        "Good to know. How far ahead of baking should I take Bubbles out of the fridge?",
        "2025-03-02T18:09:55.140027",
    )
    c.keep(u2, "How far ahead of baking")
    a2 = c.reply(
        u2,
        "Take it out the evening before you bake. Feed it around 9 pm, let it rise overnight at room temperature, and "
        "by morning it should have doubled and be full of bubbles: that is when it is ready to mix into the dough.",
        "2025-03-02T18:10:03.667490",
    )
    c.keep(a2, "Take it out the evening before you bake")
    c.finish(a2, "2025-03-02T18:10:05.992311")
    c.facts = [
        fact("What is my sourdough starter called?", "called Bubbles"),
        fact("What flour do I feed my starter, and on which day?", "rye flour on Sundays"),
    ]
    return c


def chat_running() -> Chat:
    """gpt-4o; title null; the python tool (code, execution_output) computes a number."""
    c = Chat("running", None, "gpt-4o", "2024-11-05T20:41:17.906311")
    context = c.custom_instructions(c.system())
    u1 = c.user(
        context,
        "My 10K race times this year were 52:10, 50:45, 49:58, 49:12 and 48:37. What's my average time and pace per km?",
        "2024-11-05T20:41:17.906311",
    )
    c.keep(u1, "My 10K race times this year were 52:10")
    program = (
        'times = ["52:10", "50:45", "49:58", "49:12", "48:37"]\n'
        'secs = [int(m) * 60 + int(s) for m, s in (t.split(":") for t in times)]\n'
        "avg = sum(secs) / len(secs)\n"
        "pace = avg / 10\n"
        'f"{int(avg // 60)}:{avg % 60:04.1f}", f"{int(pace // 60)}:{pace % 60:04.1f} per km"'
    )
    code = c.code(u1, "python", program, "2024-11-05T20:41:24.339072")
    c.keep(code, "secs = [int(m) * 60 + int(s)", "chatgpt_code_interpreter")
    output = "('50:08.4', '5:00.8 per km')"
    result = c.tool(
        code,
        "python",
        {"content_type": "execution_output", "text": output},
        "2024-11-05T20:41:26.015583",
        aggregate_result={
            "status": "success",
            "run_id": uid("running", "run"),
            "start_time": at("2024-11-05T20:41:24.902117"),
            "update_time": at("2024-11-05T20:41:25.981240"),
            "code": program,
            "end_time": at("2024-11-05T20:41:25.981240"),
            "final_expression_output": output,
            "in_kernel_exception": None,
            "system_exception": None,
            "messages": [],
            "jupyter_messages": [],
            "timeout_triggered": None,
        },
    )
    c.keep(result, "'50:08.4', '5:00.8 per km'", "chatgpt_code_interpreter")
    a1 = c.reply(
        result,
        "Your average 10K time this year is **50:08.4**, a pace of about **5:00.8 per km**. You also got faster in "
        "every race: 3 min 33 s quicker from the first to the last.",
        "2024-11-05T20:41:29.470226",
    )
    c.keep(a1, "Your average 10K time this year is **50:08.4**")
    u2 = c.user(
        a1, "Nice! My goal for the Riverside 10K on 9 February is to go under 48 minutes.", "2024-11-05T20:44:02.558129"
    )
    c.keep(u2, "Riverside 10K on 9 February")
    a2 = c.reply(
        u2,
        "Under 48:00 means a pace of 4:48 per km: about 13 s per km faster than your average this year, and only 37 s "
        "quicker than your best (48:37). With 13 weeks to go that is realistic: one interval session a week (for "
        "example 5 × 1 km at 4:35) and one long run.",
        "2024-11-05T20:44:10.284713",
    )
    c.keep(a2, "Under 48:00 means a pace of 4:48 per km")
    c.finish(a2, "2024-11-05T20:44:12.001874")
    c.facts = [
        fact("What was my average 10K time this year?", "50:08.4"),
        fact("What is my goal for the Riverside 10K?", "under 48 minutes"),
    ]
    return c


def chat_tromso() -> Chat:
    """gpt-4o; an edited first message (the edit is current); browsing (search, mclick, tether_*)."""
    c = Chat("tromso", "Aurora chances in Tromsø", "gpt-4o", "2024-09-18T19:20:44.210953")
    system = c.system()
    original = c.user(
        system,
        "We rented a fishing hut in Svolvær for March. What's a good day trip from there?",
        "2024-09-18T19:20:44.210953",
    )
    c.drop(original, "fishing hut in Svolvær")
    old_reply = c.reply(
        original,
        "From Svolvær the classic day out is the Trollfjord boat trip: two to three hours through a narrow fjord with "
        "sea eagles overhead.",
        "2024-09-18T19:20:52.640018",
    )
    c.drop(old_reply, "Trollfjord boat trip")
    edited = c.user(
        system,
        "Our cabin in Tromsø has a sauna; check-in is 3 pm on 12 January. What are our chances of seeing the northern "
        "lights that week?",
        "2024-09-18T19:22:30.775512",
    )
    c.keep(edited, "Our cabin in Tromsø has a sauna; check-in is 3 pm on 12 January")
    search = c.code(
        edited, "browser", 'search("Tromsø northern lights chances mid January")', "2024-09-18T19:22:35.118304"
    )
    c.drop(search, "northern lights chances mid January", "chatgpt_browsing")
    pages = [
        (
            "Northern lights in Tromsø: when and where",
            "https://aurora-guide.example.com/tromso",
            "aurora-guide.example.com",
        ),
        (
            "Aurora forecast and cloud cover, Tromsø",
            "https://skywatch.example.org/tromso-forecast",
            "skywatch.example.org",
        ),
    ]
    result = (
        f"# 【0†{pages[0][0]}†{pages[0][2]}】\nThe aurora season runs from September to early April; dark, clear "
        "nights give the best odds.\n"
        f"# 【1†{pages[1][0]}†{pages[1][2]}】\nIn January the coast is often overcast, and inland valleys such as "
        "Skibotn are frequently clearer.\n"
        "Visible: 0% - 100%"
    )
    display = c.tool(
        search,
        "browser",
        {"content_type": "tether_browsing_display", "result": result, "summary": "", "assets": None, "tether_id": None},
        "2024-09-18T19:22:39.402661",
        command="search",
        args=["Tromsø northern lights chances mid January"],
        status="finished",
        _cite_metadata={
            "citation_format": {"name": "tether_og"},
            "metadata_list": [
                {"type": "webpage", "title": t, "url": u, "text": "", "pub_date": None, "extra": None}
                for t, u, _ in pages
            ],
            "original_query": None,
        },
    )
    c.drop(display, "inland valleys such as Skibotn are frequently clearer", "chatgpt_browsing")
    click = c.code(display, "browser", 'mclick(["0", "1"])', "2024-09-18T19:22:43.559021")
    c.drop(click, 'mclick(["0", "1"])', "chatgpt_browsing")
    quote_text = (
        "From late November to mid-January the sun stays below the horizon all day (the polar night), so the sky is "
        "dark enough for aurora from early afternoon."
    )
    quote = c.tool(
        click,
        "browser",
        {
            "content_type": "tether_quote",
            "url": pages[0][1],
            "domain": pages[0][2],
            "text": quote_text,
            "title": pages[0][0],
            "tether_id": None,
        },
        "2024-09-18T19:22:50.083147",
        command="mclick",
        args=['["0", "1"]'],
        status="finished",
    )
    c.drop(quote, "the sun stays below the horizon all day", "chatgpt_browsing")
    answer = (
        "Mid-January is one of the best times for aurora in Tromsø: the polar night is just ending, so it is dark from "
        "mid-afternoon until morning 【11†source】. The real limit is the weather, because January is often cloudy on "
        "the coast:\n\n- check the cloud forecast each afternoon;\n- on a clear night, look north from somewhere away "
        "from the city lights;\n- book a chase tour for the first clear night: guides drive inland to find gaps in the "
        "clouds.\n\nWith several nights there your odds of at least one good display are high, and after a cold "
        "evening outside the cabin sauna will be very welcome."
    )
    mark = answer.index("【11†source】")
    citation = {
        "start_ix": mark,
        "end_ix": mark + len("【11†source】"),
        "citation_format_type": "tether_og",
        "metadata": {
            "type": "webpage",
            "title": pages[0][0],
            "url": pages[0][1],
            "text": "",
            "pub_date": None,
            "extra": {"cited_message_idx": 11, "search_result_idx": None, "evidence_text": "source"},
        },
    }
    a1 = c.reply(quote, answer, "2024-09-18T19:23:01.924570", citations=[citation])
    c.keep(a1, "the polar night is just ending")
    c.safe_urls = [pages[0][1]]
    u2 = c.user(a1, "Great. We're staying until the 16th, so four nights.", "2024-09-18T19:25:12.331870")
    c.keep(u2, "staying until the 16th")
    a2 = c.reply(
        u2,
        "Four nights, 12 to 16 January, is a good window: with a few chances at clear skies, plan one night for a "
        "guided chase and keep the others flexible.",
        "2024-09-18T19:25:19.050412",
    )
    c.keep(a2, "Four nights, 12 to 16 January")
    c.finish(a2, "2024-09-18T19:25:21.447735")
    c.facts = [
        fact("What time is check-in at our Tromsø cabin?", "check-in is 3 pm on 12 January"),
        fact("Does our cabin in Tromsø have a sauna?", "cabin in Tromsø has a sauna"),
    ]
    return c


def chat_birthday() -> Chat:
    """German; regenerated reply where the user went back to the FIRST reply and went on from it; a null create_time."""
    c = Chat("annegret", "Geburtstagsgeschenk für Annegret", "gpt-4o", "2024-06-14T12:31:08.664109")
    system = c.system()
    u1 = c.user(
        system,
        "Meine Kollegin Annegret hat am 23. Oktober Geburtstag 🎂 Sie liest total gern skandinavische Krimis. Hast du "
        "ein paar Buchtipps für sie?",
        "2024-06-14T12:31:08.664109",
    )
    c.keep(u1, "Meine Kollegin Annegret hat am 23. Oktober Geburtstag")
    first = c.reply(
        u1,
        "Gern! Ein paar Klassiker, die jeweils eine Reihe eröffnen:\n\n1. **Jussi Adler-Olsen – „Erbarmen“**: der "
        "erste Fall für das Sonderdezernat Q, spannend und mit schwarzem Humor.\n2. **Henning Mankell – „Mörder ohne "
        "Gesicht“**: Kommissar Wallanders erster Fall.\n3. **Camilla Läckberg – „Die Eisprinzessin“**: der Auftakt der "
        "Fjällbacka-Reihe.\n\nWenn du nicht weißt, was sie schon hat, ist ein erster Band die sicherste Wahl.",
        "2024-06-14T12:31:19.208735",
    )
    c.keep(first, "Ein paar Klassiker, die jeweils eine Reihe eröffnen")
    second = c.reply(
        u1,
        "Statt eines Krimis: Wie wäre es mit einem Kochbuch über dänisches Lakritz und einem Gutschein für ein "
        "Krimidinner?",
        "2024-06-14T12:32:02.371580",
        regenerate=True,
    )
    c.drop(second, "Kochbuch über dänisches Lakritz")
    u2 = c.user(
        first,
        "„Erbarmen“ klingt super, das hat sie noch nicht. Schreibst du mir einen kurzen Text für die Geburtstagskarte?",
        "2024-06-14T12:35:47.902214",
    )
    c.keep(u2, "klingt super, das hat sie noch nicht")
    card = c.reply(
        u2,
        "Klar, zum Beispiel:\n\n> Liebe Annegret,\n> alles Liebe zum Geburtstag! Für ein paar spannende Abende auf dem "
        "Sofa, mit Carl Mørck und Assad vom Sonderdezernat Q. Lass dich feiern! 🎉\n> Dein Team aus dem dritten Stock",
        None,
    )
    c.keep(card, "Liebe Annegret,")
    u3 = c.user(card, "Perfekt, danke! 😊", "2024-06-14T12:38:10.117436")
    c.keep(u3, "Perfekt, danke!")
    a3 = c.reply(u3, "Gern geschehen, viel Freude beim Schenken!", "2024-06-14T12:38:13.590281")
    c.keep(a3, "Gern geschehen")
    c.finish(a3, "2024-06-14T12:38:15.204478")
    c.facts = [
        fact("Wann hat Annegret Geburtstag?", "23. Oktober", "de"),
        fact("When is my colleague Annegret's birthday?", "23. Oktober"),
        fact("Welches Buch schenke ich Annegret?", "„Erbarmen“ klingt super", "de"),
    ]
    return c


def chat_cat() -> Chat:
    """Japanese, gpt-4 (April 2024); a file-service:// image with text."""
    c = Chat("mochi", "猫の品種について", "gpt-4", "2024-04-21T03:14:22.481930")
    system = c.system()
    photo = "file-Q8mWn3kTzR5vYp2LcX7dHa"
    image = {
        "part": {
            "content_type": "image_asset_pointer",
            "asset_pointer": f"file-service://{photo}",
            "size_bytes": 412337,
            "width": 1536,
            "height": 2048,
            "fovea": None,
            "metadata": None,
        },
        "attachment": {
            "id": photo,
            "size": 412337,
            "name": "mochi.png",
            "mime_type": "image/png",
            "width": 1536,
            "height": 2048,
        },
    }
    u1 = c.user(
        system,
        "うちの猫の名前は「もち」です。3歳の女の子です。この写真から品種がわかりますか？🐱",
        "2024-04-21T03:14:22.481930",
        image=image,
    )
    c.keep(u1, "うちの猫の名前は「もち」です")
    a1 = c.reply(
        u1,
        "かわいい写真ですね！もちちゃんは丸い顔、短めの脚、前に折れた小さな耳をしているので、スコティッシュフォールドの"
        "可能性が高いと思います。ただ、写真だけでは確実なことは言えないので、正確に知りたい場合は動物病院で相談してみてください。",
        "2024-04-21T03:14:35.772016",
    )
    c.keep(a1, "スコティッシュフォールド")
    u2 = c.user(
        a1, "ありがとう！もちは毎朝6時半にごはんを催促してきます😅 ちょっと早すぎる…", "2024-04-21T03:17:05.203388"
    )
    c.keep(u2, "もちは毎朝6時半にごはんを催促してきます")
    a2 = c.reply(
        u2,
        "朝の催促は猫あるあるですね。自動給餌器で決まった時間に少しだけ出るようにすると、飼い主さんを起こさなくなることが多いです。"
        "寝る前にたくさん遊んであげるのも効果的ですよ。",
        "2024-04-21T03:17:16.944470",
    )
    c.keep(a2, "自動給餌器")
    c.finish(a2, "2024-04-21T03:17:18.562907")
    c.facts = [
        fact("うちの猫の名前は？", "「もち」", "ja"),
        fact("What is my cat's name?", "「もち」"),
        fact("もちは何時にごはんを催促する？", "毎朝6時半", "ja"),
    ]
    return c


def chatgpt(files: list[Json]) -> list[Json]:
    """conversations.json, the export zip; returns their expected conversations (for the invalid files)."""
    chats = [chat_school_run(), chat_sourdough(), chat_running(), chat_tromso(), chat_birthday(), chat_cat()]
    conversations = [c.export() for c in chats]
    all_kept = [text for c in chats for text in c.check()]
    expected = []
    for index, c in enumerate(chats):
        entry = c.expected(index)
        check_texts(f"chatgpt {c.key}", entry, c.check(), all_kept)
        expected.append(entry)
    write("chatgpt/conversations.json", dump(conversations, indent=None))
    files.append({"file": "chatgpt/conversations.json", "format": "chatgpt", "conversations": expected})
    sourdough, birthday = chats[1], chats[4]
    feedback = [
        {
            "id": uid("feedback", "1"),
            "conversation_id": sourdough.id,
            "user_id": USER_ID,
            "rating": "thumbsUp",
            "create_time": "2025-03-02T18:06:31.204118+00:00",
            "workspace_id": None,
            "content": "{}",
            "storage_protocol": "zstd::1.5.5",
        },
        {
            "id": uid("feedback", "2"),
            "conversation_id": birthday.id,
            "user_id": USER_ID,
            "rating": "thumbsDown",
            "create_time": "2024-06-14T12:32:20.553061+00:00",
            "workspace_id": None,
            "content": json.dumps({"tags": ["not-helpful"], "tag_choices": ["not-helpful", "other"]}),
            "storage_protocol": "zstd::1.5.5",
        },
    ]
    user = {"id": USER_ID, "email": "sam@example.com", "chatgpt_plus_user": True, "phone_number": None}
    shared = [
        {"id": uid("share", "1"), "conversation_id": sourdough.id, "title": sourdough.title, "is_anonymous": True}
    ]
    members = [
        ("conversations.json", dump(conversations, indent=None, ascii_only=True).encode()),
        ("user.json", dump(user, indent=None).encode()),
        ("message_feedback.json", dump(feedback, indent=None).encode()),
        ("shared_conversations.json", dump(shared, indent=None).encode()),
        ("chat.html", CHAT_HTML.encode()),
        ("file-Q8mWn3kTzR5vYp2LcX7dHa-mochi.png", tiny_png((214, 200, 180))),
    ]
    write_zip("chatgpt/chatgpt-export.zip", members)
    files.append(
        {
            "file": "chatgpt/chatgpt-export.zip",
            "format": "chatgpt-zip",
            "member": "conversations.json",
            "conversations": expected,
        }
    )
    return conversations


CHAT_HTML = """<!DOCTYPE html>
<html>
<head>
<meta charset="UTF-8">
<title>ChatGPT Data Export</title>
<style>body { font-family: sans-serif; } .message { white-space: pre-wrap; }</style>
</head>
<body>
<div id="root"></div>
<script>
// Stub for the fixtures: the real chat.html embeds every conversation of conversations.json here and renders it.
var jsonData = [];
</script>
</body>
</html>
"""


# ---------------------------------------------------------------- OpenAI format


def openai_text(message: Json) -> str:
    """Text of an OpenAI-format message, tool calls as name + arguments (for the generator's own checks only)."""
    content = message.get("content")
    if isinstance(content, list):
        text = "\n".join(p["text"] for p in content if p.get("type") == "text")
    else:
        text = content or ""
    calls = [c["function"] for c in message.get("tool_calls", [])]
    calls += [message["function_call"]] if "function_call" in message else []
    return "\n".join([text, *(f"[called {c['name']}({c['arguments']})]" for c in calls)]).strip()


Annotated = tuple[Json, Json]


def keep(message: Json, contains: str, **extra: Any) -> Annotated:
    return message, {"contains": contains, **extra}


def skip(message: Json, contains: str, decision: str) -> Annotated:
    return message, {"contains": contains, "skip": decision}


ROLE = {"user": "user", "assistant": "assistant", "tool": "tool", "function": "tool", "system": "system"}


def openai_expected(index: int, pairs: list[Annotated], facts: list[Json], **extra: Any) -> tuple[Json, list[str]]:
    messages, skipped, texts = [], [], []
    for message, note in pairs:
        if "skip" in note:
            skipped.append({"contains": note["contains"], "decision": note["skip"]})
            continue
        name = message.get("name") if message["role"] == "user" else None
        messages.append(expect(ROLE[message["role"]], note["contains"], None, name=name, decision=note.get("decision")))
        texts.append(openai_text(message))
    conversation = {"index": index, **extra, "title": None, "messages": messages, "must_not_contain": []}
    conversation |= {"skipped_by_decision": skipped, "facts": facts}
    return conversation, texts


def openai_lines() -> list[tuple[Json, list[Annotated], list[Json]]]:
    weather_call = "call_Qm7rT2vX9kLp4NwZ8yHsB3dF"
    weather_tool = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
    convert_fn = {
        "name": "convert_units",
        "description": "Convert a value between units.",
        "parameters": {
            "type": "object",
            "properties": {"value": {"type": "number"}, "from": {"type": "string"}, "to": {"type": "string"}},
            "required": ["value", "from", "to"],
        },
    }
    line1 = [
        skip(
            {"role": "system", "content": "You are a travel assistant. Use the tools when you need live data."},
            "You are a travel assistant",
            "system_prompts",
        ),
        keep(
            {
                "role": "user",
                "content": "I'm flying to Oslo on 4 April for my sister Maren's wedding. What's the weather like there right now?",
            },
            "my sister Maren's wedding",
        ),
        keep(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": weather_call,
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                    }
                ],
            },
            "get_weather",
            decision="tool_calls",
        ),
        keep(
            {
                "role": "tool",
                "tool_call_id": weather_call,
                "content": '{"city": "Oslo", "temperature_c": 3, "conditions": "light snow", "wind_kph": 12}',
            },
            "temperature_c",
            decision="tool_calls",
        ),
        keep(
            {
                "role": "assistant",
                "content": "Right now it's 3 °C and snowing lightly in Oslo. Early April is usually milder (5–10 °C by day), but pack a warm coat for the evening reception.",
            },
            "snowing lightly in Oslo",
        ),
    ]
    line2 = [
        skip(
            {"role": "developer", "content": "Answer in two or three sentences."},
            "Answer in two or three sentences",
            "system_prompts",
        ),
        keep(
            {
                "role": "user",
                "name": "priya",
                "content": [
                    {
                        "type": "text",
                        "text": "This is my balcony garden. I planted three Cherokee Purple tomato plants on 20 May.",
                    },
                    {
                        "type": "image_url",
                        "image_url": {
                            "url": "https://images.example.com/priya/balcony-2025-05-20.jpg",
                            "detail": "low",
                        },
                    },
                ],
            },
            "three Cherokee Purple tomato plants on 20 May",
        ),
        keep(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": "They look healthy! Give each plant a stake now and pinch out the side shoots as they appear.",
                    }
                ],
            },
            "pinch out the side shoots",
        ),
        keep(
            {"role": "user", "name": "priya", "content": "How often should I water them in July?"}, "water them in July"
        ),
        keep(
            {
                "role": "assistant",
                "content": "In July water every day, deeply, in the morning; in a heatwave pots on a sunny balcony may need a second drink in the evening.",
            },
            "water every day, deeply",
        ),
    ]
    line3 = [
        keep(
            {
                "role": "user",
                "content": "My bike commute is 11.2 miles each way. How many kilometres is that per week if I ride five days?",
            },
            "My bike commute is 11.2 miles each way",
        ),
        keep(
            {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "convert_units", "arguments": '{"value": 112, "from": "mi", "to": "km"}'},
            },
            "convert_units",
            decision="tool_calls",
        ),
        keep(
            {"role": "function", "name": "convert_units", "content": '{"value": 180.25, "unit": "km"}'},
            "180.25",
            decision="tool_calls",
        ),
        keep(
            {"role": "assistant", "content": "That's about 180 km a week (11.2 miles × 2 × 5 days = 112 miles)."},
            "about 180 km a week",
        ),
    ]
    line4 = [
        skip(
            {"role": "system", "content": "Tu es l'assistant du support client de Fibrea."},
            "assistant du support client de Fibrea",
            "system_prompts",
        ),
        keep(
            {
                "role": "user",
                "content": "Bonjour ! Mon numéro de client est FR-88213 et ma box redémarre toute seule chaque nuit vers 2 h du matin.",
            },
            "Mon numéro de client est FR-88213",
        ),
        keep(
            {
                "role": "assistant",
                "content": "Bonjour ! Désolé pour ces coupures. Est-ce que le voyant de la box change de couleur juste avant le redémarrage ?",
                "weight": 0,
            },
            "le voyant de la box change de couleur",
            decision="openai_weight",
        ),
        keep({"role": "user", "content": "Oui, il devient orange quelques secondes avant."}, "il devient orange"),
        keep(
            {
                "role": "assistant",
                "content": "Merci ! Un voyant orange signale une mise à jour du firmware qui échoue. Je programme un technicien pour jeudi matin ; en attendant, laissez la box branchée.",
                "weight": 1,
            },
            "Je programme un technicien pour jeudi matin",
        ),
    ]
    line5 = [
        keep(
            {
                "role": "user",
                "content": "Mi perro se llama Tobías y es alérgico al pollo. ¿Qué pienso me recomiendas? 🐶",
            },
            "Mi perro se llama Tobías y es alérgico al pollo",
        ),
        keep(
            {
                "role": "assistant",
                "content": "Para Tobías busca un pienso de proteína única sin pollo, por ejemplo de cordero o de pescado, y revisa que tampoco lleve grasa de ave en los ingredientes.",
            },
            "proteína única sin pollo",
        ),
    ]
    return [
        (
            {"messages": [m for m, _ in line1], "tools": [weather_tool], "parallel_tool_calls": False},
            line1,
            [fact("When is my sister Maren's wedding?", "4 April for my sister Maren's wedding")],
        ),
        (
            {"id": "chat-balcony-0002", "messages": [m for m, _ in line2]},
            line2,
            [fact("When did I plant the tomatoes on my balcony?", "Cherokee Purple tomato plants on 20 May")],
        ),
        (
            {"messages": [m for m, _ in line3], "functions": [convert_fn]},
            line3,
            [fact("How long is my bike commute?", "11.2 miles each way")],
        ),
        (
            {
                "metadata": {"source": "support-widget", "locale": "fr-FR", "ticket": "T-40917"},
                "messages": [m for m, _ in line4],
            },
            line4,
            [
                fact("Quel est mon numéro de client ?", "FR-88213", "fr"),
                fact("What is my customer number with my internet provider?", "FR-88213"),
            ],
        ),
        (
            {"id": "chat-tobias-0005", "messages": [m for m, _ in line5]},
            line5,
            [
                fact("¿A qué es alérgico mi perro?", "alérgico al pollo", "es"),
                fact("What is my dog allergic to?", "alérgico al pollo"),
            ],
        ),
    ]


def openai(files: list[Json]) -> list[Json]:
    lines, expected, texts = openai_lines(), [], []
    for index, (record, pairs, facts) in enumerate(lines):
        extra = {"id": record["id"]} if "id" in record else {}
        conversation, kept = openai_expected(index, pairs, facts, **extra)
        expected.append(conversation)
        texts.append(kept)
    everything = [t for kept in texts for t in kept]
    for conversation, kept in zip(expected, texts, strict=True):
        check_texts(f"openai line {conversation['index']}", conversation, kept, everything)
    write("openai/chats.jsonl", "".join(dump(record, indent=None) + "\n" for record, _, _ in lines))
    files.append({"file": "openai/chats.jsonl", "format": "openai-jsonl", "conversations": expected})

    single = [
        skip(
            {"role": "system", "content": "You are a helpful assistant."},
            "You are a helpful assistant.",
            "system_prompts",
        ),
        keep(
            {
                "role": "user",
                "content": "My landlord, Mr. Okafor, now wants the rent by the 28th of each month instead of the 1st. Can you help me set up a reminder?",
            },
            "wants the rent by the 28th of each month",
        ),
        keep(
            {
                "role": "assistant",
                "content": "Of course. Set a repeating reminder for the 25th of every month, three days before the rent is due, and move your standing order to the 27th so it always lands in time.",
                "refusal": None,
            },
            "repeating reminder for the 25th",
        ),
        keep(
            {"role": "user", "content": "The rent is 1,150 pounds, paid from my Monzo account."},
            "The rent is 1,150 pounds",
        ),
        keep(
            {
                "role": "assistant",
                "content": "Then the standing order is 1,150 pounds from Monzo on the 27th, and the reminder on the 25th is your cue to check the balance.",
                "refusal": None,
                "annotations": [],
            },
            "1,150 pounds from Monzo on the 27th",
        ),
    ]
    facts = [fact("When is my rent due?", "by the 28th of each month"), fact("How much is my rent?", "1,150 pounds")]
    conversation, kept = openai_expected(0, single, facts)
    check_texts("openai chat.json", conversation, kept, kept)
    write("openai/chat.json", dump([m for m, _ in single]))
    files.append({"file": "openai/chat.json", "format": "openai-json", "conversations": [conversation]})
    return [record for record, _, _ in lines]


# ---------------------------------------------------------------- LangChain


def langchain(files: list[Json]) -> None:
    call = "call_a1B2c3D4e5F6g7H8i9J0kL1m"
    model = {"model_name": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_0ba0d124f1"}
    messages: list[BaseMessage] = [
        SystemMessage("You are Dana's travel planning assistant.", id="lc-sys-0001"),
        HumanMessage(
            "My passport expires on 9 August 2026. I'm Irish; do I need a visa for two weeks in Japan this October?",
            id="lc-msg-0001",
            additional_kwargs={"timestamp": "2025-01-20T19:02:11+00:00"},
        ),
        AIMessage(
            "",
            id="lc-msg-0002",
            tool_calls=[
                {
                    "name": "lookup_entry_rules",
                    "args": {"country": "JP", "nationality": "IE", "days": 14},
                    "id": call,
                    "type": "tool_call",
                }
            ],
            additional_kwargs={"timestamp": "2025-01-20T19:02:13+00:00"},
            response_metadata={**model, "finish_reason": "tool_calls"},
            usage_metadata={"input_tokens": 96, "output_tokens": 27, "total_tokens": 123},
        ),
        ToolMessage(
            '{"visa_required": false, "max_stay_days": 90, "passport": "valid for the whole stay"}',
            tool_call_id=call,
            name="lookup_entry_rules",
            id="lc-msg-0003",
            additional_kwargs={"timestamp": "2025-01-20T19:02:14+00:00"},
        ),
        AIMessage(
            "No visa needed: Irish citizens can visit Japan for up to 90 days, and your passport (valid until 9 August "
            "2026) covers the whole trip.",
            id="lc-msg-0004",
            additional_kwargs={"timestamp": "2025-01-20T19:02:16+00:00"},
            response_metadata={**model, "finish_reason": "stop"},
            usage_metadata={"input_tokens": 151, "output_tokens": 38, "total_tokens": 189},
        ),
        HumanMessage(
            "Great, then I'll book the ryokan in Kyoto for 14 to 18 October.",
            id="lc-msg-0005",
            additional_kwargs={"timestamp": "2025-01-20T19:04:40+00:00"},
        ),
        AIMessage(
            "Good plan: mid-October is early for autumn leaves in Kyoto, but the weather is mild and the crowds smaller.",
            id="lc-msg-0006",
            additional_kwargs={"timestamp": "2025-01-20T19:04:43+00:00"},
            response_metadata={**model, "finish_reason": "stop"},
            usage_metadata={"input_tokens": 214, "output_tokens": 29, "total_tokens": 243},
        ),
    ]
    contains = [
        None,
        "My passport expires on 9 August 2026",
        "lookup_entry_rules",
        "max_stay_days",
        "Irish citizens can visit Japan for up to 90 days",
        "book the ryokan in Kyoto for 14 to 18 October",
        "mid-October is early for autumn leaves",
    ]
    kept, texts = [], []
    for message, text in zip(messages, contains, strict=True):
        if text is None:
            continue
        role = {"human": "user", "ai": "assistant", "tool": "tool"}[message.type]
        decision = "tool_calls" if message.type == "tool" or getattr(message, "tool_calls", None) else None
        kept.append(expect(role, text, message.additional_kwargs["timestamp"], id=message.id, decision=decision))
        texts.append(f"{message.text}\n{getattr(message, 'tool_calls', '')}")
    conversation = {
        "index": 0,
        "title": None,
        "messages": kept,
        "must_not_contain": [],
        "skipped_by_decision": [{"contains": "You are Dana's travel planning assistant", "decision": "system_prompts"}],
        "facts": [
            fact("When does my passport expire?", "9 August 2026"),
            fact("When am I staying at the ryokan in Kyoto?", "14 to 18 October"),
        ],
    }
    check_texts("langchain", conversation, texts, texts)
    write("langchain/messages_to_dict.json", dump(messages_to_dict(messages)))
    write("langchain/dumpd.json", dump(dumpd(messages)))
    for name, how in (("messages_to_dict.json", "messages_to_dict"), ("dumpd.json", "dumpd")):
        files.append(
            {"file": f"langchain/{name}", "format": "langchain", "made_with": how, "conversations": [conversation]}
        )


# ---------------------------------------------------------------- markdown


DAILY_LOG_SESSIONS: list[tuple[str, list[Json]]] = [
    (
        "kitchen-tiles",
        [
            {
                "id": "log-kt-01",
                "role": "user",
                "timestamp": "2025-02-10T20:14:05Z",
                "content": "We finally ordered the kitchen tiles: 42 boxes of Atlas Ceramics zellige in the colour 'Sage'. Delivery is on 19 February.",
            },
            {
                "id": "log-kt-02",
                "role": "assistant",
                "timestamp": "2025-02-10T20:14:31Z",
                "content": "Great choice, zellige looks lovely next to oak. A quick check of the coverage:\n\n```python\nboxes, m2_per_box = 42, 0.5\nprint(boxes * m2_per_box)  # 21.0\n```\n\nSo 42 boxes cover about 21 m², roughly 10% spare for cuts on a 19 m² wall.",
            },
            {
                "id": "log-kt-03",
                "role": "user",
                "timestamp": "2025-02-10T20:16:02Z",
                "content": "Our tiler, Gintaras, can start on 24 February.",
            },
            {
                "id": "log-kt-04",
                "role": "assistant",
                "timestamp": "2025-02-10T20:16:20Z",
                "content": "Noted: Gintaras starts five days after the delivery, which gives the boxes time to acclimatise in the room.",
            },
        ],
    ),
    (
        "budget",
        [
            {
                "id": "log-bu-01",
                "role": "user",
                "name": "Alice",
                "timestamp": "2025-02-10T23:58:40Z",
                "content": "Quick one before bed: the renovation budget is capped at 9,500 euros and we've spent 6,240 so far.",
            },
            {
                "id": "log-bu-02",
                "role": "assistant",
                "timestamp": "2025-02-10T23:59:10Z",
                "content": "That leaves 3,260 euros. The tiling labour is the biggest open item, so ask for a fixed quote.",
            },
            {
                "id": "log-bu-03",
                "role": "user",
                "name": "Alice",
                "timestamp": "2025-02-11T00:03:12Z",
                "content": "Also: the worktop is solid oak, 38 mm thick, and needs oiling every three months.",
            },
            {
                "id": "log-bu-04",
                "role": "assistant",
                "timestamp": "2025-02-11T00:03:30Z",
                "content": "Got it: a 38 mm solid oak worktop, oiled every three months (next time in mid-May).",
            },
        ],
    ),
]
DAILY_LOG_CONTAINS = {
    "log-kt-01": "42 boxes of Atlas Ceramics zellige",
    "log-kt-02": "boxes, m2_per_box = 42, 0.5",
    "log-kt-03": "Gintaras, can start on 24 February",
    "log-kt-04": "time to acclimatise",
    "log-bu-01": "capped at 9,500 euros",
    "log-bu-02": "That leaves 3,260 euros",
    "log-bu-03": "solid oak, 38 mm thick",
    "log-bu-04": "next time in mid-May",
}
DAILY_LOG_FACTS = {
    ("2025-02-10", "kitchen-tiles"): [
        fact("How many boxes of kitchen tiles did we order?", "42 boxes"),
        fact("When are the kitchen tiles delivered?", "Delivery is on 19 February"),
        fact("When does the tiler start?", "can start on 24 February"),
    ],
    ("2025-02-10", "budget"): [fact("What is our renovation budget?", "capped at 9,500 euros")],
    ("2025-02-11", "budget"): [fact("How thick is the kitchen worktop?", "38 mm thick")],
}


def daily_logs(files: list[Json]) -> None:
    folder = HERE / "markdown" / "logs"
    shutil.rmtree(folder, ignore_errors=True)  # append_daily_log appends: start from nothing
    by_id: dict[str, Json] = {}
    for session, messages in DAILY_LOG_SESSIONS:
        turns = normalize_messages(messages, session_id=session)
        append_daily_log(folder, "alice", session, turns, default=datetime(2025, 2, 10, tzinfo=UTC))
        by_id |= {t.id: {"session": session, "turn": t} for t in turns}
    for day in ("2025-02-10", "2025-02-11"):
        sessions: dict[str, list[Json]] = {}
        texts: dict[str, list[str]] = {}
        for item in by_id.values():
            turn = item["turn"]
            if turn.timestamp.date().isoformat() != day:
                continue
            entry = expect(
                turn.role, DAILY_LOG_CONTAINS[turn.id], turn.timestamp.isoformat(), id=turn.id, name=turn.name
            )
            sessions.setdefault(item["session"], []).append(entry)
            texts.setdefault(item["session"], []).append(turn.text)
        conversations = []
        for index, (session, messages) in enumerate(sessions.items()):
            conversation = {"index": index, "session_id": session, "title": None, "messages": messages}
            conversation |= {"must_not_contain": [], "facts": DAILY_LOG_FACTS[day, session]}
            check_texts(f"daily log {day} {session}", conversation, texts[session], texts[session])
            conversations.append(conversation)
        relative = f"markdown/logs/alice/{day}.md"
        if not (HERE / relative).is_file():
            msg = f"append_daily_log did not write {relative}"
            raise AssertionError(msg)
        files.append({"file": relative, "format": "daily-log", "user_id": "alice", "conversations": conversations})


NOTES: dict[str, str] = {
    "2025-03-14.md": """# Friday 14 March 2025

Cold, bright morning; frost on the allotment shed roof.

Bouldered with Tomasz after work. He lent me his 70 m rope, and I have to give it back before the Kalymnos trip on 5 April.

Things to remember:

- the dentist moved my check-up to 2 April at 9:30
- finished *The Overstory*; lend it to Mum next
""",
    "projects.md": """# Projects

## Greenhouse

- Heater thermostat set to **7 °C** for the winter (paraffin heater as a backup)
- Seed trays: Lemon Drop chillies, sweet peas, basil
- [ ] Replace the cracked pane on the door side

## Home server

The old ThinkPad X230 on the pantry shelf, hostname `pantry`.

- Backups: restic to the USB disk every night at 02:30
- Jellyfin on port 8096
- [x] Move DNS to the router

### Ideas

1. Replace the SSD before it reaches 90% wear
2. A UPS: the power cut in January corrupted the media index
""",
}
NOTES_EXPECTED = {
    "2025-03-14.md": (
        "Friday 14 March 2025",
        "2025-03-14T00:00:00+00:00",
        "He lent me his 70 m rope",
        [
            fact("When do I have to give Tomasz's rope back?", "give it back before the Kalymnos trip on 5 April"),
            fact("When is my dentist check-up?", "2 April at 9:30"),
        ],
    ),
    "projects.md": (
        "Projects",
        None,
        "Heater thermostat set to",
        [
            fact("What temperature is the greenhouse heater set to?", "7 °C"),
            fact("What is the hostname of my home server?", "hostname `pantry`"),
            fact("When do the home server backups run?", "every night at 02:30"),
        ],
    ),
}


def notes(files: list[Json]) -> None:
    for name, text in NOTES.items():
        title, stamp, contains, facts = NOTES_EXPECTED[name]
        relative = f"markdown/notes/{name}"
        write(relative, text)
        conversation = {
            "index": 0,
            "title": title,
            "messages": [expect("user", contains, stamp, decision="notes_documents")],
        }
        conversation |= {"must_not_contain": [], "facts": facts}
        check_texts(relative, conversation, [text], [text])
        files.append({"file": relative, "format": "markdown-notes", "conversations": [conversation]})


# ---------------------------------------------------------------- invalid inputs


def broken_chat(kind: str) -> Json:
    """A small valid-looking ChatGPT conversation, broken as ``kind`` says."""
    c = Chat(
        f"broken-{kind}", f"Broken export ({kind})", "gpt-4o", "2025-04-03T10:00:00.250000", root="client-created-root"
    )
    system = c.system()
    u1 = c.user(system, "My locker code at the climbing gym is 4471.", "2025-04-03T10:00:00.250000")
    a1 = c.reply(u1, "Noted: locker code 4471.", "2025-04-03T10:00:04.500000")
    c.finish(a1, "2025-04-03T10:00:05.750000")
    data = c.export()
    if kind == "missing-current-node":
        data["current_node"] = uid("broken", "nowhere")
    elif kind == "parent-cycle":  # u1 -> a1 -> u1: walking up from current_node never reaches a root
        data["mapping"][u1]["parent"] = a1
        data["mapping"][a1]["children"].append(u1)
        data["mapping"][system]["children"] = []
    return data


def invalid(valid_conversations: list[Json], valid_lines: list[Json]) -> list[Json]:
    out: list[Json] = []

    def bad(name: str, data: bytes, fmt: str, why: str) -> None:
        write(f"invalid/{name}", data)
        out.append({"file": f"invalid/{name}", "format": fmt, "why": why})

    full = dump(valid_conversations[1:3], indent=None).encode()
    cut = full[: len(full) * 2 // 3]
    cut = cut[: cut.rindex(b'"content": {"content_type"')]  # an ASCII spot: the file is still valid UTF-8
    bad(
        "chatgpt_truncated.json",
        cut,
        "chatgpt",
        "truncated JSON: the array and its objects are never closed (an interrupted download)",
    )
    first = valid_conversations[1]
    bad(
        "chatgpt_missing_current_node.json",
        dump([first, broken_chat("missing-current-node")], indent=None).encode(),
        "chatgpt",
        "the second conversation's current_node is not in its mapping; the first conversation is valid and must not be stored either",
    )
    bad(
        "chatgpt_parent_cycle.json",
        dump([first, broken_chat("parent-cycle")], indent=None).encode(),
        "chatgpt",
        "the second conversation's mapping has a parent cycle (user -> assistant -> user) and no path from current_node to a root; an importer must detect it, not loop",
    )
    lines = [dump(record, indent=None) for record in valid_lines[:2]]
    lines.append('{"messages": [{"role": "user", "content": "Remind me to renew the car insurance on 30 Ju')
    lines.append(dump(valid_lines[4], indent=None))
    bad(
        "openai_bad_third_line.jsonl",
        ("\n".join(lines) + "\n").encode(),
        "openai-jsonl",
        "line 3 is not JSON (cut off mid-string); lines 1, 2 and 4 are valid and must not be stored either",
    )
    unknown = {
        "messages": [
            {"role": "user", "content": "Tell me a story about a lighthouse."},
            {"role": "narrator", "content": "Once upon a time, on a rocky island..."},
            {"role": "assistant", "content": "The lighthouse keeper, Edda, lit the lamp at dusk."},
        ]
    }
    text = dump(valid_lines[4], indent=None) + "\n" + dump(unknown, indent=None) + "\n"
    bad(
        "openai_unknown_role.jsonl",
        text.encode(),
        "openai-jsonl",
        "line 2 has a message with the unknown role 'narrator'",
    )
    members = [
        (
            "user.json",
            dump(
                {"id": USER_ID, "email": "sam@example.com", "chatgpt_plus_user": True, "phone_number": None},
                indent=None,
            ).encode(),
        ),
        ("message_feedback.json", b"[]"),
        ("shared_conversations.json", b"[]"),
        ("chat.html", CHAT_HTML.encode()),
    ]
    write_zip("invalid/chatgpt_export_without_conversations.zip", members)
    out.append(
        {
            "file": "invalid/chatgpt_export_without_conversations.zip",
            "format": "chatgpt-zip",
            "why": "a ChatGPT export zip with user.json, chat.html and the rest but no conversations.json",
        }
    )
    latin1 = {
        "messages": [
            {"role": "user", "content": "Schöne Grüße aus Köln! Mein Zug fährt um 7:42."},
            {"role": "assistant", "content": "Gute Reise!"},
        ]
    }
    bad(
        "openai_latin1.jsonl",
        (dump(latin1, indent=None) + "\n").encode("latin-1"),
        "openai-jsonl",
        "not UTF-8: written in Latin-1 (ö, ü, ß as single bytes); it must be rejected, not decoded with replacement characters",
    )
    bad("empty.json", b"", "chatgpt", "an empty file (0 bytes): not an export")
    return out


# ---------------------------------------------------------------- main


def main() -> None:
    files: list[Json] = []
    conversations = chatgpt(files)
    lines = openai(files)
    langchain(files)
    daily_logs(files)
    notes(files)
    broken = invalid(conversations, lines)
    expected = {
        "about": (
            "What a correct importer extracts from each fixture in this folder (written by make_imports.py). "
            "messages: what it keeps, in order (role, a distinctive substring of the text, the source's own time as "
            "ISO 8601 UTC or null, and the source's id / name where there is one). A message with a 'decision' is "
            "kept because of that entry of 'decisions' (a test may treat it as optional). must_not_contain: text "
            "that must appear nowhere in what is stored from the file (abandoned branches, hidden context, "
            "reasoning). skipped_by_decision: text this spec skips by a recorded decision. facts: a later question "
            "and a substring of the stored text that answers it."
        ),
        "decisions": DECISIONS,
        "files": files,
        "invalid": broken,
    }
    used = {m["decision"] for f in files for c in f["conversations"] for m in c["messages"] if "decision" in m}
    used |= {s["decision"] for f in files for c in f["conversations"] for s in c.get("skipped_by_decision", [])}
    if not used <= DECISIONS.keys():
        msg = f"undocumented decisions {used - DECISIONS.keys()}"
        raise AssertionError(msg)
    write("expected.json", dump(expected))
    too_big = [p for p in HERE.rglob("*") if p.is_file() and p.suffix != ".py" and p.stat().st_size >= 60_000]
    if too_big:
        msg = f"fixtures over 60 KB: {too_big}"
        raise AssertionError(msg)


if __name__ == "__main__":
    main()
