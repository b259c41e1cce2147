"""Question analysis for the semantic cache: near-miss guards, volatility, context dependence.

A semantic cache hit needs two questions that *mean the same*. Cosine similarity of sentence embeddings
cannot see the small words that reverse a question ("km to miles" / "miles to km", "log in" / "log out",
"my name" / "your name", "Alice owes Bob" / "Bob owes Alice"), so every candidate that passes the
similarity threshold is checked here, and any objection makes it a miss. The checks, in order:

``number``     the numbers (digits and number words) differ;
``negation``   one question is negated and the other is not;
``entity``     a name or identifier of one question (capitalised, ALLCAPS, CamelCase, with digits) is not a
               word of the other (case-insensitive, so "france" matches "France");
``person``     the people differ: "my" vs "your", "I" vs "you", "he" vs "she";
``opposite``   a word of an opposing pair is swapped for its partner: in/out, up/down, on/off, login/logout,
               enable/disable, buy/sell, before/after, import/export, ...;
``direction``  the same words in another order where order matters: around from/to/into/than/vs/owes/
               converts/migrates/..., or two names swapped ("Alice called Bob" / "Bob called Alice");
``content``    a topic word of one question has no counterpart in the other: the same stem, or (when the
               cache gives a word-similarity function) a word whose embedding is close enough.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass

from langchain_session_rag.lexical import stem

__all__ = [
    "GuardResult",
    "content_words",
    "guard_mismatch",
    "is_context_dependent",
    "is_volatile",
    "normalise_question",
]

_WORD = re.compile(r"[A-Za-z0-9]+(?:\+\+|#(?![A-Za-z0-9]))?(?:'[a-z]+)?")
_ARROW = re.compile(r"\s*(?:->|→|=>|⇒)\s*")
_NEGATIONS = frozenset({"not", "no", "never", "without", "none", "nobody", "nothing", "neither", "nor", "cannot"})
_NUMBER_WORDS = frozenset(
    (
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred "
        "thousand million billion first second third fourth fifth sixth seventh eighth ninth tenth half "
        "double twice"
    ).split()
)
# Words that carry no topic: question scaffolding, auxiliaries, politeness, filler.
_FILLER = frozenset(
    (
        "a an the and or but if of to in on at by for with about as is are was were be been being do does did "
        "done have has had having it its this that these those what which who whom whose when where why how "
        "can could would should will shall may might must please tell explain show give know let way best "
        "good proper correct right possible able get getting use using want need like some any just really "
        "actually exactly also again there here thing something anything someone somebody kind sort type one "
        "ones am s t d ll ve re m hi hello hey thanks thank ok okay so then than into from up out over "
        "onto off down away back via per vs versus through each every located exactly"
    ).split()
)
# Persons: a question about "my" thing is not a question about "your" thing.
_PERSONS = {
    # person and role: "I owe him" is not "he owes me"
    **dict.fromkeys(["i"], "1:subject"),
    **dict.fromkeys(["me", "myself"], "1:object"),
    **dict.fromkeys(["my", "mine"], "1:own"),
    **dict.fromkeys(["we"], "1p:subject"),
    **dict.fromkeys(["us", "ourselves"], "1p:object"),
    **dict.fromkeys(["our", "ours"], "1p:own"),
    **dict.fromkeys(["you", "yourself", "yourselves"], "2"),
    **dict.fromkeys(["your", "yours"], "2:own"),
    **dict.fromkeys(["he"], "3m:subject"),
    **dict.fromkeys(["him", "himself"], "3m:object"),
    **dict.fromkeys(["his"], "3m:own"),
    **dict.fromkeys(["she"], "3f:subject"),
    **dict.fromkeys(["herself"], "3f:object"),
    **dict.fromkeys(["her", "hers"], "3f:own"),
}
# Opposing words: a question holding one side where the other holds the partner is another question.
_OPPOSITES = [
    ("in", "out"),
    ("into", "out"),
    ("up", "down"),
    ("on", "off"),
    ("login", "logout"),
    ("signin", "signup"),
    ("enable", "disable"),
    ("start", "stop"),
    ("open", "close"),
    ("increase", "decrease"),
    ("add", "remove"),
    ("buy", "sell"),
    ("import", "export"),
    ("encrypt", "decrypt"),
    ("install", "uninstall"),
    ("upload", "download"),
    ("push", "pull"),
    ("min", "max"),
    ("minimum", "maximum"),
    ("before", "after"),
    ("above", "below"),
    ("over", "under"),
    ("more", "less"),
    ("more", "fewer"),
    ("most", "least"),
    ("best", "worst"),
    ("cheap", "expensive"),
    ("fast", "slow"),
    ("faster", "slower"),
    ("high", "low"),
    ("higher", "lower"),
    ("first", "last"),
    ("lend", "borrow"),
    ("win", "lose"),
    ("send", "receive"),
    ("allow", "deny"),
    ("accept", "reject"),
    ("lock", "unlock"),
    ("mount", "unmount"),
    ("connect", "disconnect"),
    ("subscribe", "unsubscribe"),
    ("true", "false"),
    ("pros", "cons"),
    ("encode", "decode"),
    ("compress", "decompress"),
    ("zip", "unzip"),
    ("inside", "outside"),
    ("internal", "external"),
    ("public", "private"),
    ("north", "south"),
    ("east", "west"),
    ("old", "new"),
    ("older", "newer"),
    ("oldest", "newest"),
    ("big", "small"),
    ("bigger", "smaller"),
    ("large", "small"),
    ("long", "short"),
    ("longer", "shorter"),
    ("hot", "cold"),
    ("positive", "negative"),
    ("upgrade", "downgrade"),
    ("forward", "backward"),
    ("ascending", "descending"),
    ("inbound", "outbound"),
    ("include", "exclude"),
    ("join", "leave"),
    ("hire", "fire"),
    ("arrive", "depart"),
    ("come", "go"),
    ("give", "take"),
    ("pay", "charge"),
    ("owe", "lend"),
    ("parent", "child"),
    ("husband", "wife"),
    ("buyer", "seller"),
    ("landlord", "tenant"),
    ("employer", "employee"),
    ("teacher", "student"),
    ("doctor", "patient"),
    ("parent", "kid"),
    ("larger", "smaller"),
    ("greater", "smaller"),
    ("greater", "less"),
    ("largest", "smallest"),
    ("maximum", "minimum"),
    ("sunrise", "sunset"),
    ("odd", "even"),
    ("credit", "debit"),
    ("lender", "borrower"),
    ("winner", "loser"),
    ("rich", "poor"),
    ("heavy", "light"),
    ("wet", "dry"),
    ("early", "late"),
    ("earlier", "later"),
    ("asleep", "awake"),
    ("alive", "dead"),
    ("true", "false"),
    ("success", "failure"),
    ("profit", "loss"),
    ("import", "export"),
    ("increment", "decrement"),
    ("overweight", "underweight"),
    ("mother", "father"),
    ("mom", "dad"),
    ("mum", "dad"),
    ("son", "daughter"),
    ("sons", "daughters"),
    ("brother", "sister"),
    ("brothers", "sisters"),
    ("boyfriend", "girlfriend"),
    ("man", "woman"),
    ("men", "women"),
    ("boy", "girl"),
    ("boys", "girls"),
    ("male", "female"),
    ("king", "queen"),
    ("aunt", "uncle"),
    ("niece", "nephew"),
    ("grandma", "grandpa"),
    ("grandmother", "grandfather"),
    ("client", "server"),
    ("sender", "receiver"),
    ("input", "output"),
    ("read", "write"),
    ("uppercase", "lowercase"),
    ("plus", "minus"),
    ("add", "subtract"),
    ("multiply", "divide"),
]
_OPPOSITE_WORDS = frozenset(w for pair in _OPPOSITES for w in pair)
_PREFIX_PAIRS = [("", "un"), ("", "in"), ("", "il"), ("", "im"), ("", "ir"), ("", "dis"), ("", "non"), ("", "anti"),
                 ("", "mis"), ("over", "under"), ("in", "de"), ("in", "ex"), ("up", "down"), ("en", "de"),
                 ("inc", "dec")]  # fmt: skip
# Words around which order matters: "from X to Y", "X into Y", "X than Y", "X owes Y", "convert X to Y".
_ORDER_MARKERS = frozenset(
    (
        "from to into onto than vs versus owe owes owed owing convert converts converting conversion migrate "
        "migrates migrating migration move moving transfer transferring send sends sent pay pays paid give gives "
        "gave lend lent borrow translate translating beat beats married marry hired hire report reports "
        "replace replaces replacing instead before after over under per -> arrow follow follows prefer "
        "prefers like likes love loves hate hates call called calls email emailed owes sue sued"
    ).split()
)
_SIGNS = frozenset("+#<>=*/%&|^~$€£¥@")
_DIRECTION_WORDS = frozenset({"from", "to", "into", "onto", "->"})
_SAME_DIRECTION = {"into": "to", "onto": "to", "->": "to"}
_BEFORE_INFINITIVE = frozenset(
    "how want wants wanted need needs needed able have has had going trying try tried way like used ought "
    "is are was were am order best easiest fastest where what when who which whether allowed supposed due meant "
    "safe possible hard easy difficult important necessary better good bad ok okay time".split()
)
_ORDER_SENSITIVE_START = re.compile(r"^(?:is|are|was|were|am|how many|how much|who|whose|whom)\b")
_WH = frozenset("how what where when why which".split())
_AUXILIARIES = frozenset("do does did can could should would will shall may might must am is are was were".split())
_GENERIC_SUBJECTS = frozenset({"i", "you", "we", "one"})
# Pronouns and openers that point back into a conversation.
_DEICTIC = frozenset({"it", "its", "this", "that", "these", "those", "they", "them", "their", "he", "she", "him",
                      "her", "his", "hers", "there", "one", "ones", "same", "former", "latter", "above"})  # fmt: skip
_FOLLOW_UP = re.compile(r"^\s*(and|but|also|so|then|what about|how about|why not|what if|same|ok so)\b", re.IGNORECASE)
# Questions whose answer changes with time: never cached.
_VOLATILE = re.compile(
    r"\b(today|tonight|tomorrow|yesterday|now|right now|nowadays|currently|current|latest|newest|recent|recently|"
    r"this (?:morning|afternoon|evening|week|weekend|month|quarter|year|season)|"
    r"next (?:week|month|year|game|match|train|bus|flight|release|election)|"
    r"last (?:night|week|month|year|game|match)|at the moment|these days|so far|yet|live (?:score|scores|stream)|"
    r"up to date|weather|forecast|temperature outside|(?:will|going to) (?:rain|snow)|is it (?:raining|snowing)|"
    r"price|prices|priced|cost of|how much (?:is|are|does|do) .{0,40}(?:cost|worth|trade|sell)|worth|"
    r"(?:exchange|interest|conversion|tax|inflation|mortgage|unemployment|crime) rates?|fx|forex|ticker|"
    r"stock price|stock market|stocks|share price|market cap|valuation|bitcoin|btc|ethereum|crypto|inflation|"
    r"news|headlines?|trending|score of|(?:game|match|final) score|scores|standings?|leaderboard|odds|polls?|"
    r"election|(?:train|bus|flight|game|match|tv) schedules?|timetable|opening hours|open (?:now|today)|"
    r"hours today|departures?|minimum wage|top of the|trading at|how many (?:covid|flu) cases|stamp|"
    r"arrivals?|delayed|traffic|outage|uptime|in stock|release date|what time is it|deadline|countdown|"
    r"how long until|population of|who is the (?:ceo|president|prime minister|leader|champion|chair|pope|king|"
    r"queen|chancellor|mayor|governor|owner|coach|manager|head)|who is the (?:us|current) |"
    r"who (?:leads|is leading)|who won (?:the )?(?:game|match|race|election|final|league|cup|series)\b|"
    r"what (?:day|date|time|year|month|week) is (?:it|today)|how (?:many|much) (?:days|weeks|hours|time) "
    r"(?:until|till|left|before)|days until|how old is|(?:did|will) .{1,40} win|is .{1,40} (?:down|offline|up "
    r"right now|open right now)|temperature (?:in|at|outside)|per (?:ounce|barrel|gram|troy ounce)|"
    r"(?:dollar|dollars|euro|euros|pound|pounds|yen|franc|francs|rupee|rupees|peso|pesos|yuan|bitcoin|bitcoins|"
    r"usd|eur|gbp|jpy|chf|btc)s? (?:to|in|into|is|are|against|vs) (?:a |an |one )?(?:dollar|dollars|euro|euros|"
    r"pound|pounds|yen|franc|francs|rupee|rupees|peso|pesos|yuan|bitcoin|usd|eur|gbp|jpy|chf|btc)|"
    r"(?:account|bank|card) balance|my balance|(?:where|when|what) (?:is|are|was) my (?:package|parcel|order|"
    r"delivery|shipment|appointment|appointments|meeting|meetings|flight|reservation|booking)|"
    r"(?:what's|what is) (?:on|in) my (?:calendar|agenda|schedule|inbox)|my (?:notifications|tasks|to-?do)|"
    r"next (?:appointment|meeting|holiday|payday|bus|train|flight))\b",
    re.IGNORECASE,
)
# Questions that mention time words but whose answers do not change with time.
_TIMELESS = re.compile(
    r"\b(?:in|with|using) (?:python|javascript|js|typescript|java|c#|go|rust|ruby|php|sql|bash|excel|pandas|"
    r"numpy|react|node|kotlin|swift)\b|\b(?:battle|war|treaty|siege|revolution) of\b",
    re.IGNORECASE,
)
# Polite frames around a question, which change neither its topic nor its persons.
_FRAME = re.compile(
    r"^(?:(?:can|could|would|will) you (?:please )?(?:tell|show|remind) me|do you (?:happen to )?know|"
    r"(?:please )?tell me|i (?:want|would like|'d like) to know|i wonder(?:ed)?|quick question:?)\b\s*|"
    r"\s*(?:please tell me|please|thanks|thank you)[.!?]*\s*$",
    re.IGNORECASE,
)
_CURRENCIES = frozenset(
    "usd eur gbp jpy chf cad aud nzd cny rmb inr brl mxn sek nok dkk pln czk huf try zar krw sgd hkd rub".split()
)


def normalise_question(question: str) -> str:
    """The form of a question that the cache embeds: lower-cased, white space folded, arrows spelled out."""
    text = _ARROW.sub(" to ", question.replace("’", "'"))
    return " ".join(text.lower().split())


def _words(text: str) -> list[str]:
    text = _FRAME.sub("", _ARROW.sub(" -> ", text.replace("’", "'")).strip())
    out: list[str] = []
    for raw in _WORD.findall(text):
        word = raw.lower()
        if word.endswith("n't"):
            out.extend([word[:-3] if word[:-3] not in {"ca", "wo"} else {"ca": "can", "wo": "will"}[word[:-3]], "not"])
        elif word.endswith("'s"):
            out.append(word[:-2])
        elif "'" in word:
            out.append(word.split("'")[0])
        else:
            out.append(word)
    if "->" in text:
        out.append("->")
    return out


def _joined(words: list[str]) -> list[str]:
    """Words with phrasal compounds joined: "log in" → "login", "sign up" → "signup"."""
    out: list[str] = []
    for word in words:
        if out and out[-1] in {"log", "sign"} and word in {"in", "out", "up", "on", "off"}:
            out[-1] = out[-1] + ("in" if word == "on" else word)
            if out[-1] == "logoff":
                out[-1] = "logout"
            continue
        out.append(word)
    return out


def _content(question: str) -> list[str]:
    words = _joined(_words(question))
    return [w for w in words if w not in _FILLER and w not in _PERSONS and w not in _NEGATIONS and w != "->"]


def content_words(question: str) -> list[str]:
    """The topic words of a question, stemmed, in order (no filler, persons, particles or negations)."""
    return [stem(w) for w in _content(question)]


def _numbers(question: str) -> set[str]:
    found = {n.replace(",", "") for n in re.findall(r"\d+(?:[.,]\d+)*", question)}
    return found | {w for w in _words(question) if w in _NUMBER_WORDS}


def _symbols(question: str) -> Counter[str]:
    """Signs that change meaning: operators, currency and unit signs, fractions (C++ / C#, x > 5 / x < 5, -3)."""
    text = _FRAME.sub("", question.strip())
    signs = Counter(ch for ch in text if not ch.isascii() or ch in _SIGNS if not ch.isalpha() and not ch.isspace())
    signs.update("-" for _ in re.finditer(r"(?<![\w-])-(?=\d)", text))  # a minus sign before a number
    for quote in "’‘“”«»":
        signs.pop(quote, None)
    return signs


def _negated(question: str) -> bool:
    return sum(w in _NEGATIONS for w in _words(question)) % 2 == 1


def _entities(question: str) -> list[str]:
    """Names and identifiers, lower-cased, in order.

    Capitalised words after the first, ALLCAPS, CamelCase, words with digits.
    """
    words = _WORD.findall(_FRAME.sub("", question.replace("’", "'").strip()))
    out: list[str] = []
    for i, raw in enumerate(words):
        word = raw.split("'")[0]
        if word in {"I", ""} or (word.lower() in _PERSONS and not (len(word) > 1 and word.isupper())):
            continue
        if (
            (i > 0 and word[:1].isupper())
            or (len(word) > 1 and word.isupper())
            or re.search(r"[a-z][A-Z]", word)
            or (re.search(r"\d", word) and re.search(r"[A-Za-z]", word))
        ):
            out.append(word.lower())
    return out


def _persons_differ(a: set[str], b: set[str]) -> bool:
    """Other people or roles; a generic "how do I/you" subject only differs from another generic one."""
    generic_a, generic_b = {p for p in a if p.endswith(":generic")}, {p for p in b if p.endswith(":generic")}
    if a - generic_a != b - generic_b:
        return True
    return bool(generic_a and generic_b and generic_a != generic_b)


def _persons(question: str) -> set[str]:
    """The people a question is about, with their roles; the generic subject of "how do I/you/we" is none."""
    words = _words(question)
    return {
        _PERSONS[w].split(":")[0] + ":generic"
        if w in _GENERIC_SUBJECTS and i > 1 and words[i - 1] in _AUXILIARIES and words[i - 2] in _WH
        else _PERSONS[w]
        for i, w in enumerate(words)
        if w in _PERSONS
    }


def _prefixed_opposite(only_a: set[str], only_b: set[str]) -> tuple[str, str] | None:
    """A word and its negated or reversed form: legal/illegal, overweight/underweight, increment/decrement."""
    for x in only_a:
        for y in only_b:
            for p, q in _PREFIX_PAIRS:
                if (x.startswith(p) and y.startswith(q) and x[len(p) :] == y[len(q) :] and len(x) > len(p) + 2) or (
                    y.startswith(p) and x.startswith(q) and y[len(p) :] == x[len(q) :] and len(y) > len(p) + 2
                ):
                    return x, y
    return None


def _opposite(a: list[str], b: list[str]) -> tuple[str, str] | None:
    """A word of an opposing pair that one question has more of where the other has more of its partner."""
    prefixed = _prefixed_opposite(set(a) - set(b), set(b) - set(a))
    if prefixed is not None:
        return prefixed
    ca, cb = Counter(w for w in a if w in _OPPOSITE_WORDS), Counter(w for w in b if w in _OPPOSITE_WORDS)
    if ca == cb:
        return None
    for x, y in _OPPOSITES:
        if (ca[x] > cb[x] and cb[y] > ca[y]) or (ca[y] > cb[y] and cb[x] > ca[x]):
            return (x, y) if ca[x] > cb[x] else (y, x)
    return None


def _inversion(a: list[str], b: list[str]) -> tuple[str, str] | None:
    """Two words that appear in both sequences in opposite orders."""
    first_b: dict[str, int] = {}
    for i, w in enumerate(b):
        first_b.setdefault(w, i)
    shared = [w for w in dict.fromkeys(a) if w in first_b]
    for i, x in enumerate(shared):
        for y in shared[i + 1 :]:
            if first_b[x] > first_b[y]:
                return x, y
    return None


@dataclass(frozen=True)
class GuardResult:
    """Why two questions are not the same question (``reason`` ``None``: no objection)."""

    reason: str | None
    detail: str = ""


WordSimilarity = Callable[[Sequence[str], Sequence[str]], list[list[float]]]
"""Given two lists of words, the matrix of their similarities (rows: the first list)."""


def _leftover(words: list[str], other: list[str]) -> list[str]:
    """The words whose stem ``other`` does not hold (as often)."""
    remaining = Counter(stem(w) for w in other)
    out = []
    for word in words:
        if remaining[stem(word)] > 0:
            remaining[stem(word)] -= 1
        else:
            out.append(word)
    return out


def _unaligned(
    a: list[str], b: list[str], word_similarity: WordSimilarity | None, word_threshold: float
) -> tuple[list[str], list[str]]:
    """Topic words (as written) of each side without a counterpart: the same stem, or a similar word."""
    only_a, only_b = _leftover(a, b), _leftover(b, a)
    if not only_a and not only_b:
        return [], []
    if word_similarity is None or not only_a or not only_b:
        return only_a, only_b
    sims = word_similarity(only_a, only_b)
    left = [w for w, row in zip(only_a, sims, strict=True) if max(row) < word_threshold]
    right = [w for j, w in enumerate(only_b) if max(row[j] for row in sims) < word_threshold]
    return left, right


def guard_mismatch(  # noqa: PLR0911 - one return per check, in order
    question: str,
    cached: str,
    *,
    word_similarity: WordSimilarity | None = None,
    word_threshold: float = 0.8,
) -> GuardResult:
    """Compare a question with a cached one; return the first difference that makes them different questions.

    Args:
        question: The question asked now.
        cached: The question whose answer is cached.
        word_similarity: Similarities of words (for the ``content`` check); without it a topic word needs the
            same stem on the other side.
        word_threshold: The similarity at which two different topic words count as the same word.

    Returns:
        A :class:`GuardResult` whose ``reason`` is ``None`` when no check objects.
    """
    if _numbers(question) != _numbers(cached):
        return GuardResult("number", f"{sorted(_numbers(question))} vs {sorted(_numbers(cached))}")
    if _negated(question) != _negated(cached):
        return GuardResult("negation")
    sa, sb = _symbols(question), _symbols(cached)
    if sa != sb:
        return GuardResult("symbol", f"{sorted(sa.elements())} vs {sorted(sb.elements())}")
    wa, wb = _joined(_words(question)), _joined(_words(cached))
    ea, eb = _entities(question), _entities(cached)
    missing = sorted({e for e in ea if e not in wb} | {e for e in eb if e not in wa})
    if missing:
        return GuardResult("entity", f"{missing} not in both")
    pa, pb = _persons(question), _persons(cached)
    if _persons_differ(pa, pb):
        return GuardResult("person", f"{sorted(pa)} vs {sorted(pb)}")
    swap = _opposite(wa, wb)
    if swap is not None:
        return GuardResult("opposite", f"{swap[0]!r} vs {swap[1]!r}")
    direction = _direction(wa, wb, ea, eb)
    if direction:
        return GuardResult("direction", direction)
    left, right = _unaligned(_content(question), _content(cached), word_similarity, word_threshold)
    if left or right:
        return GuardResult("content", f"{left} vs {right}")
    return GuardResult(None)


def _direction(wa: list[str], wb: list[str], ea: list[str], eb: list[str]) -> str:
    entity_swap = _inversion([e for e in ea if e in eb], [e for e in eb if e in ea])
    if entity_swap:
        return f"{entity_swap[0]!r} and {entity_swap[1]!r} swapped"
    # Two topic words in the other order, where order carries meaning: an order-sensitive word, a number or a
    # shared word (a verb: "landlord evicts tenant") between them, or a question of the form "is X a Y" /
    # "how many X in a Y".
    strict = any(_ORDER_SENSITIVE_START.match(" ".join(words)) for words in (wa, wb))
    seq_a, seq_b = _ordered(wa), _ordered(wb)
    once = {w for w, n in Counter(w for w, _ in seq_a).items() if n == 1}
    once &= {w for w, n in Counter(w for w, _ in seq_b).items() if n == 1}
    pos_b = {word: i for i, (word, _) in enumerate(seq_b) if word in once}
    for i, (x, _) in enumerate(seq_a):
        for j in range(i + 1, len(seq_a)):
            y = seq_a[j][0]
            swapped = x in pos_b and y in pos_b and pos_b[x] > pos_b[y] and x != y
            if swapped and (
                strict or _pivot(seq_a, i, j, pos_b) or _pivot(seq_b, pos_b[y], pos_b[x], {w for w, _ in seq_a})
            ):
                return f"{x!r} and {y!r} in another order"
    # Same words in the same order, but the direction words differ: "migrate from X" vs "migrate to X".
    marks_a, marks_b = _direction_marks(wa), _direction_marks(wb)
    if marks_a != marks_b:
        return f"{marks_a} vs {marks_b}"
    return ""


def _pivot(seq: list[tuple[str, bool]], lo: int, hi: int, other: Container[str]) -> bool:
    """Between positions ``lo`` and ``hi`` of ``seq``: a marker, or a word that ``other`` also holds."""
    between = seq[lo + 1 : hi + 1]
    return any(marked for _, marked in between) or any(word in other for word, _ in between[:-1])


def _ordered(words: list[str]) -> list[tuple[str, bool]]:
    """Topic words (stemmed) in order, each flagged when an order-sensitive word stands right before it."""
    out: list[tuple[str, bool]] = []
    marked = False
    for i, word in enumerate(words):
        is_marker = _is_order_marker(word) and not (word == "to" and i > 0 and words[i - 1] in _BEFORE_INFINITIVE)
        if is_marker:
            marked = True
            if word in _FILLER or word == "->":
                continue
        if word in _FILLER or word in _PERSONS or word in _NEGATIONS:
            continue
        out.append((stem(word), marked))
        marked = is_marker
    return out


def _is_order_marker(word: str) -> bool:
    """Order-sensitive words, and numbers: "10 km in miles" is not "10 miles in km"."""
    return word in _ORDER_MARKERS or word.isdigit() or word in _NUMBER_WORDS


def _direction_marks(words: list[str]) -> list[str]:
    """from/to/into/onto in order, without the "to" of an infinitive ("how to", "want to", "need to")."""
    return [
        _SAME_DIRECTION.get(w, w)
        for i, w in enumerate(words)
        if w in _DIRECTION_WORDS and not (w == "to" and i > 0 and words[i - 1] in _BEFORE_INFINITIVE)
    ]


def is_volatile(question: str) -> bool:
    """Whether the answer depends on when it is asked.

    "today", "latest", prices, rates, scores, weather, schedules, a currency pair such as "USD to EUR", ...
    """
    if _TIMELESS.search(question):  # time words in questions that do not change: dates in code, history
        return False
    if _VOLATILE.search(question):
        return True
    codes = {w.lower() for w in re.findall(r"\b[A-Za-z]{3}\b", question) if w.lower() in _CURRENCIES}
    return len(codes) >= 2  # noqa: PLR2004 - a currency pair: a rate


def is_context_dependent(question: str, history: Sequence[str] = ()) -> bool:
    """Whether a question leans on earlier turns (only when there are earlier turns).

    Follow-up openers ("and", "what about"), pronouns pointing back ("it", "that", "they", "is there"), or
    fewer than two topic words make a question context-dependent in a multi-turn conversation.
    """
    if not history:
        return False
    if _FOLLOW_UP.search(question):
        return True
    if any(w in _DEICTIC for w in _words(question)):
        return True
    return len(content_words(question)) < 2  # noqa: PLR2004
