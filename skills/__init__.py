"""Built-in skill corpus shipped as package data (`skillbase.builtin_skills`); no Python lives here."""
