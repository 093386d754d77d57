"""Thin LLM agents over the openai client (`skillbase.agents`)."""
