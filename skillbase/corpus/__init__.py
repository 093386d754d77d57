"""The skill corpus: the model, loading and validation, search, examples, scaffolding, verification."""
