"""Storage back ends (Chroma, any LangChain vector store): internal; users pick one through ``SessionVectorMemory``."""
