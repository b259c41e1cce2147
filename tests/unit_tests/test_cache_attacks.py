"""Attacks on the semantic cache, with the real model, real Chroma and real LCEL chains.

Two users in one process behind one ``set_llm_cache``; prompts that differ outside the question; reversed,
swapped and negated questions; time-sensitive questions; a user who names the shared scope.
"""

from __future__ import annotations

import itertools
import json
import random
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.globals import set_llm_cache
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.outputs import Generation
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda

from langchain_session_rag import SemanticCache, SemanticLLMCache
from langchain_session_rag.cache import cache_scope, current_cache_user
from langchain_session_rag.cache.guards import guard_mismatch
from langchain_session_rag.cache.questions import is_volatile
from langchain_session_rag.errors import InvalidArgumentError

DATA = Path(__file__).parents[1] / "data"
_names = itertools.count()
Factory = Callable[..., SemanticCache]


@pytest.fixture(scope="module")
def cache_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One embedded store for the module (opened once); each cache made in it has a collection of its own."""
    return tmp_path_factory.mktemp("cache-attacks")


@pytest.fixture
def make_cache(cache_folder: Path, real_embeddings: Any) -> Factory:
    def make(user_id: str = "anyone", **kwargs: Any) -> SemanticCache:
        kwargs.setdefault("embeddings", real_embeddings)
        kwargs.setdefault("collection_name", f"attack{next(_names):04d}")
        return SemanticCache.local(path=cache_folder, user_id=user_id, **kwargs)

    return make


@pytest.fixture(scope="module")
def cases_store(cache_folder: Path, real_embeddings: Any) -> SemanticCache:
    """One cache (one collection) for the module's one-question cases."""
    return SemanticCache.local(path=cache_folder, user_id="cases", embeddings=real_embeddings, collection_name="cases")


@pytest.fixture
def case_cache(cases_store: SemanticCache) -> Factory:
    """A view of the shared cases' cache as a user of its own (entries never cross users), with ``update``."""

    def make(**update: Any) -> SemanticCache:
        return cases_store.for_user(f"case{next(_names):04d}").model_copy(update=update)

    return make


class CountingModel(FakeListChatModel):
    """A fake chat model that numbers its answers, so a test sees whether the model or the cache answered."""

    calls: int = 0

    def _call(self, *args: Any, **kwargs: Any) -> str:
        self.calls += 1
        return f"{super()._call(*args, **kwargs)} #{self.calls}"


@pytest.fixture
def llm_cache(make_cache: Factory) -> Iterator[SemanticLLMCache]:
    adapter = SemanticLLMCache(make_cache())
    set_llm_cache(adapter)
    try:
        yield adapter
    finally:
        set_llm_cache(None)


def model() -> CountingModel:
    return CountingModel(responses=["answer"])


def as_user(user: str) -> dict[str, Any]:
    """A run naming its user, as LangChain passes it to each model run: in metadata."""
    return {"metadata": {"user_id": user}}


def configurable(user: str) -> dict[str, Any]:
    return {"configurable": {"user_id": user}}


# -- 1. one process-wide cache, each request its own user ---------------------------------------------------


def test_an_lcel_chain_never_serves_one_users_answer_to_another(llm_cache: SemanticLLMCache) -> None:
    llm = model()
    chain = ChatPromptTemplate.from_messages([("system", "You are a bank assistant."), ("human", "{q}")]) | llm
    alice = chain.invoke({"q": "What is my account number?"}, config=as_user("alice"))
    bob = chain.invoke({"q": "What is my account number?"}, config=as_user("bob"))
    assert (alice.text, bob.text) == ("answer #1", "answer #2"), "Bob's question went to the model"
    again = chain.invoke({"q": "what is my account number"}, config=as_user("alice"))
    assert again.text == "answer #1", "Alice's repeat is served from her own entries"
    assert llm.calls == 2


async def test_async_chains_are_scoped_too(llm_cache: SemanticLLMCache) -> None:
    llm = model()
    chain = ChatPromptTemplate.from_messages([("human", "{q}")]) | llm
    first = await chain.ainvoke({"q": "Where is my safe deposit box?"}, config=as_user("alice"))
    other = await chain.ainvoke({"q": "Where is my safe deposit box?"}, config=as_user("bob"))
    repeat = await chain.ainvoke({"q": "Where is my safe deposit box?"}, config=as_user("alice"))
    assert (first.text, other.text, repeat.text) == ("answer #1", "answer #2", "answer #1")


def test_no_user_means_no_lookup_and_no_store_with_one_warning(llm_cache: SemanticLLMCache) -> None:
    llm = model()
    with pytest.warns(UserWarning, match="no user in scope"):
        assert llm.invoke("What is my PIN?", config=configurable("alice")).text == "answer #1"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the warning is said once
        assert llm.invoke("What is my PIN?").text == "answer #2", "nothing was stored without a user"
        with cache_scope("alice"):  # a scope alone names no run's user
            assert llm.invoke("What is my PIN?").text == "answer #3"
            assert llm.invoke("What is my PIN?").text == "answer #4"
    assert llm.invoke("What is my PIN?", config=as_user("alice")).text == "answer #5"
    assert llm.invoke("What is my PIN?", config=as_user("alice")).text == "answer #5"
    assert llm.invoke("What is my PIN?", config=as_user("bob")).text == "answer #6"


def test_a_scope_that_disagrees_with_the_run_fails_closed(llm_cache: SemanticLLMCache) -> None:
    llm = model()
    chain = ChatPromptTemplate.from_messages([("human", "{q}")]) | llm
    chain.invoke({"q": "Which locker is mine?"}, config=as_user("alice"))
    with cache_scope("bob"), pytest.warns(UserWarning, match="no user in scope"):
        assert chain.invoke({"q": "Which locker is mine?"}, config=as_user("alice")).text == "answer #2"
    with cache_scope("alice"):
        assert current_cache_user() is None, "outside a model run no user is named"
        assert chain.invoke({"q": "Which locker is mine?"}, config=as_user("alice")).text == "answer #1"
        both = {**as_user("alice"), **configurable("bob")}
        assert chain.invoke({"q": "Which locker is mine?"}, config=both).text == "answer #3"


@pytest.mark.parametrize("user", ["", "  ", "a\x00b", 7])
def test_a_bad_user_id_is_a_typed_error(user: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="user_id must be"), cache_scope(user):
        pass


# -- 2. everything but the question must match exactly -------------------------------------------------------


def test_another_system_message_is_another_prompt(llm_cache: SemanticLLMCache) -> None:
    llm = model()
    for language, expected in (("English", "answer #1"), ("French", "answer #2"), ("English", "answer #1")):
        chain = ChatPromptTemplate.from_messages([("system", f"Answer in {language}."), ("human", "{q}")]) | llm
        assert chain.invoke({"q": "How do I boil an egg?"}, config=as_user("alice")).text == expected


def test_other_retrieved_context_is_another_prompt(llm_cache: SemanticLLMCache) -> None:
    llm = model()
    prompt = ChatPromptTemplate.from_messages([("system", "Answer from this context: {context}"), ("human", "{q}")])
    chain = prompt | llm
    q = "What happened to order 12?"
    shipped = chain.invoke({"context": "Order #12 was shipped.", "q": q}, config=as_user("alice"))
    cancelled = chain.invoke({"context": "Order #12 was cancelled.", "q": q}, config=as_user("alice"))
    assert (shipped.text, cancelled.text) == ("answer #1", "answer #2")


def test_other_model_parameters_are_another_key(llm_cache: SemanticLLMCache) -> None:
    a, b = CountingModel(responses=["a"]), CountingModel(responses=["b"])
    assert a.invoke("How do I boil an egg?", config=as_user("alice")).text == "a #1"
    assert b.invoke("How do I boil an egg?", config=as_user("alice")).text == "b #1"


# -- 3. the shared scope -------------------------------------------------------------------------------------


@pytest.mark.parametrize("user", ["shared", "__shared__", "user:", "user:shared", "SHARED"])
def test_no_user_id_names_the_shared_scope(make_cache: Factory, user: str) -> None:
    shared = make_cache(shared=True)
    assert shared.update("What is the office wifi name?", "guest-net")
    sneaky = shared.model_copy(update={"shared": False}).for_user(user)
    assert sneaky.lookup("What is the office wifi name?") is None
    sneaky.update("What is the office wifi name?", "evil-net")
    assert shared.lookup("What is the office wifi name?") == "guest-net", "a user cannot overwrite shared answers"


# -- 4. guards: reversed, swapped, opposite; true repeats still hit ---------------------------------------

REPORTED_NEAR_MISSES = [
    ("How many miles is 10 km?", "How many km is 10 miles?"),
    ("Convert km to miles", "Convert miles to km"),
    ("How do I convert Celsius to Fahrenheit?", "How do I convert Fahrenheit to Celsius?"),
    ("Formula for Celsius to Fahrenheit", "Formula for Fahrenheit to Celsius"),
    ("How do I migrate MySQL to Postgres?", "How do I migrate Postgres to MySQL?"),
    ("How to migrate from MySQL to Postgres", "How to migrate from Postgres to MySQL"),
    ("Does Alice owe Bob money?", "Does Bob owe Alice money?"),
    ("How much does Alice owe Bob?", "How much does Bob owe Alice?"),
    ("How do I log in to the portal?", "How do I log out of the portal?"),
    ("How do I login?", "How do I logout?"),
    ("How do I opt in to the newsletter?", "How do I opt out of the newsletter?"),
    ("How do I sign up for the beta?", "How do I sign in for the beta?"),
    ("How do I get into the building?", "How do I get out of the building?"),
    ("How do I move files into a folder?", "How do I move files out of a folder?"),
    ("What is my name?", "What is your name?"),
    ("What do I like?", "What do you like?"),
    ("What happened before the merger?", "What happened after the merger?"),
    ("Translate English to German", "Translate German to English"),
    ("How do I turn the alarm on?", "How do I turn the alarm off?"),
    ("Should I scale up the cluster?", "Should I scale down the cluster?"),
]
TRUE_REPEATS = [
    ("What is the capital of France?", "what is the capital of france"),
    ("How do I reset my password?", "How can I reset my password?"),
    ("How do I reset my password?", "Can you tell me how to reset my password?"),
    ("Which movie did Caroline recommend?", "Which film did Caroline recommend?"),
    ("How do I convert Celsius to Fahrenheit?", "How can I convert Celsius into Fahrenheit?"),
    ("What's the boiling point of water at sea level?", "What is the boiling point of water at sea level?"),
]


@pytest.mark.parametrize(("cached", "asked"), [*REPORTED_NEAR_MISSES, *[(b, a) for a, b in REPORTED_NEAR_MISSES]])
def test_reversed_and_swapped_questions_miss(case_cache: Factory, cached: str, asked: str) -> None:
    cache = case_cache(threshold=0.5)  # even far below the default: the guards hold
    assert cache.update(cached, "cached answer")
    decision = cache.decide(asked)
    assert not decision.hit, decision


@pytest.mark.parametrize(("cached", "asked"), TRUE_REPEATS)
def test_true_repeats_hit_at_the_default_threshold(case_cache: Factory, cached: str, asked: str) -> None:
    cache = case_cache()
    assert cache.update(cached, "cached answer")
    decision = cache.decide(asked)
    assert decision.hit, decision


@pytest.mark.parametrize(
    "question",
    [
        "USD to EUR rate",
        "EUR/USD?",
        "How much is bitcoin worth?",
        "What is the price of an iPhone 16?",
        "Who won the game last night?",
        "What is the score of the Lakers game?",
        "Is it going to rain in Paris?",
        "When is the next train to Berlin?",
        "What is the current version of Django?",
        "What's the mortgage interest rate?",
        "Is the API down right now?",
        "Who is the CEO of Twitter?",
        "What did we discuss last Tuesday?",
        "What did I decide two weeks ago?",
        "What did you suggest on Monday?",
    ],
)
def test_time_sensitive_questions_are_never_stored(case_cache: Factory, question: str) -> None:
    cache = case_cache()
    assert is_volatile(question)
    assert cache.update(question, "0.92") is False
    assert cache.decide(question).reason == "volatile"


def _pairs(name: str) -> list[dict[str, Any]]:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", ["cache_adversarial.json", "cache_pairs.json"])
def test_a_guard_objects_to_every_generated_near_miss(make_cache: Factory, name: str) -> None:
    """Whatever the similarity: the guard alone rejects every near-miss of both sets."""
    cache = make_cache()
    near = [p for p in _pairs(name) if p["label"].startswith("near_miss") and not is_volatile(p["a"])]
    assert len(near) > (2500 if name == "cache_adversarial.json" else 100)
    passed = [
        p
        for p in near
        if guard_mismatch(
            p["b"], p["a"], word_similarity=cache.word_similarity, word_threshold=cache.word_threshold
        ).reason
        is None
    ]
    assert passed == []


def test_the_public_path_on_a_sample_of_the_adversarial_set(make_cache: Factory) -> None:
    candidates = [p for p in _pairs("cache_adversarial.json") if not is_volatile(p["a"])]
    pairs = random.Random(11).sample(candidates, 120)  # noqa: S311 - a reproducible sample
    cache = make_cache()
    false_hits, paraphrase_hits, paraphrases = [], 0, 0
    for n, pair in enumerate(pairs):
        view = cache.for_user(f"pair{n}")
        view.update(pair["a"], "answer")
        hit = view.lookup(pair["b"]) is not None
        if pair["label"].startswith("near_miss") and hit:
            false_hits.append(pair)
        if pair["label"].startswith("paraphrase"):
            paraphrases += 1
            paraphrase_hits += hit
    assert false_hits == []
    assert paraphrases > 20
    assert paraphrase_hits / paraphrases >= 0.8  # measured: 97.8 % of the report split's paraphrases


# -- the review's attacks -------------------------------------------------------------------------------------


def as_metadata_user(user: str) -> dict[str, Any]:
    return {"metadata": {"user_id": user}}


def test_a_scope_never_names_the_user_of_a_run_whose_user_is_only_in_configurable(
    llm_cache: SemanticLLMCache,
) -> None:
    llm = model()
    chain = ChatPromptTemplate.from_messages([("system", "You are a bank assistant."), ("human", "{q}")]) | llm
    ask = {"q": "What is my account number?"}
    assert chain.invoke(ask, config=as_user("alice")).text == "answer #1"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with cache_scope("alice"):
            served = [m.text for m in chain.batch([ask, ask], config=[configurable("bob"), configurable("carol")])]
            served += [m.text for m in chain.batch([ask], config=[configurable("bob")])]
            prompt = [("system", "You are a bank assistant."), ("human", ask["q"])]
            served.append(llm.invoke(prompt, config=configurable("bob")).text)
        # Nested runs inherit their parent's metadata: items of another user override it with their own.
        inner = RunnableLambda(lambda x: chain.batch([x, x], config=[as_user("bob"), as_user("carol")]))
        served += [m.text for m in inner.invoke(ask, config={**as_user("alice"), **configurable("alice")})]
    assert "answer #1" not in served, "Alice's answer never reaches a run that is not hers"


async def test_abatch_under_a_scope_never_serves_the_scopes_user(llm_cache: SemanticLLMCache) -> None:
    llm = model()
    chain = ChatPromptTemplate.from_messages([("human", "{q}")]) | llm
    ask = {"q": "Where is my safe deposit box?"}
    assert (await chain.ainvoke(ask, config=as_user("alice"))).text == "answer #1"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with cache_scope("alice"):
            out = await chain.abatch([ask, ask], config=[configurable("bob"), configurable("carol")])
    assert "answer #1" not in [m.text for m in out]


def test_completion_models_leave_no_user_behind(llm_cache: SemanticLLMCache) -> None:
    from langchain_core.language_models.fake import FakeListLLM

    class CountingLLM(FakeListLLM):
        calls: int = 0

        def _call(self, *args: Any, **kwargs: Any) -> str:
            self.calls += 1
            return f"answer #{self.calls}"

    llm = CountingLLM(responses=["x"])
    question = "What is my account number?"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = llm.batch([question, question], config=[as_user("bob"), as_user("carol")])
        later = [llm.invoke(question, config=as_user("dave")), llm.invoke(question)]
    assert not set(later) & set(first), "a completion model's lookup never sees another run's user"
    bound = CountingLLM(responses=["x"], cache=llm_cache.for_user("erin"))
    assert bound.invoke(question) == bound.invoke(question) == "answer #1"


def test_batch_items_carry_their_own_users_in_metadata(llm_cache: SemanticLLMCache) -> None:
    llm = model()
    chain = ChatPromptTemplate.from_messages([("system", "You are a bank assistant."), ("human", "{q}")]) | llm
    ask = {"q": "What is my account number?"}
    assert chain.invoke(ask, config=as_metadata_user("alice")).text == "answer #1"
    first = chain.batch([ask, ask], config=[as_metadata_user("bob"), as_metadata_user("carol")])
    again = chain.batch([ask, ask], config=[as_metadata_user("bob"), as_metadata_user("carol")])
    assert sorted(m.text for m in first) == ["answer #2", "answer #3"]
    assert [m.text for m in again] == [m.text for m in first], "each item is served its own user's entry"
    with cache_scope("alice"), pytest.warns(UserWarning, match="no user in scope"):
        crossed = chain.batch([ask, ask], config=[as_metadata_user("bob"), as_metadata_user("carol")])
    assert "answer #1" not in [m.text for m in crossed], "a scope never overrides the run's own user"
    direct = model()
    assert direct.invoke("What is my PIN?", config=as_metadata_user("dave")).text == "answer #1"
    assert direct.invoke("What is my PIN?", config=as_metadata_user("dave")).text == "answer #1"
    assert direct.invoke("What is my PIN?", config=as_metadata_user("erin")).text == "answer #2"


def test_images_are_part_of_the_key_and_image_only_questions_are_not_cached(llm_cache: SemanticLLMCache) -> None:
    from langchain_core.messages import HumanMessage

    def ask(url: str, text: str = "Is this mole dangerous?") -> HumanMessage:
        blocks: list[Any] = [{"type": "image_url", "image_url": {"url": url}}]
        if text:
            blocks.insert(0, {"type": "text", "text": text})
        return HumanMessage(content=blocks)

    llm = model().with_config(as_user("alice"))
    assert llm.invoke([ask("https://x/mole1.jpg")]).text == "answer #1"
    assert llm.invoke([ask("https://x/mole2.jpg")]).text == "answer #2"
    assert llm.invoke([ask("https://x/mole1.jpg")]).text == "answer #1"
    assert llm.invoke([ask("https://x/a.jpg", "")]).text == "answer #3"
    assert llm.invoke([ask("https://x/b.jpg", "")]).text == "answer #4", "no text: nothing to match"


def test_a_chat_call_whose_message_draws_nothing_is_answered_and_never_cached(llm_cache: SemanticLLMCache) -> None:
    llm = model().with_config(as_user("alice"))
    assert llm.invoke("\u200b").text == "answer #1"
    assert llm.invoke("\u2060\u00ad").text == "answer #2", "a blank question: nothing to match, no error"
    assert llm.invoke("\u200b").text == "answer #3"


def test_chat_messages_with_a_user_role_keep_the_exact_digest(llm_cache: SemanticLLMCache) -> None:
    from langchain_core.messages import ChatMessage, SystemMessage

    llm = model().with_config(as_user("alice"))
    for side, expected in (("landlord", "answer #1"), ("tenant", "answer #2"), ("landlord", "answer #1")):
        prompt = [SystemMessage(f"You advise the {side}."), ChatMessage(role="user", content="Can I withhold rent?")]
        assert llm.invoke(prompt).text == expected
    assert llm.invoke([SystemMessage("Write all code in C#.")]).text == "answer #3"
    assert llm.invoke([SystemMessage("Write all code in C++.")]).text == "answer #4", "no user message: no cache"


REVIEW_NEAR_MISSES = [
    ("Are all squares rectangles?", "Are all rectangles squares?"),
    ("Is a square a rectangle?", "Is a rectangle a square?"),
    ("Can a landlord evict a tenant?", "Can a tenant evict a landlord?"),
    ("Does the cat chase the mouse?", "Does the mouse chase the cat?"),
    ("Does the moon orbit the earth?", "Does the earth orbit the moon?"),
    ("Is a tomato a fruit?", "Is a fruit a tomato?"),
    ("Does vitamin D help absorb calcium?", "Does calcium help absorb vitamin D?"),
    ("Who is Bob's father?", "Whose father is Bob?"),
    ("Do I owe him money?", "Does he owe me money?"),
    ("Did I hurt her feelings?", "Did she hurt my feelings?"),
    ("Can my boss read my emails?", "Can I read my boss's emails?"),
    ("What is my password?", "What is the password?"),
    ("How many grams are in an ounce?", "How many ounces are in a gram?"),
    ("How many cups are in a liter?", "How many liters are in a cup?"),
    ("Is it legal to record a call?", "Is it illegal to record a call?"),
    ("What are the duties of a buyer?", "What are the duties of a seller?"),
    ("What are the duties of a landlord?", "What are the duties of a tenant?"),
    ("Is being overweight risky?", "Is being underweight risky?"),
    ("How do I increment a counter?", "How do I decrement a counter?"),
    ("Is the larger number prime?", "Is the smaller number prime?"),
    ("Is C++ faster than C#?", "Is C# faster than C++?"),
    ("Is x > 5 when x is 3?", "Is x < 5 when x is 3?"),
    ("What is 5 minus -3?", "What is 5 minus 3?"),
    ("Should I add ½ cup of sugar?", "Should I add ¼ cup of sugar?"),
    ("Is a 5% fee normal?", "Is a 5‰ fee normal?"),
]


@pytest.mark.parametrize(("cached", "asked"), [*REVIEW_NEAR_MISSES, *[(b, a) for a, b in REVIEW_NEAR_MISSES]])
def test_the_reviews_near_misses_miss(case_cache: Factory, cached: str, asked: str) -> None:
    cache = case_cache(threshold=0.5)
    assert cache.update(cached, "cached answer")
    decision = cache.decide(asked)
    assert not decision.hit, decision


@pytest.mark.parametrize(
    "question",
    ["What is the EUR USD rate?", "How many euros is a dollar?", "100 dollars to euros", "How much is gold per ounce?",
     "What day is it?", "How many days until Christmas?", "How old is Taylor Swift?", "Who is the Pope?",
     "Did the Lakers win?", "Is Gmail down?", "What is the temperature in Paris?", "What is my account balance?",
     "Where is my package?", "When is my next appointment?", "What's on my calendar?"],
)  # fmt: skip
def test_more_time_sensitive_questions_are_never_stored(case_cache: Factory, question: str) -> None:
    assert case_cache().update(question, "stale") is False


def test_bad_questions_are_typed_errors_or_not_stored(make_cache: Factory) -> None:
    cache = make_cache("alice")
    with pytest.raises(InvalidArgumentError, match="question must be a string"):
        cache.lookup(None)  # type: ignore[arg-type]
    # Blank: whitespace, or only characters that draw nothing (a zero-width space, a word joiner, a soft hyphen).
    for blank in ("", "  \n\t", "\u200b", "\u2060\u00ad", " \ufeff\u200b\n"):
        for call in (lambda q: cache.update(q, "x"), cache.lookup, cache.decide):
            with pytest.raises(InvalidArgumentError, match=r"question must be a non-blank string, got '") as caught:
                call(blank)
            assert repr(blank) in str(caught.value)
    assert cache.update("?!", "x") is False  # a question without words is not an error: it is not cached
    assert cache.decide("?!").reason == "no_text"
    assert cache.stats.skipped_updates == {"no_text": 1}


@pytest.mark.parametrize(
    "question",
    ["Where do penguins live?", "How do I make chicken stock?", "How do I get today's date in Python?",
     "How do I get the current date in JavaScript?", "Who won the Battle of Hastings?", "Why does it rain?",
     "How do I schedule a cron job?", "What is a credit score?", "How do I cancel my order on Amazon?",
     "How do I share my calendar in Google?"],
)  # fmt: skip
def test_evergreen_questions_with_time_words_are_cached(case_cache: Factory, question: str) -> None:
    assert case_cache().update(question, "answer") is True


@pytest.mark.parametrize(
    "question",
    ["Who is the US president?", "How much is a first class stamp?", "What is the minimum wage in California?",
     "Which team is top of the Premier League?", "What's Apple trading at?", "Is it going to rain in Paris?",
     "What is the score of the Lakers game?"],
)  # fmt: skip
def test_the_reviews_time_sensitive_questions_are_not_stored(case_cache: Factory, question: str) -> None:
    assert case_cache().update(question, "stale") is False


# -- 9. in-process state of one user's lookups is not another user's -------------------------------------


class CountingEmbeddings(Embeddings):
    def __init__(self, inner: Embeddings) -> None:
        self.inner, self.queries = inner, 0

    def embed_query(self, text: str) -> list[float]:
        self.queries += 1
        return self.inner.embed_query(text)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts)


def test_the_question_vector_memo_is_per_user(make_cache: Factory, real_embeddings: Any) -> None:
    """A user cannot time a lookup to learn that another user just asked the same question."""
    counting = CountingEmbeddings(real_embeddings)
    cache = make_cache(embeddings=counting)
    alice, bob = cache.for_user("alice"), cache.for_user("bob")
    alice.lookup("What is the guest wifi password?")
    alice.lookup("What is the guest wifi password?")
    assert counting.queries == 1, "the user's own repeat reuses the vector"
    bob.lookup("What is the guest wifi password?")
    assert counting.queries == 2, "another user's lookup embeds the question itself"


def test_llm_cache_traffic_is_counted_on_the_configured_cache(make_cache: Factory) -> None:
    cache = make_cache()
    adapter = SemanticLLMCache(cache).for_user("alice")
    adapter.update("How do I reset my password?", "llm-x", [Generation(text="Settings.")])
    assert adapter.lookup("How do I reset my password?", "llm-x") is not None
    assert cache.stats.hits == 1
