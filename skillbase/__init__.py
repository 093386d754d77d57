"""skillbase: profile a CUDA kernel, map the evidence to expert optimization skills, apply and verify them.

The Python API (docs/api.md) is `skillbase.api`, re-exported here on first use so that `import
skillbase` (and the CLI's start-up) imports nothing heavy: `skillbase.advise(...)`, `skillbase.Run`, ...
"""

from __future__ import annotations

import sys
import types
from typing import Any

__version__ = "0.1.0"

API = ("Advice", "ProfileResult", "Run", "RuleExplanation", "SkillCard", "Submission", "advise", "check",
       "make_evidence", "pending", "profile", "rules_explain", "skills_list", "skills_search", "skills_show", "why_not")

__all__ = ["__version__", *API]


def __getattr__(name: str) -> Any:
    if name in API:
        from skillbase import api

        return getattr(api, name)
    raise AttributeError(f"module 'skillbase' has no attribute {name!r}")


class _Package(types.ModuleType):
    """Importing a submodule binds it on its package: `skillbase.advise` (the module) would then hide
    `skillbase.advise` (the function). The API's names stay the API's; the submodules stay importable
    by their full names (`from skillbase.advise import Advice`)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in API and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
