"""Built-in rules shipped as package data (`skillbase.builtin_rules`); no Python lives here."""
