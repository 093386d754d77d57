"""Bundled examples shipped as package data (`skillbase.builtin_examples`); no Python lives here."""
