"""`skillbase lint`: the static check of `static_check.py` over kernel files, with no GPU and no build,
reported the ways editors and CI read findings: text, JSON, SARIF 2.1.0 and GitHub workflow commands.

A task spec beside a kernel (`K.task.yaml`) is used when present, for its `allow:` list and hooks;
without one every rule applies. Only the static check runs: it is the part of `check` that needs
nothing but the source.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillbase import __version__
from skillbase.documents import versioned
from skillbase.errors import InputError
from skillbase.harness.static_check import RULE_BY_ID, Violation, check_source

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_LEVEL = {"error": "error", "warning": "warning"}


@dataclass(frozen=True)
class FileFindings:
    path: Path
    spec: Path | None                 # the task spec whose allow:/hooks applied
    violations: tuple[Violation, ...]


@dataclass
class LintReport:
    files: list[FileFindings] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return sum(v.severity == "error" for f in self.files for v in f.violations)

    @property
    def warnings(self) -> int:
        return sum(v.severity != "error" for f in self.files for v in f.violations)

    @property
    def ok(self) -> bool:
        """No error-level finding (warnings are reported but do not fail a candidate either)."""
        return self.errors == 0

    def to_json(self) -> dict[str, Any]:
        return versioned("lint", {"ok": self.ok, "errors": self.errors, "warnings": self.warnings,
                                  "files": [{"path": str(f.path), "spec": str(f.spec) if f.spec else None,
                                             "findings": [_finding(v) for v in f.violations]} for f in self.files]})

    def to_sarif(self) -> dict[str, Any]:
        """One SARIF 2.1.0 log: one run, the rules that fired as the driver's rules, one result per finding."""
        fired = sorted({v.rule for f in self.files for v in f.violations})
        rules = [{"id": rule_id, "shortDescription": {"text": rule_id},
                  "fullDescription": {"text": RULE_BY_ID[rule_id].rationale},
                  "defaultConfiguration": {"level": SARIF_LEVEL[RULE_BY_ID[rule_id].severity]}} for rule_id in fired]
        results = [{"ruleId": v.rule, "ruleIndex": fired.index(v.rule), "level": SARIF_LEVEL[v.severity],
                    "message": {"text": f"{v.rationale} [{v.snippet}]"},
                    "locations": [{"physicalLocation": {
                        "artifactLocation": {"uri": f.path.as_posix()},
                        "region": {"startLine": v.line, "startColumn": v.column}}}]}
                   for f in self.files for v in f.violations]
        return {"$schema": SARIF_SCHEMA, "version": "2.1.0",
                "runs": [{"tool": {"driver": {"name": "skillbase", "version": __version__, "rules": rules}},
                          "results": results}]}

    def github_lines(self) -> list[str]:
        """GitHub Actions workflow commands: each finding becomes an annotation on the changed file."""
        out = []
        for f in self.files:
            for v in f.violations:
                message = _escape(f"{v.rule}: {v.rationale} [{v.snippet}]")
                out.append(f"::{v.severity} file={f.path.as_posix()},line={v.line},col={v.column},"
                           f"title=skillbase {v.rule}::{message}")
        return out

    def text_lines(self) -> list[str]:
        """`path:line:col: severity: rule: rationale [snippet]` (the compilers' format), then a count."""
        out = [f"{f.path}:{v.line}:{v.column}: {v.severity}: {v.rule}: {v.rationale} [{v.snippet}]"
               for f in self.files for v in f.violations]
        checked = f"{len(self.files)} file(s) checked"
        out.append(f"{checked}: {self.errors} error(s), {self.warnings} warning(s)")
        return out


def _finding(v: Violation) -> dict[str, Any]:
    return {"rule": v.rule, "severity": v.severity, "line": v.line, "column": v.column, "snippet": v.snippet,
            "rationale": v.rationale}


def _escape(text: str) -> str:
    # the workflow-command encoding of a message: %, CR and LF
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def lint_files(paths: list[Path], allow: tuple[str, ...] = ()) -> LintReport:
    """The static check of every kernel file in `paths` (folders: their `.cu`/`.cuh` files), each with
    its task spec's `allow:` and hooks when a spec is beside it, plus `allow`."""
    from skillbase.task.spec import load_task, spec_path_for

    report = LintReport()
    for path in _expand(paths):
        _, spec_path = spec_path_for(path)
        spec_allow, hooks, used = (), (), None
        if spec_path.is_file():
            spec = load_task(path, check_launcher=False)
            spec_allow, hooks, used = spec.allow, spec.hook_names, spec_path
        found = check_source(path, allow=tuple(dict.fromkeys((*spec_allow, *allow))), hooks=hooks)
        report.files.append(FileFindings(path, used, tuple(found)))
    return report


def _expand(paths: list[Path]) -> list[Path]:
    files = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix in (".cu", ".cuh") and p.is_file())
            if not found:
                raise InputError(f"{path}: no .cu or .cuh files in this folder")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise InputError(f"{path}: no such file or folder")
    return files
