"""Data files the user writes (YAML with line numbers, JSON Schema checks, problems with fix hints)."""
