"""Writes cache_adversarial.json: PAWS-style cache pairs generated from real questions (run once; JSON committed).

Source: the 999 questions of the LoCoMo dev conversations (Maharana et al., ACL 2024, CC BY-NC 4.0), questions
this project did not write. For each question the script derives, by fixed rules and a seeded random choice:

- near-misses that must NOT hit: another name (``entity``), two names swapped (``entity_swap``), another
  number or year (``number``), a negation (``negation``), a person swap (``person``), an opposing word
  (``opposite``), a direction word changed (``direction``), another month or weekday (``time``), a topic word
  replaced by a topic word of another question (``noun``);
- paraphrases that SHOULD hit: the same question lower-cased without punctuation (``surface``), with
  contractions or expansions (``contraction``), with a polite frame (``polite``), with a synonym (``synonym``).

Each pair records its conversation, so evaluations tune on ``conv-26``/``conv-30`` and report on the rest.
Run: python tests/data/make_cache_adversarial.py [path/to/locomo_dev.json]   (or LOCOMO_PATH)
"""

from __future__ import annotations

import json
import os
import random
import re
import sys
from pathlib import Path

OUT = Path(__file__).with_name("cache_adversarial.json")
TUNE = ("conv-26", "conv-30")

MONTHS = "January February March April May June July August September October November December".split()
DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
PERSONS = {"his": "her", "her": "his", "he": "she", "she": "he", "him": "her", "my": "your", "your": "my",
           "I": "you", "you": "I", "their": "our", "our": "their"}  # fmt: skip
OPPOSITES = {
    "before": "after", "after": "before", "first": "last", "last": "first", "start": "stop", "started": "stopped",
    "buy": "sell", "bought": "sold", "in": "out", "up": "down", "on": "off", "open": "close", "opened": "closed",
    "give": "take", "gave": "took", "more": "less", "most": "least", "best": "worst", "new": "old", "old": "new",
    "older": "younger", "bigger": "smaller", "join": "leave", "joined": "left", "win": "lose", "won": "lost",
    "send": "receive", "sent": "received", "inside": "outside", "favorite": "least favorite",
}  # fmt: skip
DIRECTION = {"to": "from", "from": "to", "into": "out of"}
SYNONYMS = {
    "buy": "purchase", "bought": "purchased", "begin": "start", "began": "started", "big": "large", "kids": "children",
    "children": "kids", "movie": "film", "movies": "films", "favorite": "favourite", "picture": "photo",
    "pictures": "photos", "trip": "journey", "job": "occupation", "help": "assist", "helped": "assisted",
    "shop": "store", "car": "automobile", "happy": "glad", "gift": "present", "talk": "speak", "talked": "spoke",
}  # fmt: skip
CONTRACTIONS = [("What is", "What's"), ("Who is", "Who's"), ("did not", "didn't"), ("does not", "doesn't"),
                ("is not", "isn't"), ("Where is", "Where's"), ("How is", "How's"), ("What's", "What is")]  # fmt: skip
POLITE = ["Can you tell me {q}", "Do you know {q}", "{q} Please tell me.", "Quick question: {q}"]
AUX = re.compile(r"\b(did|does|do|is|are|was|were|has|have|can|will|would)\b")
INFINITIVE_BEFORE = {"how", "want", "wants", "need", "needs", "able", "have", "has", "going", "trying", "like",
                     "used", "plan", "plans", "planning", "decided", "hoping", "hope", "likely", "begin", "beginning"}  # fmt: skip
WORD = re.compile(r"[A-Za-z][A-Za-z'-]*|\d+")
STOP = set(
    "what when where who whom whose which why how did does do is are was were has have can will would the a an "
    "of to in on at for with and or but by from about as that this these those it its his her their they them "
    "he she i you my your our we us be been being kind type some any there here after before during while".split()
)


def load(path: Path) -> list[tuple[str, str]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [(s["sample_id"], " ".join(q["question"].split())) for s in data for q in s["qa"]]


def names_in(question: str) -> list[str]:
    words = WORD.findall(question)
    return [w.split("'")[0] for i, w in enumerate(words[1:], 1) if w[:1].isupper() and w not in MONTHS + DAYS]


def sub_word(question: str, old: str, new: str) -> str:
    return re.sub(rf"\b{re.escape(old)}\b", new, question, count=1)


def near_misses(  # noqa: C901, PLR0912 - one branch per kind of near-miss
    q: str, rng: random.Random, all_names: list[str], topic_words: list[str]
) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    names = list(dict.fromkeys(names_in(q)))
    if names:
        other = rng.choice([n for n in all_names if n not in names])
        out.append(("entity", sub_word(q, names[0], other)))
    if len(names) >= 2:
        a, b = names[0], names[1]
        out.append(("entity_swap", re.sub(rf"\b({re.escape(a)}|{re.escape(b)})\b", lambda m: b if m[1] == a else a, q)))
    numbers = re.findall(r"\b\d+\b", q)
    if numbers:
        n = numbers[-1]
        out.append(("number", sub_word(q, n, str(int(n) + (1 if len(n) == 4 else 2)))))
    aux = AUX.search(q)
    if aux and " not " not in q and "n't" not in q:
        out.append(("negation", q[: aux.end()] + " not" + q[aux.end() :]))
    for word, repl in PERSONS.items():
        if re.search(rf"\b{word}\b", q):
            out.append(("person", sub_word(q, word, repl)))
            break
    for word, repl in OPPOSITES.items():
        if re.search(rf"\b{word}\b", q):
            out.append(("opposite", sub_word(q, word, repl)))
            break
    tokens = q.split()
    for i, token in enumerate(tokens):
        bare = token.strip("?,.").lower()
        if bare in DIRECTION and not (bare == "to" and i and tokens[i - 1].lower() in INFINITIVE_BEFORE):
            tokens2 = [*tokens[:i], token.lower().replace(bare, DIRECTION[bare]), *tokens[i + 1 :]]
            out.append(("direction", " ".join(tokens2)))
            break
    for group in (MONTHS, DAYS):
        found = [m for m in group if re.search(rf"\b{m}\b", q)]
        if found:
            other = group[(group.index(found[0]) + 1 + rng.randrange(len(group) - 1)) % len(group)]
            out.append(("time", sub_word(q, found[0], other)))
            break
    topics = [w for w in WORD.findall(q) if w.lower() not in STOP and w[:1].islower() and len(w) > 3]
    if topics:
        word = rng.choice(topics)
        other = rng.choice([t for t in topic_words if t != word])
        out.append(("noun", sub_word(q, word, other)))
    return [(kind, b) for kind, b in out if b != q]


def paraphrases(q: str, rng: random.Random) -> list[tuple[str, str]]:
    out = [("surface", q.lower().rstrip("?").strip())]
    for a, b in CONTRACTIONS:
        if a in q:
            out.append(("contraction", q.replace(a, b, 1)))
            break
    template = rng.choice(POLITE)
    out.append(("polite", template.format(q=q if template.startswith("{q}") else q[0].lower() + q[1:])))
    for word, repl in SYNONYMS.items():
        if re.search(rf"\b{word}\b", q):
            out.append(("synonym", sub_word(q, word, repl)))
            break
    return [(kind, b) for kind, b in out if b != q]


def main() -> None:
    default = os.environ.get("LOCOMO_PATH", "")
    path = Path(sys.argv[1] if len(sys.argv) > 1 else default)
    if not path.is_file():
        sys.exit("usage: make_cache_adversarial.py path/to/locomo_dev.json (or set LOCOMO_PATH)")
    questions = load(path)
    rng = random.Random(20261129)  # noqa: S311 - a reproducible sample, not a secret
    all_names = sorted({n for _, q in questions for n in names_in(q)})
    topic_words = sorted(
        {w for _, q in questions for w in WORD.findall(q) if w.lower() not in STOP and w[:1].islower() and len(w) > 3}
    )
    pairs = []
    for sample, q in dict.fromkeys(questions):
        split = "tune" if sample in TUNE else "report"
        for kind, b in near_misses(q, rng, all_names, topic_words):
            pairs.append({"a": q, "b": b, "label": f"near_miss:{kind}", "sample": sample, "split": split})
        for kind, b in paraphrases(q, rng):
            pairs.append({"a": q, "b": b, "label": f"paraphrase:{kind}", "sample": sample, "split": split})
    OUT.write_text(json.dumps(pairs, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(pairs)} pairs from {len(questions)} questions -> {OUT.name}")


if __name__ == "__main__":
    main()
