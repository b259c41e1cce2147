import langchain_session_rag


def test_all_is_pinned() -> None:
    assert sorted(langchain_session_rag.__all__) == [
        "AssembledPrompt",
        "BudgetReport",
        "CacheDecision",
        "CacheStats",
        "Chunk",
        "Consolidation",
        "CoreEdit",
        "CoreMemory",
        "CoreVersion",
        "Curation",
        "ExchangeChunker",
        "HistoryWindow",
        "ImportReport",
        "ImportedConversation",
        "LocalChatModel",
        "LocalEmbeddings",
        "MultilingualEmbeddings",
        "SectionReport",
        "Segment",
        "SemanticCache",
        "SemanticLLMCache",
        "SessionInfo",
        "SessionMemoryStore",
        "SessionRAGError",
        "SessionVectorMemory",
        "SimilarityProfile",
        "SummaryBuffer",
        "TokenBudget",
        "TokenCounter",
        "TopicSegmenter",
        "Turn",
        "acurate_core_memory",
        "aimport_conversations",
        "cache_scope",
        "create_core_memory_tool",
        "create_manage_memory_tool",
        "create_search_memory_tool",
        "curate_core_memory",
        "current_cache_user",
        "default_chat_model",
        "get_default_embeddings",
        "import_conversations",
        "last_turns",
        "normalize_messages",
        "read_conversations",
        "read_daily_logs",
        "rebuild_from_daily_logs",
        "tiktoken_counter",
        "trim_turns",
    ]


def test_graph_names_are_pinned() -> None:
    from langchain_session_rag import graph

    assert sorted(graph.__all__) == [
        "AGENT",
        "BUILD_PROMPT",
        "CACHE_LOOKUP",
        "CALL_MODEL",
        "RETRIEVE_DOCUMENTS",
        "RETRIEVE_MEMORIES",
        "SUMMARISE_AND_STORE",
        "SessionContext",
        "SessionRAGNodes",
        "SessionRAGState",
        "VALIDATE",
        "aend_session",
        "agent_node",
        "apurge_threads",
        "create_memory_agent_graph",
        "create_session_rag_graph",
        "end_session",
        "graph_node",
        "purge_threads",
        "route_after_cache",
    ]
    assert all(hasattr(graph, name) for name in graph.__all__)


def test_every_error_is_in_the_family() -> None:
    from langchain_session_rag import errors

    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.SessionRAGError)
