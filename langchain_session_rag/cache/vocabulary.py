"""The word lists and patterns the cache's question analysis reads (English)."""

from __future__ import annotations

import re

WORD = re.compile(r"[A-Za-z0-9]+(?:\+\+|#(?![A-Za-z0-9]))?(?:'[a-z]+)?")
ARROW = re.compile(r"\s*(?:->|→|=>|⇒)\s*")
NEGATIONS = frozenset({"not", "no", "never", "without", "none", "nobody", "nothing", "neither", "nor", "cannot"})
NUMBER_WORDS = frozenset(
    (
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred "
        "thousand million billion first second third fourth fifth sixth seventh eighth ninth tenth half "
        "double twice"
    ).split()
)
# Words that carry no topic: question scaffolding, auxiliaries, politeness, filler.
FILLER = frozenset(
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
PERSONS = {
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
OPPOSITES = [
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
OPPOSITE_WORDS = frozenset(w for pair in OPPOSITES for w in pair)
PREFIX_PAIRS = [("", "un"), ("", "in"), ("", "il"), ("", "im"), ("", "ir"), ("", "dis"), ("", "non"), ("", "anti"),
                 ("", "mis"), ("over", "under"), ("in", "de"), ("in", "ex"), ("up", "down"), ("en", "de"),
                 ("inc", "dec")]  # fmt: skip
# Words around which order matters: "from X to Y", "X into Y", "X than Y", "X owes Y", "convert X to Y".
ORDER_MARKERS = frozenset(
    (
        "from to into onto than vs versus owe owes owed owing convert converts converting conversion migrate "
        "migrates migrating migration move moving transfer transferring send sends sent pay pays paid give gives "
        "gave lend lent borrow translate translating beat beats married marry hired hire report reports "
        "replace replaces replacing instead before after over under per -> arrow follow follows prefer "
        "prefers like likes love loves hate hates call called calls email emailed owes sue sued"
    ).split()
)
SIGNS = frozenset("+#<>=*/%&|^~$€£¥@")
DIRECTION_WORDS = frozenset({"from", "to", "into", "onto", "->"})
SAME_DIRECTION = {"into": "to", "onto": "to", "->": "to"}
BEFORE_INFINITIVE = frozenset(
    "how want wants wanted need needs needed able have has had going trying try tried way like used ought "
    "is are was were am order best easiest fastest where what when who which whether allowed supposed due meant "
    "safe possible hard easy difficult important necessary better good bad ok okay time".split()
)
ORDER_SENSITIVE_START = re.compile(r"^(?:is|are|was|were|am|how many|how much|who|whose|whom)\b")
WH = frozenset("how what where when why which".split())
AUXILIARIES = frozenset("do does did can could should would will shall may might must am is are was were".split())
GENERIC_SUBJECTS = frozenset({"i", "you", "we", "one"})
# Pronouns and openers that point back into a conversation.
DEICTIC = frozenset({"it", "its", "this", "that", "these", "those", "they", "them", "their", "he", "she", "him",
                      "her", "his", "hers", "there", "one", "ones", "same", "former", "latter", "above"})  # fmt: skip
FOLLOW_UP = re.compile(r"^\s*(and|but|also|so|then|what about|how about|why not|what if|same|ok so)\b", re.IGNORECASE)
# Questions whose answer changes with time: never cached.
VOLATILE = re.compile(
    r"\b(today|tonight|tomorrow|yesterday|now|right now|nowadays|currently|current|latest|newest|recent|recently|"
    r"(?:\w+ )?(?:days?|weeks?|months?|years?|hours?) ago|the other day|"
    r"(?:last|this|next|on|since) (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
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
TIMELESS = re.compile(
    r"\b(?:in|with|using) (?:python|javascript|js|typescript|java|c#|go|rust|ruby|php|sql|bash|excel|pandas|"
    r"numpy|react|node|kotlin|swift)\b|\b(?:battle|war|treaty|siege|revolution) of\b",
    re.IGNORECASE,
)
# Polite frames around a question, which change neither its topic nor its persons.
FRAME = re.compile(
    r"^(?:(?:can|could|would|will) you (?:please )?(?:tell|show|remind) me|do you (?:happen to )?know|"
    r"(?:please )?tell me|i (?:want|would like|'d like) to know|i wonder(?:ed)?|quick question:?)\b\s*|"
    r"\s*(?:please tell me|please|thanks|thank you)[.!?]*\s*$",
    re.IGNORECASE,
)
CURRENCIES = frozenset(
    "usd eur gbp jpy chf cad aud nzd cny rmb inr brl mxn sek nok dkk pln czk huf try zar krw sgd hkd rub".split()
)
