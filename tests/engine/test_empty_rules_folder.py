"""An empty rules folder (issue 22) is an error naming it, never a rule set that silently advises nothing."""

from __future__ import annotations

import pytest

from skillbase.errors import InputError


@pytest.mark.parametrize("how", ["rules_dirs", "extra_rules"])
def test_an_empty_rules_folder_is_refused(tmp_path, monkeypatch, how):
    from skillbase.engine import Engine

    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))
    empty = tmp_path / "mine"
    (empty / "propose").mkdir(parents=True)
    with pytest.raises(InputError, match="mine: no rules here") as caught:
        Engine.load(**{how: [empty]})
    assert "rules new" in caught.value.hint
