"""`bench report --html` never overwrites an existing file without --force (issue 22: it did, silently)."""

from __future__ import annotations

from click.testing import CliRunner

from skillbase.bench import report
from skillbase.bench import results as lib
from skillbase.commands import bench as command
from skillbase.errors import InputError


def test_an_existing_html_report_is_kept_unless_forced(tmp_path):
    report.save_results("NVIDIA H200", [lib.SizeResult("relu", "fp32", "vendor_fp32", "xs", "verified",
                                                       1.0, 8192.0, 2.0, 4.0)], root=tmp_path)
    html = tmp_path / "mine.html"
    html.write_text("my own notes")
    args = ["report", "--results", str(tmp_path), "--html", str(html)]
    refused = CliRunner().invoke(command.bench, args)
    assert isinstance(refused.exception, InputError) and "already exists" in refused.exception.message
    assert "--force" in refused.exception.hint
    assert html.read_text() == "my own notes"
    forced = CliRunner().invoke(command.bench, [*args, "--force"])
    assert forced.exit_code == 0, forced.output
    assert "<table>" in html.read_text()
