import langchain_session_rag


def test_all_is_pinned() -> None:
    assert sorted(langchain_session_rag.__all__) == [
        "AssembledPrompt",
        "BudgetReport",
        "CacheDecision",
        "CacheStats",
        "Consolidation",
        "ExchangeChunker",
        "HistoryWindow",
        "LocalEmbeddings",
        "SemanticCache",
        "SemanticLLMCache",
        "SessionVectorMemory",
        "SimilarityProfile",
        "SummaryBuffer",
        "TokenBudget",
        "TopicSegmenter",
        "cache_scope",
        "current_cache_user",
        "get_default_embeddings",
        "last_turns",
        "trim_turns",
    ]
