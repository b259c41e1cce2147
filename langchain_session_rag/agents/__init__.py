"""Agent-native memory: tools for tool-calling agents and a LangGraph ``BaseStore`` over the memory."""
