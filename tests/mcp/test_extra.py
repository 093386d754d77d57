"""Without the `mcp` extra, `skillbase mcp` is one line naming it (exit 3), never a traceback."""

from __future__ import annotations

import subprocess
import sys

# The SDK made unimportable the way a missing package is: find_spec answers None.
HIDDEN = "import sys; sys.modules['mcp'] = None; from skillbase.cli import main; main(['mcp'])"


def test_a_missing_extra_is_one_line_naming_it():
    done = subprocess.run([sys.executable, "-c", HIDDEN], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 3
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == ["error: `skillbase mcp` needs the optional extra 'mcp' (the MCP Python SDK)",
                                        "hint: pip install 'skillbase[mcp]'"]
