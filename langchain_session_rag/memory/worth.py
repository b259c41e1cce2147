"""What a stored chunk is worth in long use: who stated its information, read at ingest without a model call.

A personal assistant's memory fills with its own traffic: the same question asked again and again, answered
"Sorry, I'm not sure."; greetings and thanks; the model's own answers, right or invented. Each chunk is given a
``worth`` when it is stored (and, for chunks stored before this existed, when it is read):

========== ==================================================================================================
worth      the chunk holds
========== ==================================================================================================
statement  information a person stated (a user's message that is not only a question, a request or a thanks;
           in a conversation between named people, any of them), or a note the user saved
claim      information only the assistant gave: the user asked, the model answered (the user never stated it), or
           a note a model wrote through a tool (``author="model"``)
question   a question or request without an answer: the user asked, the model had nothing ("I'm not sure")
filler     acknowledgements, greetings and thanks on both sides
========== ==================================================================================================

A speaker is the model when its label is ``Assistant`` (a message without a ``name``); a named speaker is a person.
Who said what comes from the messages' roles: chunk text escapes any line of a message that looks like a speaker's
(``User: ...`` quoted in a reply), so only the words the user typed can make a statement. A chunk stored before that
is read by :func:`spoken_turns`, and a store re-assesses its older chunks once when it is opened
(:mod:`.reassessment`). ``worth``, ``asks`` and ``correction`` are always computed here, never taken from an import.
Questions also record the words they ask about (``asks``, stemmed content words) so repeats can be recognised, and a
statement that corrects an earlier one ("changed to", "actually", "no longer", "moved from X to Y") is flagged
(``correction``). Nothing is dropped: the worth only changes how recall ranks (:mod:`.recall_policy`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Literal

from langchain_session_rag.memory.lexical import padded, tokenize
from langchain_session_rag.stores.base import decode_message_ids

Worth = Literal["statement", "claim", "question", "filler"]
WORTHS: tuple[Worth, ...] = ("statement", "claim", "question", "filler")
MODEL_LABEL = "Assistant"
"""The speaker label of the model's messages in chunk text (an assistant message without a ``name``)."""
_NOT_SPEAKERS = frozenset({"System", "Tool"})
_SPEAKER = re.compile(r"^([^:\n]{1,64}): ", re.MULTILINE)
_SENTENCE = re.compile(r"[^.!?;\n]+[.!?;]*")
_NON_ANSWER = re.compile(
    r"\b(not (sure|certain)|(don'?t|do not|doesn'?t) (know|have|remember|recall|see)|no (idea|access|record|way"
    r"|information)|(can'?t|cannot|couldn'?t|unable to|not able to) (find|see|access|recall|remember|tell|say|know)"
    r"|i'?m afraid|no memory of|could you (tell|remind)|can you (tell|remind) me|not something i|no clue"
    r"|(haven'?t|have not|never) (told|mentioned|given|said|shared)|not in my (memory|records|notes)"
    r"|lack (that|the|this|any) information|(can'?t|cannot) help with that)\b",
    re.IGNORECASE,
)
_FILLER_PHRASES = (
    r"thanks?( you)?( so much| a lot)?( for (the|your) help\w*)?|thank you|ok(ay)?|all right|alright|sure|great|cool"
    r"|nice|got it|hmm+|hm|uh+|um+|erm?|noted|understood|perfect|awesome|yes|yeah|yep|no|nope|hi|hello|hey"
    r"|good (morning|afternoon"
    r"|evening|night)|bye|goodbye|see you|you'?re welcome|no problem|my pleasure|happy to help|glad to help"
    r"|updated|saved|changed|done|will do|of course|(i'?ll|i will) (remember|keep|note|use)\b[^.!?]*"
    r"|(i'?ve|i have) (noted|updated|saved|changed)\b[^.!?]*|(noted|saved|changed|updated) the change"
    r"|what can i do for you( today)?|how can i help( you)?( today)?"
)
_FILLER = re.compile(rf"^(?:\W*(?:{_FILLER_PHRASES})\b)+\W*$", re.IGNORECASE)
_QUESTION_START = re.compile(
    r"^\W*(what|what'?s|where|where'?s|when|who|who'?s|whom|whose|which|why|how|is|are|am|was|were|do|does|did|can"
    r"|could|would|will|should|shall|have|has|any idea|do you (know|remember))\b",
    re.IGNORECASE,
)
_REQUEST = re.compile(r"^\W*(remind me|tell me|please tell|recommend|suggest|give me|show me)\b", re.IGNORECASE)
_CLAUSE = re.compile(r"[,:;\u2014-]\s+|\s+that\s+")
_COPULA = re.compile(r"\b(is|are|am|was|were|'s|'m|'re|live|lives|work|works|have|has|called|named)\b", re.IGNORECASE)
_LETTERS = re.compile(r"[^\W\d_]{2,}")
_IDEOGRAPHS = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_VALUE = re.compile(r"\d|(?<![.!?]\s)(?<!^)\b(?!I\b|I'[a-z]+\b)[A-Z][\w-]+")
"""A value in a sentence: a digit, or a capitalised word that does not start it ("Luna", "Tangerine-42")."""
_WORDS = 2
"""Words a clause needs to state something, or a sentence in another script to count as one."""
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
ADDITION = re.compile(r"\b(also|too|as well|another|second|in addition)\b", re.IGNORECASE)
"""A statement that adds ("I'm also allergic to penicillin") corrects nothing."""
_CORRECTION = re.compile(
    r"\b(chang(e|ed|es|ing) (it |that )?to|actually|no longer|not anymore|any ?more|moved (from|to|out)|switched"
    r"|instead|renamed|rename|reset|correction|mistyped|i meant|from now on|is now|are now|now (is|are)|not \w+ but"
    r"|, not \w+|^\W*not \w+,)\b",
    re.IGNORECASE,
)


_UNFINISHED = re.compile(
    r"(?:\b(?:is|are|am|was|were|be|'s|'m|'re|my|our|your|the|a|an|to|from|of|called|named)|[:,\u2014-])$",
    re.IGNORECASE,
)
"""The end of a clause that stops before its value: a copula, an article, a preposition, a colon, comma or dash."""
_HEDGES = ("as follows", "the following", "below", "i think", "i guess", "i believe", "you know", "now", "currently",
           "still", "actually", "basically", "well", "like", "so", "uh", "uhm", "um", "umm", "er", "erm", "hmm", "hm",
           "ah", "eh")  # fmt: skip
"""Words that hold no value at the end of a sentence ("My wifi password is now", "The code is, uh")."""
_TRAILING = " \t.\u2026,:;-\u2013\u2014\"'\u201c\u2018*_~"
_OPENERS = {"(": ")", "[": "]", "{": "}", '"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019"}


def _before_open_value(sentence: str) -> str:
    """``sentence`` up to a quote or bracket it opens and never closes ("is 'Tangerine": the rest is unfinished)."""
    for at in range(len(sentence) - 1, -1, -1):
        char = sentence[at]
        if char in _OPENERS and (at == 0 or not sentence[at - 1].isalnum()):  # an opener, not an apostrophe
            return sentence if _OPENERS[char] in sentence[at + 1 :] else sentence[:at]
    return sentence


def states_no_value(sentence: str) -> bool:
    """Whether a person's sentence stops before the value it announces: whatever completes it is another speaker's.

    The user's statement is what the user's own words state. Read from the end, a sentence's value slot is empty when,
    after dropping what holds no value (punctuation, an ellipsis, hesitations and hedges such as "uh", "now", "as
    follows", and a quote or bracket it opens but never closes), the words end on a copula, article, preposition,
    colon, comma or dash: "My wifi password is...", "is now", "is 'Tangerine", "is, uh". A sentence closed by a
    full stop or "!" right after such a word is finished ("It is what it is."); a question following the stop
    ("is ... what did I say?") is a sentence of its own and states nothing either.
    """
    text = _before_open_value(sentence)
    hedged = text != sentence
    while True:
        kept = text.rstrip(_TRAILING)
        low = kept.lower()
        hedge = next((h for h in _HEDGES if low.endswith(h) and not low[: -len(h)][-1:].isalnum()), None)
        if hedge is None:
            break
        text, hedged = kept[: -len(hedge)], True
    stop = text[len(kept) :].strip()
    if not hedged and stop in {".", "!"}:
        return False
    return bool(_UNFINISHED.search(kept))


_OWNED = re.compile(r"\b(?:my|our|the|your)\s+([a-z0-9'-]+)(?:\s+([a-z0-9'-]+))?", re.IGNORECASE)


def subject_phrases(text: str) -> list[tuple[str, ...]]:
    """What a text is about, by its possessive phrases: "my sister's birthday" → (sister, birthday).

    Up to two content words right after each ``my`` / ``our`` / ``the`` / ``your`` (stemmed, stopping at a function
    word: "my cat is called" → (cat,)); none in "I live at 12 Rosewood Lane".
    """
    found: list[tuple[str, ...]] = []
    text = text.translate(_APOSTROPHES)
    for start in range(len(text)):
        match = _OWNED.match(text, start)
        if match is None or (start and text[start - 1].isalnum()):
            continue
        phrase: list[str] = []
        for word in (w for w in match.groups() if w):
            words = tokenize(word.removesuffix("'s"))
            if not words:
                break
            phrase.extend(words)
        if phrase and tuple(phrase) not in found:
            found.append(tuple(phrase))
    return found


_REQUEST_WORDS = frozenset(tokenize("again remind please tell know remember recall"))
"""Words of a request, not of what it asks about ("Remind me of my wifi password again")."""


_DEFAULT_LABELS = frozenset({"User", MODEL_LABEL, *_NOT_SPEAKERS})
USER_LABEL = "User"
AUTHOR_KEY = "author"
"""Who wrote a note: ``"user"`` (the default: the application saving the user's words) or ``"model"``."""
Author = Literal["user", "model"]
MODEL_AUTHOR: Author = "model"
USER_AUTHOR: Author = "user"
AUTHORS: tuple[Author, ...] = (USER_AUTHOR, MODEL_AUTHOR)
ASSESSED_KEYS = ("worth", "asks", "correction")
"""The keys :func:`assess` sets: computed from the chunk, never taken from an import."""


def turns_of(text: str, speakers: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """A chunk's text as ``(speaker label, text)`` pairs.

    A line starts a turn only with a label of the chunk's ``speakers`` (stored with it), else of the roles (``User``,
    ``Assistant``): a reply's "Tip: ..." line continues the reply. Chunk text escapes every line of a message that
    looks like a speaker's (:func:`~langchain_session_rag.chunking.messages.escape_labels`), so in a chunk stored
    since then the turns are exactly its messages; for older chunks see :func:`spoken_turns`.
    """
    labels = set(speakers) if speakers is not None else _DEFAULT_LABELS
    starts = [m for m in _SPEAKER.finditer(text) if m.group(1) in labels]
    if not starts:
        return [("", text)]
    turns = [("", text[: starts[0].start()])] if starts[0].start() else []
    for n, match in enumerate(starts):
        end = starts[n + 1].start() if n + 1 < len(starts) else len(text)
        turns.append((match.group(1), text[match.end() : end]))
    return turns


def spoken_turns(text: str, speakers: Iterable[str] | None = None, exchanges: int = 1) -> list[tuple[str, str]]:
    """A chunk's turns (:func:`turns_of`), with the user's lines that no message can have opened read as quoted.

    An exchange is the user's turn and the replies to it: once a reply followed the user, the next user turn starts
    a new exchange. A chunk of ``exchanges`` exchanges therefore has at most ``exchanges - 1`` user turns after a
    reply. When its text shows more (a chunk stored before label-like lines were escaped, holding a reply that
    quotes ``User: ...``), a quoted label cannot be told from a real turn, and *every* user line after the first
    reply is read as part of the turn before it: in a single exchange that is exact; in an older topic segment or
    merged chunk it errs towards the model (the user's later words there count as the model's, never the reverse).
    """
    turns = turns_of(text, speakers)
    openings, user, answered = 0, False, False
    for label, _ in turns:
        if label == USER_LABEL:
            openings += answered
            user, answered = True, False
        elif label:
            answered = answered or user
    if openings <= max(exchanges - 1, 0):
        return turns
    merged: list[tuple[str, str]] = []
    user, answered = False, False
    for label, said in turns:
        if label == USER_LABEL and answered and merged:
            before, kept = merged[-1]
            merged[-1] = (before, f"{kept}{label}: {said}")
            continue
        if label == USER_LABEL:
            user = True
        elif label:
            answered = answered or user
        merged.append((label, said))
    return merged


def user_speaks(turns: Iterable[tuple[str, str]]) -> bool:
    """Whether the unnamed user speaks in these turns (:func:`turns_of`).

    Conversations between named people (a group chat, an imported dialogue) are not assessed: there, a question is
    often the evidence, and a newer remark is not a correction of an older one. Whoever answers the unnamed user
    (``Assistant``, or a named agent) is the model.
    """
    return any(label == USER_LABEL for label, _ in turns)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


def is_question(sentence: str) -> bool:
    """A question or a request for information ("What is ...?", "Remind me of ...", "Bike lock code, please?").

    Not a question: a sentence ending in "." or "!" that starts like one ("When I was young I lived in Porto."), and
    a question that first states something ("My wifi password is Tangerine-42, can you remember it?").
    """
    text = sentence.rstrip()
    if _REQUEST.match(text) or text.endswith("?"):
        return not _states(_CLAUSE.split(text))
    return bool(_QUESTION_START.match(text)) and not text.endswith((".", "!"))


def _states(clauses: list[str]) -> bool:
    """Whether one of the clauses states something ("my password is X, ...", "Remind me: X is Y")."""
    return any(
        _COPULA.search(c) and not _QUESTION_START.match(c) and not _REQUEST.match(c) and len(tokenize(c)) >= _WORDS
        for c in clauses
    )


def _informative(sentence: str, *, model: bool) -> bool:
    """A sentence that carries information: not filler, not a question, and (for the model) not a non-answer.

    A person's unfinished sentence ("My wifi password is", "I moved to") states nothing: whatever completes it in
    the chunk is another speaker's.
    """
    if _FILLER.match(sentence) or (not model and states_no_value(sentence)):
        return False
    if not tokenize(sentence) and len(_LETTERS.findall(sentence)) < _WORDS and not _IDEOGRAPHS.search(sentence):
        return False  # no words (text in a script the word splitter does not read counts as words)
    if model:
        return not _NON_ANSWER.search(sentence) and not sentence.rstrip().endswith("?")
    return not is_question(sentence)


def classify(text: str, speakers: Iterable[str] | None = None, exchanges: int = 1) -> tuple[Worth, list[str], bool]:
    """A chunk's worth, the words its questions ask about, and whether the user's statement in it is a correction.

    Only the user's own turns (:func:`spoken_turns`) can make a statement. What the user says before a question
    informs; a remark after it ("What's my wifi password? The guests are here now.") only when it states a value (a
    number, a name). A chunk that asks corrects nothing.
    """
    return classify_turns(spoken_turns(text.translate(_APOSTROPHES), speakers, exchanges))


def classify_turns(turns: Iterable[tuple[str, str]]) -> tuple[Worth, list[str], bool]:
    """:func:`classify` of turns already read."""
    person_info = model_info = asked = False
    asks: list[str] = []
    correction = False
    for label, turn in turns:
        if label in _NOT_SPEAKERS:
            continue
        model, asking = label not in {USER_LABEL, ""}, False
        for sentence in _sentences(turn.translate(_APOSTROPHES)):
            if _informative(sentence, model=model):
                if model:
                    model_info = True
                elif not asking or _VALUE.search(sentence):  # after a question, only a stated value informs
                    person_info = True
                    cue = bool(_CORRECTION.search(sentence)) and not ADDITION.search(sentence)
                    correction = correction or cue
            elif not model and is_question(sentence):
                asked = asking = True
                asks.extend(w for w in tokenize(sentence) if w not in asks and w not in _REQUEST_WORDS)
    if person_info:
        return "statement", asks, correction and not asked
    if model_info:
        return "claim", asks, False
    return ("question" if asked else "filler"), asks, False


def speakers_of(meta: dict[str, Any]) -> list[str] | None:
    """The speaker labels stored with a chunk (``None`` for a chunk stored without them)."""
    return decode_message_ids(meta["speakers"]) if meta.get("speakers") else None


def by_model(meta: dict[str, Any]) -> bool:
    """Whether a note was written by a model (``author="model"``): its text is the model's claim, not the user's."""
    return meta.get(AUTHOR_KEY) == MODEL_AUTHOR


def said_by(meta: dict[str, Any], text: str) -> list[tuple[str, str]] | None:
    """Who said what in a session chunk or note, from what is stored with it (``None`` for other chunks).

    A session chunk's turns are read by :func:`spoken_turns` with the chunk's stored speakers; a note is one turn,
    the user's, or the model's when a model wrote it (:func:`by_model`). The worth of a chunk and the relations
    found in it (:mod:`~langchain_session_rag.memory.relational`) both read turns here.
    """
    source = meta.get("source_type", "session")
    if source == "note":
        return [(MODEL_LABEL if by_model(meta) else USER_LABEL, text)]
    if source != "session":
        return None
    exchanges = meta.get("exchange_count")
    count = exchanges if isinstance(exchanges, int) and not isinstance(exchanges, bool) else 1
    return spoken_turns(text, speakers_of(meta), count)


def chunk_turns(meta: dict[str, Any], text: str) -> list[tuple[str, str]] | None:
    """:func:`said_by` of a note or a chunk where the unnamed user speaks (``None``: documents, named people)."""
    turns = said_by(meta, text)
    note = meta.get("source_type") == "note"
    return turns if turns is not None and (note or user_speaks(turns)) else None


def judge(meta: dict[str, Any], text: str) -> tuple[Worth, list[str], bool] | None:
    """A chunk's worth, asked words and correction flag from its text (``None``: not assessed)."""
    turns = chunk_turns(meta, text)
    return None if turns is None else judge_turns(meta, turns)


def judge_turns(meta: dict[str, Any], turns: Iterable[tuple[str, str]]) -> tuple[Worth, list[str], bool]:
    """:func:`judge` of a chunk's turns (:func:`chunk_turns`).

    A note is what its author chose to keep: the user's note is a statement unless it only asks; a model's note is
    its claim (never a correction of the user).
    """
    worth, asks, correction = classify_turns(turns)
    if meta.get("source_type") == "note":
        worth, correction = ("claim", False) if by_model(meta) else ("statement", correction)
    return worth, asks, correction


def assess(meta: dict[str, Any], text: str) -> bool:
    """Set ``worth`` (and ``asks``, ``correction``) of a session or note chunk from its text; whether they changed.

    Any values the metadata held (an import's, an older version's) are dropped first: they are always computed.
    Documents, core memory and conversations between named people (no unnamed user) are not assessed.
    """
    before = {key: meta.pop(key) for key in ASSESSED_KEYS if key in meta}
    judged = judge(meta, text)
    if judged is not None:
        worth, asks, correction = judged
        meta["worth"] = worth
        if asks:
            meta["asks"] = padded(asks)
        if correction:
            meta["correction"] = True
    return before != {key: meta[key] for key in ASSESSED_KEYS if key in meta}
