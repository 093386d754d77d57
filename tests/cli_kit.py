"""Running the `skillbase` command as a user does, for the CLI tests: through `skillbase.cli.main`, which
turns a SkillbaseError into its one-line `error:` / `hint:` text and an exit code."""

from __future__ import annotations

import pytest


def run_main(capsys, *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `skillbase ARGS...`; 0 when the command returns normally."""
    from skillbase.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
        raise SystemExit(0)
    out = capsys.readouterr()
    return exit_info.value.code, out.out, out.err
