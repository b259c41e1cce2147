"""What the pattern rules share: a speaker's turn, whom a subject names, how a relation is added, negation."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from langchain_session_rag.relations.model import Mention, Statement, safe_name
from langchain_session_rag.relations.vocabulary import PLATFORMS, TECHNOLOGIES, canonical, clean_name, technology

SELF_WORDS: Final = frozenset({"i", "we", "i've", "we've", "i'm", "we're", "i'd", "we'd", "me", "us", "our team",
                                "my team", "the team", "our company", "our startup", "team", "myself"})  # fmt: skip
_PRONOUNS: Final = frozenset({"it", "that", "this", "they", "he", "she", "which", "those", "them"})
_KIN = re.compile(
    r"^(?i:my|our|his|her)\s+(?:little |older |younger |big |best |new )?(?:sister|brother|wife|husband|partner|friend"
    r"|mom|mum|mother|dad|father|boss|manager|colleague|coworker|co-worker|son|daughter|cousin|aunt|uncle|girlfriend"
    r"|boyfriend|roommate|flatmate|neighbou?r|grandma|grandpa|fianc[eé]e?)\s+(?=[A-Z])"
)
_NOT = re.compile(
    r"\b(?:don'?t|do not|doesn'?t|does not|didn'?t|did not|never|not|won'?t|wouldn'?t|might|may|could|should|"
    r"would|if|whether|maybe|perhaps|considering|consider|thinking (?:about|of)|plan(?:ning|s)? to|want(?:s|ed)? to|"
    r"going to|gonna|hope to|hoping to|wish|unless|instead of|about to|trying to|try to|isn'?t|aren'?t|wasn'?t|"
    r"weren'?t|can'?t|cannot|haven'?t|hasn'?t|what if|how about|why not|suggest|recommend|no longer|stopped|"
    r"halfway|in the middle of)\b",
    re.IGNORECASE,
)
PETS: Final = frozenset("dog cat puppy kitten parrot hamster rabbit bunny turtle tortoise fish goldfish horse pony "
                        "snake lizard gecko ferret guinea pig budgie bird chicken".split())  # fmt: skip
OWNED: Final = PETS | frozenset("car bike motorcycle van truck boat house flat apartment cabin tesla laptop".split())
PET_TYPE = "pet"


@dataclass
class Turn:
    """One speaker's turn as the rules read it: who "I" is, what was found so far, and whom "it" names."""

    speaker: str
    found: list[Statement]
    mentions: list[Mention]
    last_subject: str | None = None
    """The last subject other than the speaker (what "it" refers to)."""
    last_any: str | None = None
    """The last subject (what a clause's missing subject is: "Ana works at Siemens and lives in Munich")."""
    groups: int = 0

    def next_group(self) -> int:
        """A new list group number (see ``Statement.group``)."""
        self.groups += 1
        return self.groups


def subject_of(raw: str, turn: Turn) -> str | None:
    """Whom a subject phrase names: the speaker for "I"/"we", the last subject for "it", a kin's name."""
    text = raw.strip()
    low = text.lower()
    if not text:
        return turn.last_any or turn.speaker
    if low in SELF_WORDS:
        return turn.speaker
    if low in _PRONOUNS:
        return turn.last_subject
    kin = _KIN.match(text)
    if kin:
        name = clean_name(text[kin.end() :])
        turn.mentions.append(Mention(name, "person"))
        return name
    return canonical(text) or None


def add(
    turn: Turn, subject: str | None, predicate: str, obj: str, closes: str | None = None, *, group: int = 0
) -> None:
    """Add a relation found in ``turn`` (names cleaned; a schedule is no technology), and type its arguments."""
    obj, old = canonical(safe_name(obj)), canonical(safe_name(closes)) if closes else None
    subject = safe_name(subject) if subject else subject
    if not subject or (not obj and not old) or obj.lower() == subject.lower():
        return
    if predicate in {"uses", "runs_on"} and _TIME_LIKE.match(obj):
        return  # "deploys on Fridays", "move standups to 10am": a schedule, not a technology
    turn.found.append(Statement(subject, predicate, obj, old or None, group))
    turn.last_subject = subject if subject != turn.speaker else turn.last_subject
    turn.last_any = subject
    typed = {"uses": "technology", "runs_on": "technology", "lives_in": "place", "works_at": "organisation",
             "birthday": "date"}  # fmt: skip
    if predicate in typed:
        for name in (obj, old):
            if name:
                turn.mentions.append(Mention(name, typed[predicate]))
    if predicate in {"uses", "runs_on"} and subject != turn.speaker:
        turn.mentions.append(Mention(subject, "project"))
    elif predicate in {"lives_in", "works_at", "birthday", "owns"} and subject != turn.speaker:
        turn.mentions.append(Mention(subject, "person"))


_WHERE = re.compile(
    r"\b(?:in|on|for)\s+(?P<whose>the|our|my|his|her|their)\s+(?P<what>[\w.-]+(?: [\w.-]+)?)\s*(?:[,.;!]|$)"
)
_TIME_LIKE = re.compile(
    r"^(?:\d[\d:.apm ]*|(?:mon|tues|wednes|thurs|fri|satur|sun)days?|mornings?|evenings?|weekends?|tomorrow|tonight)$",
    re.IGNORECASE,
)


def where_of(text: str, subject: str | None) -> str | None:
    """Where a change was made ("on the dashboard": the dashboard), unless it is a person's ("on her laptop")."""
    found = _WHERE.search(text)
    if (
        not found
        or found.group("whose").lower() in {"his", "her", "their"}
        or technology(found.group("what"), cased=True)
    ):
        return subject
    return canonical(found.group("what"))


_SCOPE = re.compile(r"[,;]|\bbut\b|\bnow\b", re.IGNORECASE)


def negated(clause: str, at: int) -> bool:
    """Whether the verb at ``at`` is negated, asked or planned, within its part of the clause.

    ("I don't live in Paris anymore, I live in Rome" states Rome.)
    """
    start = max((m.end() for m in _SCOPE.finditer(clause, 0, at)), default=0)
    return bool(_NOT.search(clause[start:at])) or clause.rstrip().endswith("?")


def target_predicate(subject: str, turn: Turn, old: str, new: str, verb: str) -> str:
    """What a switch or a move from ``old`` to ``new`` changes: ``runs_on``, ``uses`` or ``lives_in``."""
    names = {canonical(old).lower(), canonical(new).lower()} - {""}
    if names & PLATFORMS:
        return "runs_on"
    if names & {v.lower() for v in TECHNOLOGIES.values()}:
        return "uses"
    person = subject == turn.speaker or subject[:1].isupper() or any(m.name == subject for m in turn.mentions)
    if person and verb.lower().startswith(("mov", "reloc")) and new[:1].isupper():
        return "lives_in"
    return "uses"
