"""The skill corpus: model (Skill, Corpus, HEADINGS), load, validate, show, search, examples,
scaffold, verify."""
