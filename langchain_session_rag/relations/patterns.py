"""``PatternExtractor``: entities and relations from chat text by documented patterns, without a model call.

Relations come only from what a person says (a line of the assistant is read for entities, not for relations),
from clauses that are neither questions, negations nor plans ("should we use Redis?", "we don't use Mongo", "I
might move to Berlin"). The patterns, each with the relation it gives (``S`` the subject, "I" or "we" being the
speaker):

========================================================  ====================================================
Pattern                                                   Relation
========================================================  ====================================================
S uses / is written in / is built with / relies on X      ``S uses X`` (a list "Go, Postgres and Redis": each)
S runs on / is deployed to / is hosted on X               ``S runs_on X``
S switched / moved / migrated (T) from X to Y             ``T or S uses Y`` (``runs_on`` for a platform,
                                                          ``lives_in`` for a person's move), closing X
S replaced X with Y; Y replaced X; X was replaced by Y    ``S uses Y``, closing X
S stopped using X / no longer uses X                      closes ``S uses X`` (no new relation)
X was caused by Y; the root cause of X was Y              ``X caused_by Y``
X was fixed by Y; S fixed X by Y                          ``X fixed_by Y``
S decided to / agreed to / went with / settled on X       ``S decided X``
S lives in / is based in / moved to X                     ``S lives_in X``
S works at / for, joined X; left X and joined Y           ``S works_at Y`` (closing X)
S has / owns / bought / adopted a T (called N)            ``S owns N`` (or T), ``T named N``
my T is called N                                          ``T named N`` and ``S owns N``
S's birthday is D; S was born on D                        ``S birthday D``
========================================================  ====================================================

Entities: the technologies of a gazetteer (about 250 names and their spellings), capitalised names (a sentence's
first word only when it is not a common opener), code identifiers (``snake_case``, ``camelCase``, ``dotted.names``,
backticked text), speakers, and the arguments of the relations above, typed by their role.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from langchain_session_rag.relations import phrases
from langchain_session_rag.relations.entities import mentions_in
from langchain_session_rag.relations.model import Extraction, Mention, Statement, safe_name
from langchain_session_rag.relations.vocabulary import (
    PLATFORMS,
    SPEAKER,
    TECHNOLOGIES,
    canonical,
    clean_name,
    technology,
)

_I = r"(?:i|we|i've|we've|i'm|we're|i'd|we'd|me|us|our team|my team|the team|our company|our startup)"
_SELF_WORDS: Final = frozenset({"i", "we", "i've", "we've", "i'm", "we're", "i'd", "we'd", "me", "us", "our team",
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
_OWNED: Final = PETS | frozenset("car bike motorcycle van truck boat house flat apartment cabin tesla laptop".split())
_PET_TYPE = "pet"


@dataclass
class _Turn:
    speaker: str
    found: list[Statement]
    mentions: list[Mention]
    last_subject: str | None = None
    """The last subject other than the speaker (what "it" refers to)."""
    last_any: str | None = None
    """The last subject (what a clause's missing subject is: "Ana works at Siemens and lives in Munich")."""


def _subject(raw: str, turn: _Turn) -> str | None:
    """Whom a subject phrase names: the speaker for "I"/"we", the last subject for "it", a kin's name."""
    text = raw.strip()
    low = text.lower()
    if not text:
        return turn.last_any or turn.speaker
    if low in _SELF_WORDS:
        return turn.speaker
    if low in _PRONOUNS:
        return turn.last_subject
    kin = _KIN.match(text)
    if kin:
        name = clean_name(text[kin.end() :])
        turn.mentions.append(Mention(name, "person"))
        return name
    return canonical(text) or None


def _add(turn: _Turn, subject: str | None, predicate: str, obj: str, closes: str | None = None) -> None:
    obj, old = canonical(safe_name(obj)), canonical(safe_name(closes)) if closes else None
    subject = safe_name(subject) if subject else subject
    if not subject or (not obj and not old) or obj.lower() == subject.lower():
        return
    if predicate in {"uses", "runs_on"} and _TIME_LIKE.match(obj):
        return  # "deploys on Fridays", "move standups to 10am": a schedule, not a technology
    turn.found.append(Statement(subject, predicate, obj, old or None))
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


def _where(text: str, subject: str | None) -> str | None:
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


def _negated(clause: str, at: int) -> bool:
    """Whether the verb at ``at`` is negated, asked or planned, within its part of the clause.

    ("I don't live in Paris anymore, I live in Rome" states Rome.)
    """
    start = max((m.end() for m in _SCOPE.finditer(clause, 0, at)), default=0)
    return bool(_NOT.search(clause[start:at])) or clause.rstrip().endswith("?")


def _target_predicate(subject: str, turn: _Turn, old: str, new: str, verb: str) -> str:
    names = {canonical(old).lower(), canonical(new).lower()} - {""}
    if names & PLATFORMS:
        return "runs_on"
    if names & {v.lower() for v in TECHNOLOGIES.values()}:
        return "uses"
    person = subject == turn.speaker or subject[:1].isupper() or any(m.name == subject for m in turn.mentions)
    if person and verb.lower().startswith(("mov", "reloc")) and new[:1].isupper():
        return "lives_in"
    return "uses"


_SWITCH = re.compile(
    r"\b(switch(?:ed|ing)?|mov(?:ed|ing|e)|migrat(?:ed|ing|e)|chang(?:ed|ing)|transitioned|went|ported|relocated)\b"
    r"(?=.*\bto\b)",
    re.IGNORECASE,
)


def _switch(clause: str, turn: _Turn) -> None:
    for verb in _SWITCH.finditer(clause):
        if _negated(clause, verb.start()):
            continue
        rest = clause[verb.end() :]
        move = re.match(r"\s*(?:(?P<thing>(?!from\b|to\b|over\b|back\b)[^,;]{1,60}?)\s+)?(?:from\s+(?P<old>.+?)\s+)?"
                        r"(?:(?:over|back)\s+)?(?:to|onto|into)\s+(?P<new>.+)", rest, re.IGNORECASE)  # fmt: skip
        if not move:
            continue
        if verb.group().lower().startswith(("went", "chang", "ported")) and not move.group("old"):
            continue  # "went to the gym" is no switch; "went from X to Y" is
        new, _ = phrases.phrase_after(move.group("new"), 0)
        old = phrases.phrase_after(move.group("old"), 0)[0] if move.group("old") else ""
        thing = move.group("thing")
        if not old:  # "moved to Lisbon from Porto"
            later = re.search(r"\bfrom\s+(.+)", move.group("new"), re.IGNORECASE)
            old = phrases.phrase_after(later.group(1), 0)[0] if later else ""
        subject = _subject(phrases.phrase_before(clause, verb.start()), turn)
        if thing and not thing.lower().startswith(("from", "to")):
            subject = _subject(phrases.phrase_after(thing, 0, max_words=5)[0], turn) or subject
        if subject and new:
            predicate = _target_predicate(subject, turn, old, new, verb.group())
            subject = _where(move.group("new"), subject) if predicate != "lives_in" else subject
            _add(turn, subject, predicate, new, old or None)


_REPLACE = (
    re.compile(r"\breplac(?:ed|ing)\s+(?P<old>.+?)\s+(?:with|by)\s+(?P<new>.+)", re.IGNORECASE),
    re.compile(
        r"(?P<old>\b[\w.+#'-]+(?: [\w.+#'-]+){0,4})\s+(?:was|were|got|has been|have been)\s+replaced\s+"
        r"(?:by|with)\s+(?P<new>.+)",
        re.IGNORECASE,
    ),
    re.compile(r"(?P<new>)\breplaced\s+(?P<old>.+)", re.IGNORECASE),
)


def _replace(clause: str, turn: _Turn) -> None:
    for index, pattern in enumerate(_REPLACE):
        for match in pattern.finditer(clause):
            if _negated(clause, match.start()):
                continue
            if index == 1:
                old = phrases.phrase_before(match.group("old"), len(match.group("old")))
            else:
                old = phrases.phrase_after(match.group("old"), 0)[0]
            after = index < 2  # noqa: PLR2004 - the third pattern names the new one before the verb
            new = (
                phrases.phrase_after(match.group("new"), 0)[0]
                if after
                else phrases.phrase_before(clause, match.start())
            )
            subject = _subject(phrases.phrase_before(clause, match.start()), turn) if index == 0 else turn.speaker
            _add(turn, subject or turn.speaker, _target_predicate(turn.speaker, turn, old, new, "replace"), new, old)
            return


def _stop(clause: str, turn: _Turn) -> None:
    for match in re.finditer(r"\b(?:stopped|quit|no longer|don'?t|do not|ditched|dropped)\s+(?:using\s+|use\s+)?",
                             clause, re.IGNORECASE):  # fmt: skip
        word = match.group().split()[0].lower()
        if word in {"don't", "dont", "do"} and "anymore" not in clause.lower():
            continue
        if word in {"ditched", "dropped"} or "us" in match.group().lower():
            old = phrases.phrase_after(clause, match.end())[0]
            subject = _subject(phrases.phrase_before(clause, match.start()), turn)
            if old and subject and canonical(old).lower() in {v.lower() for v in TECHNOLOGIES.values()}:
                turn.found.append(Statement(subject, "uses", "", canonical(old)))


_SIMPLE: tuple[tuple[str, re.Pattern[str], Callable[[str, int], list[str]]], ...] = (
    ("uses", re.compile(
        r"\b(?:uses|use|using|utili[sz]es?|relies on|rely on|(?:is|are|was|were) (?:written|built|implemented|"
        r"developed|coded) (?:in|with|on|using)|(?:is|are) (?:powered|backed) by|(?:written|built) (?:in|with))\b"
        r"(?!\s+to\b)", re.IGNORECASE), phrases.split_list),
    ("runs_on", re.compile(
        r"\b(?:runs?|running) (?:on|in)(?=\s+(?:k8s|kubernetes|docker|ecs|eks|gke|lambda)\b)"
        r"|\b(?:runs?|running) on|(?:is|are|was|were|gets|get|got)?\s*(?:deployed|hosted|served) (?:on|to|at|in)"
        r"|(?:deploy|deploys|host|hosts) (?:it |them |everything )?(?:on|to)\b", re.IGNORECASE),
     phrases.split_list),
    ("lives_in", re.compile(
        r"\b(?:live|lives|living|'m based|am based|is based|are based|based|reside|resides|relocated)\s+(?:in|to)\b",
        re.IGNORECASE), lambda c, e: [phrases.phrase_after(c, e)[0]]),
    ("works_at", re.compile(
        r"\b(?:work|works|working)\s+(?:at|for)\b|\b(?:am|is|'m|are) employed (?:at|by)\b|\bjoined\b(?=\s+[A-Z])"
        r"|\b(?:got a job|started a (?:new )?job|started working|started) at\b(?=\s+[A-Z])", re.IGNORECASE),
     lambda c, e: [phrases.phrase_after(c, e)[0]]),
    ("caused_by", re.compile(r"\b(?:(?:was|were|is|got|been)\s+)?caused by\b|\b(?:was|is|were) (?:due to|because of)\b"
                             r"|(?<=root cause)(?: of [^,;]+?)? (?:was|is)\b",
                             re.IGNORECASE), lambda c, e: [phrases.clause_after(c, e, max_words=8)]),
    ("fixed_by", re.compile(r"\b(?:(?:was|were|is|got|been)\s+)?(?:fixed|solved|resolved|patched)\s+(?:by|with|via)\b",
                            re.IGNORECASE), lambda c, e: [phrases.clause_after(c, e, max_words=8)]),
    ("decided", re.compile(r"\b(?:decided|agreed|chose|settled on|went with|opted for|opted to)(?:\s+to)?\b",
                           re.IGNORECASE), lambda c, e: [phrases.clause_after(c, e)]),
)  # fmt: skip


def _simple(clause: str, turn: _Turn) -> None:
    found = sorted(
        ((match, predicate, objects) for predicate, pattern, objects in _SIMPLE for match in pattern.finditer(clause)),
        key=lambda item: item[0].start(),
    )  # in the order they are said: a clause without a subject continues the one before it
    for match, predicate, objects in found:
        if _negated(clause, match.start()) or re.match(r"\s*(?:to|it)\b", clause[match.end() :]):
            continue
        if predicate == "uses" and re.search(r"\b(?:decided|agreed|chose|opted) to\s*$", clause[: match.start()]):
            continue  # "decided to use Terraform" is the decision (and may be a plan)
        before = phrases.phrase_before(clause, match.start())
        if predicate in {"caused_by", "fixed_by"}:  # the head of the clause: "the memory leak (in the worker)"
            root = re.search(r"root cause(?: of (?P<what>.+?))?\s*$", clause[: match.start()], re.IGNORECASE)
            head = phrases.phrase_after(clause[: match.start()], 0)[0]
            before = (root.group("what") or "root cause") if root else head or before
        subject = _subject(before, turn)
        for obj in objects(clause, match.end()):
            if predicate == "works_at" and not obj[:1].isupper():
                continue
            _add(turn, subject, predicate, obj)


_NAMED = re.compile(
    r"\b(?P<who>my|our|his|her|their|the)\s+(?P<thing>(?:new\s+|little\s+|old\s+)?[a-z][\w-]*(?:\s+[a-z][\w-]*)?)\s+"
    r"(?:is|was|'s)\s+(?:called|named)\s+(?P<name>[\w.'-]+(?:\s+[A-Z][\w.'-]*)?)", re.IGNORECASE)  # fmt: skip
_OWN = re.compile(
    r"\b(?:have|has|own|owns|got|bought|adopted|rescued|drive|drives)\s+(?:a|an|two|three|one|another)?\s*"
    r"(?P<thing>(?:new\s+|little\s+|used\s+)?[\w-]+(?:\s+[\w-]+){0,2}?)"
    r"(?:\s+(?:called|named)\s+(?P<name>[A-Z][\w.'-]*(?:\s+[A-Z][\w.'-]*)?)|(?=[\s,.;!?]|$))")  # fmt: skip


_PET_NAMED = re.compile(r"\b(?:my|our)\s+(?P<pet>[a-z]+)\s+(?P<name>[A-Z][\w'-]+)")


def _owns(clause: str, turn: _Turn) -> None:
    for match in _PET_NAMED.finditer(clause):  # "our dog Mochi"
        if match.group("pet").lower() in PETS and not _negated(clause, match.start()):
            turn.mentions.append(Mention(match.group("name"), _PET_TYPE))
            _add(turn, turn.speaker, "owns", match.group("name"))
    for match in _NAMED.finditer(clause):
        if _negated(clause, match.start()):
            continue
        thing, name = clean_name(match.group("thing")), clean_name(match.group("name"))
        _add(turn, thing, "named", name)
        kind = _PET_TYPE if thing.split()[-1].lower() in PETS else "thing"
        turn.mentions.append(Mention(name, kind))
        if match.group("who").lower() in {"my", "our"}:
            _add(turn, turn.speaker, "owns", name)
    for match in _OWN.finditer(clause):
        if _negated(clause, match.start()) or _NAMED.search(clause):
            continue
        thing = clean_name(match.group("thing"))
        subject = _subject(phrases.phrase_before(clause, match.start()), turn)
        verb = match.group().split()[0].lower()
        head = thing.split()[-1].lower() if thing else ""
        if match.group("name"):
            name = clean_name(match.group("name"))
            _add(turn, subject, "owns", name)
            _add(turn, head, "named", name)
            turn.mentions.append(Mention(name, _PET_TYPE if head in PETS else "thing"))
        elif head in _OWNED or (verb in {"own", "owns", "bought"} and thing[:1].isupper()):
            _add(turn, subject, "owns", thing)


_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DATE = rf"(?:{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}|\d{{4}}-\d\d-\d\d)"
_BIRTHDAY = re.compile(
    rf"(?P<who>\bmy\s+[a-z]+?'?s|\bmy|\bhis|\bher|\b[A-Z][a-z]+(?:'s|’s))\s+birthday\s+(?:is|was|'s)\s+(?:on\s+)?(?:the\s+)?"
    rf"(?P<date>{_DATE})|\b(?P<who2>I|[A-Z][a-z]+)\s+(?:was|were\s+born|turns\s+\d+)\s+on\s+(?:the\s+)?"
    rf"(?P<date2>{_DATE})",
    re.IGNORECASE,
)


def _birthday(clause: str, turn: _Turn) -> None:
    for match in _BIRTHDAY.finditer(clause):
        who = (match.group("who") or match.group("who2") or "").replace("’", "'")
        date = match.group("date") or match.group("date2")
        subject: str | None = turn.speaker
        if who.lower().startswith("my ") and who.lower().split()[1].rstrip("'s") != "":
            subject = who.split()[1].replace("'", "").removesuffix("s")
        elif who.lower() in {"my", "i"}:
            subject = turn.speaker
        elif who.lower() in {"his", "her"}:
            subject = turn.last_subject
        else:
            subject = who.removesuffix("'s")
            turn.mentions.append(Mention(subject, "person"))
        _add(turn, subject, "birthday", date)


_IS_TECH = re.compile(r"\b(?:is|are|'s)\s+(?:all\s+)?(?:in|on|written in|built on)?\s*", re.IGNORECASE)
_FIX_BY = re.compile(
    r"\b(?:fixed|solved|resolved|sorted)\s+(?P<what>.+?)\s+by\s+(?P<how>.+)"
    r"|^(?P<how2>(?:\w+ing)\b.+?)\s+(?:fixed|solved|resolved)\s+(?P<what2>.+)", re.IGNORECASE)  # fmt: skip
_SWAP = re.compile(r"\b(?:ditched|swapped|traded|dropped)\s+(?P<old>.+?)\s+for\s+(?P<new>.+)", re.IGNORECASE)
_WRITE = re.compile(
    r"\b(?:write|writes|writing|wrote|code|codes)\s+(?:(?:\w+\s+){0,2}?in\s+|)"
    r"|\b(?:stores?|storing|keeps?|saves?|persists?)\s+(?:\w+\s+){0,3}?(?:in|on|into)\s+"
    r"|\bdeploy(?:s|ed|ing)?\s+(?:everything\s+|it\s+|them\s+)?(?:with|using|via)\s+",
    re.IGNORECASE,
)
_NAME_THE = re.compile(r"\bnamed\s+(?:the|our|my|his|her|their)\s+(?P<thing>[a-z][\w -]*?)\s+(?P<name>\S+)$")
_JOB_AT = re.compile(r"\b(?:(?:am|is|'s|'m|are)\s+an?\s+[\w -]{1,30}?|got the job|joined the [\w -]{1,30}?)\s+at\s+"
                     r"(?=[A-Z])", re.IGNORECASE)  # fmt: skip


def _more(clause: str, turn: _Turn) -> None:
    """Copulas naming a technology, fixes told the other way round, swaps, languages written, jobs, names given."""
    for match in _IS_TECH.finditer(clause):
        obj = phrases.phrase_after(clause, match.end())[0]
        if obj and technology(obj.split()[0], cased=obj[:1].isupper()) and not _negated(clause, match.start()):
            subject = _subject(phrases.phrase_before(clause, match.start()).removesuffix("'s"), turn)
            if subject and subject != turn.speaker:
                for item in phrases.split_list(clause, match.end()):
                    if technology(item.split()[0], cased=item[:1].isupper()):
                        _add(turn, subject, "uses", item)


def _fix_or_swap(clause: str, turn: _Turn) -> None:
    """Fixes ("we fixed X by Y", "Y solved X") and swaps ("ditched X for Y")."""
    fix = _FIX_BY.search(clause)
    if fix and not _negated(clause, fix.start()):
        what = phrases.phrase_after(fix.group("what") or fix.group("what2"), 0)[0]
        how = phrases.clause_after(fix.group("how") or fix.group("how2"), 0, max_words=10)
        _add(turn, canonical(what) or None, "fixed_by", how)
    swap = _SWAP.search(clause)
    if swap and not _negated(clause, swap.start()):
        new, old = phrases.phrase_after(swap.group("new"), 0)[0], phrases.phrase_after(swap.group("old"), 0)[0]
        subject = _where(swap.group("new"), _subject(phrases.phrase_before(clause, swap.start()), turn))
        _add(turn, subject, _target_predicate(turn.speaker, turn, old, new, "swap"), new, old)


def _written_named_job(clause: str, turn: _Turn) -> None:
    """Languages written ("I write Rust"), stores ("keeps events in ClickHouse"), names, jobs ("a nurse at X")."""
    for match in _WRITE.finditer(clause):
        items = [i for i in phrases.split_list(clause, match.end()) if technology(i.split()[0], cased=i[:1].isupper())]
        for item in items if not _negated(clause, match.start()) else []:
            _add(turn, _subject(phrases.phrase_before(clause, match.start()), turn), "uses", item)
    named = _NAME_THE.search(clause.rstrip(" .!😊"))
    if named:
        _add(turn, clean_name(named.group("thing")), "named", clean_name(named.group("name")))
    job = _JOB_AT.search(clause)
    if job and not _negated(clause, job.start()):
        _add(turn, _subject(phrases.phrase_before(clause, job.start()), turn), "works_at",
             phrases.phrase_after(clause, job.end())[0])  # fmt: skip


_CODE_BLOCK = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_NAME = r"[\w+#-]+(?:\.[\w+#-]+)*"
_CORRECTION = re.compile(r"\b(?:actually|correction|sorry|i mean|i meant|not anymore|these days|now)\b", re.IGNORECASE)
_INSTEAD = re.compile(rf"(?P<new>{_NAME}),?\s+(?:not|instead of|rather than)\s+(?P<old>{_NAME})", re.IGNORECASE)


def _instead(clause: str, turn: _Turn) -> None:
    """A relation just found closes the technology named after it ("uses Redis, not Memcached")."""
    if not _CORRECTION.search(clause):
        return  # "we use Postgres, not MySQL" says nothing of a MySQL before; "actually ..., not MySQL" corrects it
    for match in _INSTEAD.finditer(clause):
        new, old = (technology(match.group(g), cased=True) for g in ("new", "old"))
        for n, st in enumerate(turn.found):
            if new and old and st.object == new and st.closes is None:
                turn.found[n] = Statement(st.subject, st.predicate, st.object, old)


_RULES = (_more, _switch, _replace, _stop, _simple, _owns, _birthday, _fix_or_swap, _written_named_job, _instead)
_LEFT = re.compile(
    r"\bleft\s+(?P<old>[A-Z][\w.&' -]*?)\s+(?:and|to)\s+join(?:ed)?\s+(?P<new>[A-Z][\w.&'-]*(?:\s+[A-Z][\w.&'-]*)*)"
)


class PatternExtractor:
    """Entities and relations by the patterns of this module's docstring: no model, about 0.1–0.3 ms an exchange.

    Example:
        .. code-block:: python

            from langchain_session_rag.relations import PatternExtractor

            found = PatternExtractor().extract("User: We moved the analytics service from PostgreSQL to ClickHouse.")
            print(found.relations[0])
            # Statement(subject='analytics service', predicate='uses', object='ClickHouse', closes='PostgreSQL')
    """

    def extract(self, text: str, *, speaker: str = SPEAKER) -> Extraction:
        """The entities and relations stated in ``text`` (``speaker``: who "I" is in an unlabelled turn)."""
        found: list[Statement] = []
        mentions: list[Mention] = []
        for label, body in phrases.turns(text):
            who = phrases.speaker_name(label, speaker)
            if label is not None and who is not None and who != speaker:
                mentions.append(Mention(who, "person"))
            mentions.extend(mentions_in(body))
            if who is None:
                continue
            turn = _Turn(who, [], mentions)
            for clause in phrases.clauses(_CODE_BLOCK.sub(" ", body)):  # code is not what someone says
                left = _LEFT.search(clause)
                if left and not _negated(clause, left.start()):
                    subject = _subject(phrases.phrase_before(clause, left.start()), turn)
                    _add(turn, subject, "works_at", clean_name(left.group("new")), clean_name(left.group("old")))
                    continue
                for rule in _RULES:
                    rule(clause, turn)
            found.extend(turn.found)
        return Extraction(_unique_mentions(mentions), tuple(dict.fromkeys(found)))


def _unique_mentions(mentions: list[Mention]) -> tuple[Mention, ...]:
    """One mention per name (the most specific type seen), in first-seen order."""
    best: dict[str, Mention] = {}
    for mention in mentions:
        if not mention.name or mention.name.lower() in _SELF_WORDS | {SPEAKER}:
            continue
        held = best.get(mention.name)
        if held is None or (held.type == "thing" and mention.type != "thing"):
            best[mention.name] = mention
    return tuple(best.values())
