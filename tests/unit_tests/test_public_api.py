import langchain_session_rag


def test_all_is_pinned() -> None:
    assert sorted(langchain_session_rag.__all__) == [
        "AssembledPrompt",
        "BudgetReport",
        "Consolidation",
        "ExchangeChunker",
        "LocalEmbeddings",
        "SessionVectorMemory",
        "SimilarityProfile",
        "TokenBudget",
        "TopicSegmenter",
        "get_default_embeddings",
    ]
