"""The bench suite shipped as package data (`skillbase.builtin_bench`); its Python lives in skillbase.bench."""
