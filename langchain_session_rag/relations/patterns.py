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

from langchain_session_rag.relations import phrases
from langchain_session_rag.relations.entities import mentions_in
from langchain_session_rag.relations.model import Extraction, Mention, Statement
from langchain_session_rag.relations.statements import (
    OWNED,
    PET_TYPE,
    PETS,
    SELF_WORDS,
    Turn,
    add,
    negated,
    subject_of,
    target_predicate,
    where_of,
)
from langchain_session_rag.relations.vocabulary import (
    SPEAKER,
    TECHNOLOGIES,
    canonical,
    clean_name,
    technology,
)

_SWITCH = re.compile(
    r"\b(switch(?:ed|ing)?|mov(?:ed|ing|e)|migrat(?:ed|ing|e)|chang(?:ed|ing)|transitioned|went|ported|relocated)\b"
    r"(?=.*\bto\b)",
    re.IGNORECASE,
)


def _switch(clause: str, turn: Turn) -> None:
    for verb in _SWITCH.finditer(clause):
        if negated(clause, verb.start()):
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
        subject = subject_of(phrases.phrase_before(clause, verb.start()), turn)
        if thing and not thing.lower().startswith(("from", "to")):
            subject = subject_of(phrases.phrase_after(thing, 0, max_words=5)[0], turn) or subject
        if subject and new:
            predicate = target_predicate(subject, turn, old, new, verb.group())
            subject = where_of(move.group("new"), subject) if predicate != "lives_in" else subject
            add(turn, subject, predicate, new, old or None)


_REPLACE = (
    re.compile(r"\breplac(?:ed|ing)\s+(?P<old>.+?)\s+(?:with|by)\s+(?P<new>.+)", re.IGNORECASE),
    re.compile(
        r"(?P<old>\b[\w.+#'-]+(?: [\w.+#'-]+){0,4})\s+(?:was|were|got|has been|have been)\s+replaced\s+"
        r"(?:by|with)\s+(?P<new>.+)",
        re.IGNORECASE,
    ),
    re.compile(r"(?P<new>)\breplaced\s+(?P<old>.+)", re.IGNORECASE),
)


def _replace(clause: str, turn: Turn) -> None:
    for index, pattern in enumerate(_REPLACE):
        for match in pattern.finditer(clause):
            if negated(clause, match.start()):
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
            subject = subject_of(phrases.phrase_before(clause, match.start()), turn) if index == 0 else turn.speaker
            add(turn, subject or turn.speaker, target_predicate(turn.speaker, turn, old, new, "replace"), new, old)
            return


def _stop(clause: str, turn: Turn) -> None:
    for match in re.finditer(r"\b(?:stopped|quit|no longer|don'?t|do not|ditched|dropped)\s+(?:using\s+|use\s+)?",
                             clause, re.IGNORECASE):  # fmt: skip
        word = match.group().split()[0].lower()
        if word in {"don't", "dont", "do"} and "anymore" not in clause.lower():
            continue
        if word in {"ditched", "dropped"} or "us" in match.group().lower():
            old = phrases.phrase_after(clause, match.end())[0]
            subject = subject_of(phrases.phrase_before(clause, match.start()), turn)
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


def _simple(clause: str, turn: Turn) -> None:
    found = sorted(
        ((match, predicate, objects) for predicate, pattern, objects in _SIMPLE for match in pattern.finditer(clause)),
        key=lambda item: item[0].start(),
    )  # in the order they are said: a clause without a subject continues the one before it
    for match, predicate, objects in found:
        if negated(clause, match.start()) or re.match(r"\s*(?:to|it)\b", clause[match.end() :]):
            continue
        if predicate == "uses" and re.search(r"\b(?:decided|agreed|chose|opted) to\s*$", clause[: match.start()]):
            continue  # "decided to use Terraform" is the decision (and may be a plan)
        before = phrases.phrase_before(clause, match.start())
        if predicate in {"caused_by", "fixed_by"}:  # the head of the clause: "the memory leak (in the worker)"
            root = re.search(
                r"root cause(?: of (?P<what>.+?))?\s*(?:was|is)?\s*$", clause[: match.end()], re.IGNORECASE
            )
            head = phrases.phrase_after(clause[: match.start()], 0)[0]
            before = (root.group("what") or "root cause") if root else head or before
        subject = subject_of(before, turn)
        items = objects(clause, match.end())
        group = turn.next_group() if len(items) > 1 else 0
        for obj in items:
            if predicate == "works_at" and not obj[:1].isupper():
                continue
            add(turn, subject, predicate, obj, group=group)


_NAMED = re.compile(
    r"\b(?P<who>my|our|his|her|their|the)\s+(?P<thing>(?:new\s+|little\s+|old\s+)?[a-z][\w-]*(?:\s+[a-z][\w-]*)?)\s+"
    r"(?:is|was|'s)\s+(?:called|named)\s+(?P<name>[\w.'-]+(?:\s+[A-Z][\w.'-]*)?)", re.IGNORECASE)  # fmt: skip
_OWN = re.compile(
    r"\b(?:have|has|own|owns|got|bought|adopted|rescued|drive|drives)\s+(?:a|an|two|three|one|another)?\s*"
    r"(?P<thing>(?:new\s+|little\s+|used\s+)?[\w-]+(?:\s+[\w-]+){0,2}?)"
    r"(?:\s+(?:called|named)\s+(?P<name>[A-Z][\w.'-]*(?:\s+[A-Z][\w.'-]*)?)|(?=[\s,.;!?]|$))")  # fmt: skip


_PET_NAMED = re.compile(r"\b(?:my|our)\s+(?P<pet>[a-z]+)\s+(?P<name>[A-Z][\w'-]+)")


def _owns(clause: str, turn: Turn) -> None:
    for match in _PET_NAMED.finditer(clause):  # "our dog Mochi"
        if match.group("pet").lower() in PETS and not negated(clause, match.start()):
            turn.mentions.append(Mention(match.group("name"), PET_TYPE))
            add(turn, turn.speaker, "owns", match.group("name"))
    for match in _NAMED.finditer(clause):
        if negated(clause, match.start()):
            continue
        thing, name = clean_name(match.group("thing")), clean_name(match.group("name"))
        add(turn, thing, "named", name)
        kind = PET_TYPE if thing.split()[-1].lower() in PETS else "thing"
        turn.mentions.append(Mention(name, kind))
        if match.group("who").lower() in {"my", "our"}:
            add(turn, turn.speaker, "owns", name)
    for match in _OWN.finditer(clause):
        if negated(clause, match.start()) or _NAMED.search(clause):
            continue
        thing = clean_name(match.group("thing"))
        subject = subject_of(phrases.phrase_before(clause, match.start()), turn)
        verb = match.group().split()[0].lower()
        head = thing.split()[-1].lower() if thing else ""
        if match.group("name"):
            name = clean_name(match.group("name"))
            add(turn, subject, "owns", name)
            add(turn, head, "named", name)
            turn.mentions.append(Mention(name, PET_TYPE if head in PETS else "thing"))
        elif head in OWNED or (verb in {"own", "owns", "bought"} and thing[:1].isupper()):
            add(turn, subject, "owns", thing)


_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DATE = rf"(?:{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}|\d{{4}}-\d\d-\d\d)"
_BIRTHDAY = re.compile(
    rf"(?P<who>\bmy\s+[a-z]+?'?s|\bmy|\bhis|\bher|\b[A-Z][a-z]+(?:'s|’s))\s+birthday\s+(?:is|was|'s)\s+(?:on\s+)?(?:the\s+)?"
    rf"(?P<date>{_DATE})|\b(?P<who2>I|[A-Z][a-z]+)\s+(?:was|were\s+born|turns\s+\d+)\s+on\s+(?:the\s+)?"
    rf"(?P<date2>{_DATE})",
    re.IGNORECASE,
)


def _birthday(clause: str, turn: Turn) -> None:
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
        add(turn, subject, "birthday", date)


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


def _more(clause: str, turn: Turn) -> None:
    """Copulas naming a technology, fixes told the other way round, swaps, languages written, jobs, names given."""
    for match in _IS_TECH.finditer(clause):
        obj = phrases.phrase_after(clause, match.end())[0]
        if obj and technology(obj.split()[0], cased=obj[:1].isupper()) and not negated(clause, match.start()):
            subject = subject_of(phrases.phrase_before(clause, match.start()).removesuffix("'s"), turn)
            if subject and subject != turn.speaker:
                group = turn.next_group()
                for item in phrases.split_list(clause, match.end()):
                    if technology(item.split()[0], cased=item[:1].isupper()):
                        add(turn, subject, "uses", item, group=group)


def _fix_or_swap(clause: str, turn: Turn) -> None:
    """Fixes ("we fixed X by Y", "Y solved X") and swaps ("ditched X for Y")."""
    fix = _FIX_BY.search(clause)
    if fix and not negated(clause, fix.start()):
        what = phrases.phrase_after(fix.group("what") or fix.group("what2"), 0)[0]
        how = phrases.clause_after(fix.group("how") or fix.group("how2"), 0, max_words=10)
        add(turn, canonical(what) or None, "fixed_by", how)
    swap = _SWAP.search(clause)
    if swap and not negated(clause, swap.start()):
        new, old = phrases.phrase_after(swap.group("new"), 0)[0], phrases.phrase_after(swap.group("old"), 0)[0]
        subject = where_of(swap.group("new"), subject_of(phrases.phrase_before(clause, swap.start()), turn))
        add(turn, subject, target_predicate(turn.speaker, turn, old, new, "swap"), new, old)


def _written_named_job(clause: str, turn: Turn) -> None:
    """Languages written ("I write Rust"), stores ("keeps events in ClickHouse"), names, jobs ("a nurse at X")."""
    for match in _WRITE.finditer(clause):
        items = [i for i in phrases.split_list(clause, match.end()) if technology(i.split()[0], cased=i[:1].isupper())]
        for item in items if not negated(clause, match.start()) else []:
            add(turn, subject_of(phrases.phrase_before(clause, match.start()), turn), "uses", item)
    named = _NAME_THE.search(clause.rstrip(" .!😊"))
    if named:
        add(turn, clean_name(named.group("thing")), "named", clean_name(named.group("name")))
    job = _JOB_AT.search(clause)
    if job and not negated(clause, job.start()):
        add(turn, subject_of(phrases.phrase_before(clause, job.start()), turn), "works_at",
             phrases.phrase_after(clause, job.end())[0])  # fmt: skip


_CODE_BLOCK = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_NAME = r"[\w+#-]+(?:\.[\w+#-]+)*"
_CORRECTION = re.compile(r"\b(?:actually|correction|sorry|i mean|i meant|not anymore|these days|now)\b", re.IGNORECASE)
_INSTEAD = re.compile(rf"(?P<new>{_NAME}),?\s+(?:not|instead of|rather than)\s+(?P<old>{_NAME})", re.IGNORECASE)


def _instead(clause: str, turn: Turn) -> None:
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
            turn = Turn(who, [], mentions)
            for clause in phrases.clauses(_CODE_BLOCK.sub(" ", body)):  # code is not what someone says
                left = _LEFT.search(clause)
                if left and not negated(clause, left.start()):
                    subject = subject_of(phrases.phrase_before(clause, left.start()), turn)
                    add(turn, subject, "works_at", clean_name(left.group("new")), clean_name(left.group("old")))
                    continue
                for rule in _RULES:
                    rule(clause, turn)
            found.extend(turn.found)
        return Extraction(unique_mentions(mentions), tuple(dict.fromkeys(found)))


def unique_mentions(mentions: list[Mention]) -> tuple[Mention, ...]:
    """One mention per name (the most specific type seen), in first-seen order; the speaker's own words left out."""
    best: dict[str, Mention] = {}
    for mention in mentions:
        if not mention.name or mention.name.lower() in SELF_WORDS | {SPEAKER}:
            continue
        held = best.get(mention.name)
        if held is None or (held.type == "thing" and mention.type != "thing"):
            best[mention.name] = mention
    return tuple(best.values())
