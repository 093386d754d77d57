"""The bundled examples' saved H200 profiles are committed xz-compressed (`<name>.h200.ncu-rep.xz`, as every other
committed report), and everything that names them still works: `examples list` and `examples copy` offer them,
the README quick start advises from the copied `.xz`, and every page that names an example's report names the
file that is there."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from skillbase.cli import cli
from skillbase.examples import list_examples

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", REPO / "examples" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
NAMED_REPORT = re.compile(r"\b(\w+)/(\w+\.h200\.ncu-rep(?:\.xz)?)\b")


def test_every_example_keeps_its_saved_profile_compressed():
    examples = list_examples()
    assert {e.name for e in examples} >= {"naive_sgemm", "vector_add", "conv2d_direct"}
    for example in examples:
        assert example.saved_profiles == (f"{example.name}.h200.ncu-rep.xz",), example.files
        assert not list(example.folder.glob("*.ncu-rep")), "a plain report beside the compressed one"


def test_the_readme_quick_start_advises_from_the_copied_report(tmp_path):
    copied = CliRunner().invoke(cli, ["examples", "copy", "naive_sgemm", str(tmp_path)], catch_exceptions=False)
    assert copied.exit_code == 0, copied.output
    [next_line] = [line for line in copied.output.splitlines() if line.startswith("next: ")]
    folder = tmp_path / "naive_sgemm"
    report, source = folder / "naive_sgemm.h200.ncu-rep.xz", folder / "naive_sgemm.cu"
    assert next_line == f"next: skillbase advise --report {report} --source {source}"
    advised = CliRunner().invoke(cli, ["advise", "--report", str(report), "--source", str(source), "--json"],
                                 catch_exceptions=False)
    assert advised.exit_code == 0, advised.output
    document = json.loads(advised.output)
    assert document["candidates"], document


def test_every_page_names_the_example_reports_that_exist():
    named = {(page.name, folder, name) for page in PAGES for folder, name in NAMED_REPORT.findall(page.read_text())}
    assert any(page == "README.md" for page, _, _ in named), "the quick start names a report"
    missing = [(page, f"{folder}/{name}") for page, folder, name in named
               if not (REPO / "examples" / folder / name).is_file()]
    assert missing == []
