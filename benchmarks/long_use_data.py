"""Generate the long-use benchmark's scenarios: months of one user's assistant traffic, with probe questions.

Usage::

    python benchmarks/long_use_data.py --out benchmarks/results/long_use_data.json

The file (about 1 MB) is not committed: ``long_use.py`` generates the same data in memory unless given ``--data``.

Each scenario is one user: a few facts told once (passwords, pets, addresses, schedules, preferences, people),
asked again and again in later sessions while the assistant answers "Sorry, I'm not sure." or invents a value,
corrected by the user now and then ("changed to", "actually", "no longer", "moved from X to Y"), with small talk
and several facts interleaved over about six months; the first session is imported history (one batch).
Every ask is a probe: it records the id of the newest correct user statement of its fact (the expected evidence),
the ids of the stale statements and of the model-invented claims stored before it, and how many times the fact
was asked before. The ``tune`` and ``report`` splits use different subjects, phrasings, non-answers and small
talk, so that choosing parameters on one does not fit the other. The ``holdout`` split (seed 3) has its own
subjects and texts again, written after the recall policy was designed, blind to it, and never used for tuning:
its phrasings are looser (statements without "my", terse questions, corrections that only restate the new value).
Deterministic: the same seeds give the same file.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

SEEDS = {"tune": 1, "report": 2, "holdout": 3}
SCENARIOS_PER_SPLIT = 8
ASKS_PER_FACT = 21  # the 21st ask has 20 earlier asks stored
WRONG_RATE = 0.3
# Per scenario, seven facts with these histories (shuffled over the split's seven subjects).
FACT_KINDS = ("clean", "clean", "clean", "wrong", "corrected", "corrected", "corrected_wrong")


@dataclass(frozen=True)
class Subject:
    """One kind of fact: how it is told, asked, corrected and invented."""

    name: str
    category: str
    statement: str
    questions: tuple[str, ...]
    corrections: tuple[str, ...]  # may use {old}
    invented: str
    values: tuple[str, ...]


TUNE_SUBJECTS = (
    Subject(
        "wifi_password",
        "password",
        "My wifi password is {v}.",
        ("What is my wifi password?", "What's the wifi password again?", "Remind me of my wifi password."),
        ("The wifi password changed to {v}.", "Actually, the wifi password is now {v}; I reset the router."),
        "Your wifi password is {v}.",
        ("Tangerine-42", "Falcon-19", "Birch-88", "Cobalt-51", "Lantern-23", "Meadow-64", "Quartz-37", "Saffron-75"),
    ),
    Subject(
        "cat_name",
        "pet",
        "My cat is called {v}.",
        ("What is my cat called?", "What's my cat's name?", "Do you remember what my cat is called?"),
        ("We renamed the cat: she is called {v} now.", "Actually my cat's name is {v}, not {old}."),
        "Your cat is called {v}.",
        ("Pixel", "Mochi", "Juniper", "Biscuit", "Nimbus", "Pepper", "Olive", "Tofu"),
    ),
    Subject(
        "home_address",
        "address",
        "I live at {v}.",
        ("What is my home address?", "Where do I live again?", "What's my address at home?"),
        ("We moved from {old} to {v}.", "I no longer live at {old}; my new address is {v}."),
        "You live at {v}.",
        ("12 Rosewood Lane", "48 Harbour Street", "7 Alder Close", "230 Mill Road", "15 Quarry Hill", "91 Elm Row"),
    ),
    Subject(
        "gym_day",
        "schedule",
        "I go to the gym every {v}.",
        ("On which day do I go to the gym?", "When is my gym day?", "Which day is gym day for me?"),
        ("My gym day changed to {v}.", "Actually, I go to the gym on {v} now, not {old}."),
        "You go to the gym on {v}.",
        ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"),
    ),
    Subject(
        "coffee_order",
        "preference",
        "I take my coffee as a {v}.",
        ("How do I take my coffee?", "What's my usual coffee order?", "What coffee do I like?"),
        ("I no longer drink a {old}; I switched to a {v}.", "Actually, make my coffee a {v} from now on."),
        "You usually order a {v}.",
        ("flat white", "cortado", "oat latte", "double espresso", "cappuccino", "long black"),
    ),
    Subject(
        "sister_name",
        "person",
        "My sister's name is {v}.",
        ("What's my sister's name?", "What is my sister called?", "Who is my sister again?"),
        ("Sorry, I mistyped earlier: my sister is {v}, not {old}.", "Actually my sister is called {v}."),
        "Your sister is called {v}.",
        ("Clara", "Ingrid", "Maya", "Leonie", "Sofia", "Harriet", "Nadia"),
    ),
    Subject(
        "bike_lock",
        "password",
        "The code of my bike lock is {v}.",
        ("What's the code of my bike lock?", "What is my bike lock combination?", "Bike lock code, please?"),
        ("I changed the bike lock code to {v}.", "The bike lock code is no longer {old}; it's {v}."),
        "Your bike lock code is {v}.",
        ("4721", "0938", "5562", "8814", "3307", "6290"),
    ),
)

REPORT_SUBJECTS = (
    Subject(
        "laptop_password",
        "password",
        "The login password of my work laptop is {v}.",
        ("What's my work laptop password?", "What do I type to log in to my work laptop?", "Laptop login again?"),
        ("The laptop password changed to {v}.", "IT made me reset it: my laptop password is now {v}."),
        "Your laptop password is {v}.",
        ("Plum-7", "Harbor-31", "Cedar-90", "Violet-12", "Ember-58", "Orchid-46", "Granite-83", "Willow-29"),
    ),
    Subject(
        "dog_name",
        "pet",
        "Our dog is named {v}.",
        ("What's our dog's name?", "What did we name the dog?", "Remind me what the dog is called."),
        ("Actually, the dog's name is {v}; {old} was his shelter name.", "We call the dog {v} now."),
        "Your dog is named {v}.",
        ("Rufus", "Bruno", "Hazel", "Ziggy", "Luna", "Waffles", "Kiwi"),
    ),
    Subject(
        "office_address",
        "address",
        "My office is at {v}.",
        ("Where is my office?", "What's the address of my office?", "Which address is my workplace at?"),
        ("Our office moved from {old} to {v}.", "The office is no longer at {old}; it's at {v} now."),
        "Your office is at {v}.",
        ("Keizersgracht 140", "5 Canal Yard", "80 Tech Park", "22 Foundry Street", "3 Wharf Road", "61 Pier Lane"),
    ),
    Subject(
        "piano_lesson",
        "schedule",
        "My piano lesson is on {v} evenings.",
        ("When is my piano lesson?", "Which evening do I have piano?", "What day are my piano lessons?"),
        ("The piano lesson is no longer on {old}; it is on {v} now.", "Piano moved to {v} evenings."),
        "Your piano lesson is on {v}.",
        ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Sunday"),
    ),
    Subject(
        "allergy",
        "preference",
        "I'm allergic to {v}.",
        ("What am I allergic to?", "Which food allergy do I have?", "Is there anything I can't eat?"),
        ("Update from the allergist: it's {v}, not {old}.", "Actually my allergy is {v}."),
        "You are allergic to {v}.",
        ("peanuts", "shellfish", "sesame", "kiwi fruit", "hazelnuts", "mustard"),
    ),
    Subject(
        "manager_name",
        "person",
        "My manager is {v}.",
        ("Who is my manager?", "What's my manager's name?", "Who do I report to?"),
        ("My manager changed: it's {v} now, {old} left the team.", "I report to {v} now."),
        "Your manager is {v}.",
        ("Priya Shah", "Tom Becker", "Aiko Mori", "Daniel Ortiz", "Greta Lind", "Samuel Osei"),
    ),
    Subject(
        "parking_spot",
        "address",
        "My parking spot at work is {v}.",
        ("Which parking spot is mine?", "Where do I park at work?", "What's my parking space number?"),
        ("I got a new parking spot: {v}.", "My parking spot moved from {old} to {v}."),
        "Your parking spot is {v}.",
        ("P2-114", "B-07", "L3-22", "G-45", "P1-308", "C-16"),
    ),
)

# Written blind to the recall policy, after it was designed; never used to choose its parameters.
HOLDOUT_SUBJECTS = (
    Subject(
        "locker_combination",
        "password",
        "Locker 14 at the pool opens with {v}.",
        ("What's the combination for locker 14?", "locker code?", "How do I open my locker at the pool again?"),
        (
            "Locker 14 is {v} now.",
            "They reset all the pool lockers over the holidays, so {old} won't work anymore; mine opens with {v}.",
        ),
        "Locker 14 opens with {v}.",
        ("3-9-27", "12-4-33", "21-8-16", "5-30-11", "18-2-25", "7-14-39", "26-19-3"),
    ),
    Subject(
        "hamster_name",
        "pet",
        "The kids named the hamster {v}.",
        ("hamster's name?", "What did the kids call the hamster?", "Remind me, what's the hamster called?"),
        ("The hamster's name is {v}.", "The kids changed their minds, so the hamster is {v} now instead of {old}."),
        "Your hamster is called {v}.",
        ("Nugget", "Peanut", "Custard", "Gizmo", "Basil", "Twix", "Marble"),
    ),
    Subject(
        "cottage_address",
        "address",
        "The holiday cottage we rent every summer is at {v}.",
        ("Where's the holiday cottage?", "cottage address?", "What address do I give the taxi for the cottage?"),
        ("The cottage is at {v}.", "We've switched cottages: no more {old}, this year it's {v}."),
        "The holiday cottage is at {v}.",
        (
            "3 Bay View",
            "Gull Cottage, Harbour Steps",
            "14 Tide Lane",
            "2 Smugglers Row",
            "The Old Forge, Church Walk",
            "9 Headland Terrace",
            "5 Lighthouse Road",
        ),
    ),
    Subject(
        "dentist_day",
        "schedule",
        "Dentist appointment: {v}, ten in the morning.",
        ("When's the dentist?", "dentist, which day?", "Which day did I book the dentist for?"),
        ("The dentist rang, it's been moved to {v}.", "Scratch that, the dentist is on {v}, not {old}."),
        "Your dentist appointment is on {v}.",
        (
            "Tuesday the 3rd",
            "Thursday the 12th",
            "Monday the 16th",
            "Friday the 20th",
            "Wednesday the 25th",
            "Tuesday the 31st",
        ),
    ),
    Subject(
        "tea_preference",
        "preference",
        "Tea for me is always {v}.",
        ("How do I take my tea?", "tea, how do I have it?", "If you were making me a cup of tea, how would I want it?"),
        ("From now on, tea {v} please.", "I've gone off having it {old}; these days I drink my tea {v}."),
        "You take your tea {v}.",
        (
            "black, no sugar",
            "with a splash of milk",
            "with a slice of lemon",
            "with honey",
            "with oat milk and one sugar",
            "green, nothing added",
        ),
    ),
    Subject(
        "landlord_name",
        "person",
        "Our landlord is {v}.",
        ("Who's the landlord?", "What's our landlord called?", "landlord's name again?"),
        ("The flat was sold; the new landlord is {v}.", "It's {v} who owns the flat."),
        "Your landlord is {v}.",
        ("Mr Okafor", "Brenda Walsh", "Kenji Sato", "Ms Duarte", "Alan Prescott", "Fatima Rahman", "Oliver Haines"),
    ),
    Subject(
        "spare_key",
        "person",
        "We left the spare house key with {v}.",
        ("Who has the spare key?", "spare key, who's got it?", "Where did we leave the spare house key?"),
        ("We gave the spare key to {v} instead; {old} moved away.", "The spare key is with {v}."),
        "You left the spare key with {v}.",
        ("Mrs Pruitt", "Dev at number 6", "the Hendersons", "Marco upstairs", "Grandad", "Siobhan across the road"),
    ),
)

SUBJECTS = {"tune": TUNE_SUBJECTS, "report": REPORT_SUBJECTS, "holdout": HOLDOUT_SUBJECTS}

TEXTS: dict[str, dict[str, tuple[str, ...]]] = {
    "tune": {
        "non_answers": (
            "Sorry, I'm not sure.",
            "I don't have access to that.",
            "I'm afraid I don't know that.",
            "I can't find that in what I know.",
        ),
        "acks": ("Got it, I'll remember that.", "Noted!", "Okay, saved."),
        "correction_acks": ("Thanks, I've updated that.", "Okay, noted the change.", "Updated!"),
        "small_talk": (
            ("Any tips for a rainy Sunday?", "Try a long walk with an umbrella, a board game, or baking bread."),
            ("I'm thinking about switching my editor to Neovim.", "Neovim is great for keyboard-driven editing."),
            ("We might visit Porto in spring.", "Porto is lovely in spring; try the riverside and a port cellar."),
            ("How long should I boil an egg for a runny yolk?", "About six minutes from boiling water."),
            ("Recommend a podcast about history?", "Try 'The Rest Is History', it's lively and well researched."),
            ("My back hurts after long meetings.", "Stand up every half hour and check your chair height."),
            ("What's a good name for a sourdough starter?", "Something fun like 'Clint Yeastwood' works."),
            ("Is it worth learning Rust this year?", "If you like systems work, yes; the book is free online."),
            ("I finished the marathon training plan!", "Congratulations, that's a big achievement."),
            ("Any idea for a quick weeknight dinner?", "A vegetable stir-fry with noodles takes 15 minutes."),
            ("How do I keep basil alive on a windowsill?", "Water it when the soil is dry and pinch the tops."),
            ("Thanks for the help yesterday.", "You're welcome, happy to help."),
        ),
    },
    "report": {
        "non_answers": (
            "Sorry, I am not sure.",
            "I don't have that information.",
            "I'm not able to see that, sorry.",
            "Hmm, I don't know; could you tell me?",
        ),
        "acks": ("Thanks, noted.", "Understood, I'll keep that in mind.", "All right."),
        "correction_acks": ("Thanks for the update.", "Got it, changed.", "Okay, I'll use the new one."),
        "small_talk": (
            ("What should I pack for a weekend in the mountains?", "Layers, a rain jacket and good boots."),
            ("I started reading Middlemarch.", "A great choice; it takes a while to get going but rewards you."),
            ("Can you suggest a stretch for tight hamstrings?", "A seated forward fold, held for 30 seconds."),
            ("The train was late again this morning.", "That's frustrating; maybe check the earlier connection."),
            ("How do I descale a kettle?", "Boil water with a splash of vinegar, let it sit, then rinse well."),
            ("Thinking of getting a standing desk.", "They help if you alternate; start with short standing spells."),
            ("What's the difference between a latte and a flat white?", "A flat white has less, silkier milk."),
            ("Any board game for four players?", "Ticket to Ride is easy to learn and fun with four."),
            ("I'm planning a trip to Kyoto in autumn.", "Autumn leaves in Kyoto are beautiful; book early."),
            ("How often should I water succulents?", "Every two to three weeks, when the soil is fully dry."),
            ("Good morning!", "Good morning! What can I do for you today?"),
            ("Tell me a fun fact.", "Octopuses have three hearts."),
        ),
    },
    "holdout": {
        "non_answers": (
            "That's not something I have on record.",
            "No idea, I'm afraid.",
            "I couldn't tell you, sorry.",
            "Nothing comes up for that on my side.",
        ),
        "acks": ("Okay, I've made a note of it.", "Sure, I'll hang on to that.", "Great, remembered."),
        "correction_acks": ("Right, I'll go with that instead.", "Okay, swapped it over.", "Thanks, fixed on my end."),
        "small_talk": (
            ("Should I repot my monstera now or wait?", "Spring is best; that's when the roots grow fastest."),
            ("How do I politely decline a wedding invitation?", "Thank them warmly, say you can't come, send a card."),
            ("A dog down the street barked all night.", "That sounds exhausting; earplugs might help tonight."),
            ("How do I get red wine out of a carpet?", "Blot it, then dab with cold water and a drop of dish soap."),
            ("I want to try bouldering.", "Most climbing gyms run an intro session; rent shoes the first time."),
            ("Any good sci-fi novel for a long flight?", "'Project Hail Mary' is gripping and easy to read."),
            ("Is it too late to plant tulip bulbs in December?", "Not if the ground isn't frozen; they'll bloom late."),
            ("My glasses keep fogging up in the cold.", "An anti-fog wipe helps, and so does a snug scarf."),
            ("We're hosting a quiz night on Friday.", "Fun! Mix easy rounds with a picture round to keep it lively."),
            ("How many cups is 250 grams of flour?", "Roughly two cups, depending on how you scoop it."),
            ("I think I'm coming down with a cold.", "Rest and drink plenty; see a doctor if it lasts over a week."),
            ("Mirrorless or DSLR for a first camera?", "Mirrorless: lighter, and most new lenses are made for it."),
        ),
    },
}


@dataclass
class Fact:
    """One fact of a scenario and its history while the scenario is generated."""

    id: str
    subject: Subject
    kind: str
    value: str
    events: list[str] = field(default_factory=list)  # "state", "correct", "ask" in order
    start: int = 0
    truth_ids: list[str] = field(default_factory=list)  # statement then corrections, oldest first
    told: list[str] = field(default_factory=list)  # values told, oldest first
    invented_ids: list[str] = field(default_factory=list)
    asks: int = 0
    wrong_before: bool = False


def plan_events(kind: str, rng: random.Random) -> list[str]:
    """The fact's events: the statement, ``ASKS_PER_FACT`` asks and its corrections between them."""
    asks = ["ask"] * ASKS_PER_FACT
    if kind.startswith("corrected"):
        at = sorted(rng.sample(range(3, ASKS_PER_FACT - 3), 2 if rng.random() < 0.4 else 1))
        for offset, index in enumerate(at):
            asks.insert(index + offset, "correct")
    return ["state", *asks]


def _new_value(fact: Fact, rng: random.Random, avoid: list[str]) -> str:
    choices = [v for v in fact.subject.values if v not in avoid]
    return rng.choice(choices)


def _exchange(fact: Fact, event: str, ex_id: str, texts: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """One exchange of ``fact``; updates the fact's history. Asks carry their probe."""
    subject = fact.subject
    out: dict[str, Any] = {"id": ex_id, "fact": fact.id}
    if event == "state":
        fact.told.append(fact.value)
        fact.truth_ids.append(ex_id)
        return {
            **out,
            "kind": "statement",
            "value": fact.value,
            "user": subject.statement.format(v=fact.value),
            "assistant": rng.choice(texts["acks"]),
        }
    if event == "correct":
        old = fact.value
        fact.value = _new_value(fact, rng, fact.told)
        fact.told.append(fact.value)
        fact.truth_ids.append(ex_id)
        user = rng.choice(subject.corrections).format(v=fact.value, old=old)
        return {
            **out,
            "kind": "correction",
            "value": fact.value,
            "old_value": old,
            "user": user,
            "assistant": rng.choice(texts["correction_acks"]),
        }
    fact.asks += 1
    probe = {
        "ask_number": fact.asks,
        "earlier_asks": fact.asks - 1,
        "expected": fact.truth_ids[-1],
        "expected_value": fact.value,
        "stale": fact.truth_ids[:-1],
        "invented": list(fact.invented_ids),
        "nonanswers_only": not fact.wrong_before,
        "corrected": len(fact.truth_ids) > 1,
    }
    question = rng.choice(subject.questions)
    if fact.kind.endswith("wrong") and fact.asks > 1 and rng.random() < WRONG_RATE:
        invented = _new_value(fact, rng, fact.told)
        fact.invented_ids.append(ex_id)
        fact.wrong_before = True
        return {
            **out,
            "kind": "ask_wrong",
            "value": invented,
            "user": question,
            "assistant": subject.invented.format(v=invented),
            "probe": probe,
        }
    return {
        **out,
        "kind": "ask_nonanswer",
        "user": question,
        "assistant": rng.choice(texts["non_answers"]),
        "probe": probe,
    }


def scenario(split: str, number: int, rng: random.Random) -> dict[str, Any]:
    """One user's months of traffic: sessions of fact events and small talk, the first one imported."""
    subjects = SUBJECTS[split]
    texts = TEXTS[split]
    user = f"{split}-user-{number}"
    kinds = list(FACT_KINDS)
    rng.shuffle(kinds)
    facts = []
    for kind, subject in zip(kinds, rng.sample(subjects, len(kinds)), strict=True):
        fact = Fact(id=f"{user}:{subject.name}", subject=subject, kind=kind, value=rng.choice(subject.values))
        fact.events, fact.start = plan_events(kind, rng), rng.randint(0, 12)
        facts.append(fact)
    clock = datetime(2026, 1, 5, 9, tzinfo=timezone.utc) + timedelta(days=number)
    sessions: list[dict[str, Any]] = []
    index = 0
    while any(f.events for f in facts):
        session_id = f"{user}-s{index:03d}"
        ready = [f for f in facts if f.events and f.start <= index]
        ready.sort(key=lambda f: -len(f.events))
        chosen = ready[: rng.randint(1, 3)] if index else []  # the imported first session: small talk only
        exchanges = [_exchange(f, f.events.pop(0), f"{session_id}-e{n}", texts, rng) for n, f in enumerate(chosen)]
        talk = rng.sample(texts["small_talk"], rng.randint(0, 2) + (3 if index == 0 else 0))
        for n, (user_text, answer) in enumerate(talk):
            exchanges.append({"id": f"{session_id}-t{n}", "kind": "small_talk", "user": user_text, "assistant": answer})
        rng.shuffle(exchanges)
        for exchange in exchanges:
            exchange["time"] = clock.isoformat()
            clock += timedelta(minutes=rng.randint(1, 9))
        sessions.append({"id": session_id, "imported": index == 0, "exchanges": exchanges})
        clock += timedelta(days=rng.randint(1, 4), hours=rng.randint(-3, 3))
        index += 1
    return {
        "user_id": user,
        "facts": [
            {"id": f.id, "subject": f.subject.name, "category": f.subject.category, "kind": f.kind} for f in facts
        ],
        "sessions": sessions,
    }


def generate(scenarios: int = SCENARIOS_PER_SPLIT) -> dict[str, Any]:
    """The whole data set: ``scenarios`` scenarios per split, from the fixed seeds."""
    splits = {}
    for split, seed in SEEDS.items():
        rng = random.Random(seed)
        splits[split] = [scenario(split, n, rng) for n in range(scenarios)]
    return {
        "description": "Long-use benchmark scenarios (generated by benchmarks/long_use_data.py; do not edit).",
        "seeds": SEEDS,
        "asks_per_fact": ASKS_PER_FACT,
        "splits": splits,
    }


def main() -> None:
    """Write the data set as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "long_use_data.json")
    parser.add_argument("--scenarios", type=int, default=SCENARIOS_PER_SPLIT, help="scenarios per split")
    args = parser.parse_args()
    data = generate(args.scenarios)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    counts = {
        split: sum(len(s["exchanges"]) for sc in scenarios for s in sc["sessions"])
        for split, scenarios in data["splits"].items()
    }
    print(f"wrote {args.out}: exchanges per split {counts}")


if __name__ == "__main__":
    main()
