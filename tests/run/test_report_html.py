"""The run report as a person reads it (issue 19): real tables, no Python None, a speedup plot on
integer rounds, a roofline with its roofs, ridge point and each round's kernel, and ncu's guided
analysis beside skillbase's advice. The run is recorded through the store's own API with what a GPU
run records: each round's evidence is built from a real H200 profile of the kernel that round
started from (naive, then tiled, then tensor-core GEMM) and the decision is the real engine's ranking
of it; the timings are given as the harness records them (baseline, accepted, slower, never timed).
The page is then opened in headless Chromium, and its rendered DOM and screenshot are looked at.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest
from profile_kit import plain_report

from skillbase.corpus.load import load_corpus
from skillbase.engine import Engine
from skillbase.evidence import load_ncu_report
from skillbase.run.report import render_html, render_markdown, run_report, write_report
from skillbase.run.session import make_decide
from skillbase.run.store import RunStore
from skillbase.run.types import LoopState

PROFILES = Path(__file__).resolve().parents[1] / "fixtures" / "profiles"
ROUNDS = ("naive_gemm", "tiled_gemm", "tensor_core_gemm")
pytestmark = pytest.mark.skipif(not all((PROFILES / r / "report.ncu-rep.xz").is_file() for r in ROUNDS),
                                reason="no profiler fixtures")


# the timings the harness recorded: the baseline, the accepted tiled kernel, a slower try
US = {"baseline": 3148.96, "tiled": 1021.37, "slower": 1098.25}


def _record_gpu_run(store: RunStore, task: Path) -> tuple[int, dict[str, float]]:
    """A three-round run as the loop stores it; returns the run id and its timings (µs)."""
    engine, corpus = Engine.load(), load_corpus()
    decide = make_decide("openai", engine, corpus, mechanical=None)
    evidence = {name: load_ncu_report(plain_report(name)) for name in ROUNDS}
    us = dict(US)
    run_id = store.create_run(str(task), "sgemm", {"agent": "openai", "model": "scripted", "gpu": "NVIDIA H200",
                                                  "seed": None, "git": "abc1234"})
    baseline = us["baseline"]
    outcomes = {  # round -> [(status, reason, runtime_us)]
        0: [("accepted", "verified, 1 of 1 sizes faster", us["tiled"])],
        1: [("incorrect", "max abs error 3.1e-2 > atol 1e-4 at size m", None),
            ("slower", "0.93x vs the current best", us["slower"])],
        2: [("build-failed", "error: identifier \"wmma\" is undefined | line 12", None)],
    }
    for idx, name in enumerate(ROUNDS):
        candidates, trace = decide(evidence[name], LoopState(best_source=""))
        digest = store.artifacts.put_text(evidence[name].to_json())
        with store.transaction() as tx:
            tx.start_round(run_id, idx, f"k{idx}")
            tx.add_evidence(run_id, idx, f"k{idx}", digest, None)
            tx.add_decision(run_id, idx, candidates[0].skill, {}, [c.stored() for c in candidates],
                            store.artifacts.put_text(trace), f"{candidates[0].skill}: {candidates[0].because}")
            for attempt, (status, reason, runtime) in enumerate(outcomes[idx]):
                row = tx.add_attempt(run_id, idx, attempt, candidates[0].skill, {}, f"k{idx}", f"k{idx}.{attempt}")
                tx.finish_attempt(row, status, reason, runtime_us=runtime, baseline_us=baseline if runtime else None,
                                  speedup=baseline / runtime if runtime else None, spread=0.01 if runtime else None)
            tx.finish_round(run_id, idx, "improved" if idx == 0 else "no improvement")
    store.update_run(run_id, status="finished", stop_reason="ran 3 rounds", baseline_us=baseline,
                     best_us=us["tiled"])
    return run_id, us


@pytest.fixture(scope="module")
def gpu_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    task = folder / "sgemm.cu"
    task.write_text("// the task's kernel\n")
    store = RunStore.open(folder / "store")
    run_id, us = _record_gpu_run(store, task)
    return store, run_id, us, folder


class _Page(HTMLParser):
    """The page's visible text and its tables as lists of rows of cell texts."""

    def __init__(self):
        super().__init__()
        self.text, self.tables, self._cell, self._in = [], [], None, []

    def handle_starttag(self, tag, attrs):
        self._in.append(tag)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "br" and self._cell is not None:
            self._cell.append("\n")

    def handle_endtag(self, tag):
        while self._in and self._in.pop() != tag:
            pass
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if "style" in self._in or "title" in self._in:
            return
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def _parse(page: str) -> _Page:
    parsed = _Page()
    parsed.feed(page)
    return parsed


def test_the_page_is_tables_not_markdown_and_never_says_none(gpu_run):
    store, run_id, us, _ = gpu_run
    page = _parse(render_html(run_report(store, run_id)))
    text = " ".join(page.text)
    assert "<pre" not in render_html(run_report(store, run_id)) and "|---|" not in text
    assert not re.search(r"\bNone\b", text) and "nan" not in text.split()
    summary, rounds, advice, roofline, manifest = page.tables
    assert ["baseline", "3,149.0 µs"] in summary and ["best", "1,021.4 µs"] in summary
    assert ["speedup", "3.08x"] in summary
    assert rounds[0] == ["round", "skill", "outcome", "best try", "runtime (µs)", "speedup", "reason"]
    # round 1 shows its last attempt (nothing accepted), round 2 a build failure that was never timed
    assert rounds[1][1:6] == ["mem.smem_tiling", "improved", "1", "1,021.4", "3.08x"]
    assert rounds[2][2:6] == ["no improvement", "2", "1,098.2", "2.87x"]
    assert rounds[3][4:6] == ["not measured", "—"] and "wmma" in rounds[3][6]
    assert ["seed", "—"] in manifest


def test_advice_sits_beside_ncus_guided_analysis_for_each_round(gpu_run):
    store, run_id, _, _ = gpu_run
    report = run_report(store, run_id)
    advice = _parse(render_html(report)).tables[2]
    assert advice[0][2:] == ["skillbase proposed (est. time saved)",
                             "Nsight Compute's guided analysis says (est. speedup)"]
    naive = advice[1]
    assert naive[1] == "sgemm_naive"
    assert naive[2].splitlines()[0].startswith("1. mem.smem_tiling") and "← chosen" in naive[2].splitlines()[0]
    guided = run_report(store, run_id)["evidence"][0]["guided_analysis"]
    first = next(g for g in guided if g["type"] != "INF")
    assert naive[3].splitlines()[0].startswith(f"{first['type']} {first['summary']}")
    assert [row[1] for row in advice[1:]] == ["sgemm_naive", "sgemm_tiled", "hgemm_wmma_global"]
    markdown = render_markdown(report)
    assert "| 0 | sgemm_naive | 1. mem.smem_tiling" in markdown and "<br>" in markdown
    assert "- round 2: no FP32/FP64 FLOPs counted" in markdown
    assert not re.search(r"\bNone\b", markdown)


def _svg_texts(page: str) -> list[list[str]]:
    return [re.findall(r"<text[^>]*>([^<]*)</text>", svg) for svg in re.findall(r"<svg.*?</svg>", page, re.S)]


def test_the_plots_have_integer_rounds_and_a_roofline_with_roofs_ridge_and_rounds(gpu_run):
    store, run_id, _, _ = gpu_run
    report = run_report(store, run_id)
    speedup, roofline = _svg_texts(render_html(report))
    assert {"0", "1", "2"} <= set(speedup) and "round" in speedup
    assert not [t for t in speedup if re.fullmatch(r"−?\d+\.\d+", t) and float(t.replace("−", "-")) < 0.5]
    device = report["evidence"][0]["device"]
    assert f"DRAM {device['peak_dram_bytes_per_s'] / 1e12:.2f} TB/s" in roofline
    assert f"FP32 peak {device['peak_fp32_flops_per_s'] / 1e12:.1f} TFLOP/s" in roofline
    assert f"FP64 peak {device['peak_fp64_flops_per_s'] / 1e12:.1f} TFLOP/s" in roofline
    ridge = device["peak_fp32_flops_per_s"] / device["peak_dram_bytes_per_s"]
    assert f"ridge {ridge:.1f} FLOP/B" in roofline
    assert "r0 sgemm_naive" in roofline and "r1 sgemm_tiled" in roofline
    # the tensor-core kernel counts no FP32 FLOPs: it is named under the plot, not silently dropped
    notes = _parse(render_html(report)).text
    assert any("round 2: no FP32/FP64 FLOPs counted" in n for n in notes)


@pytest.mark.nvcc
def test_a_real_cpu_loop_run_reports_every_value_or_says_why_not(task, tmp_path):
    """The loop itself (agent none, no GPU, the fixture's saved H200 profile): nothing timed, so the
    page says 'not measured', and round 0 still shows the engine's ranking beside ncu's findings."""
    from loop_kit import REPORT

    from skillbase.run.session import start_run
    from skillbase.run.types import Settings

    summary = start_run(task, Settings(rounds=2, agent="none"), store_path=tmp_path / "store", gpu=False,
                        saved_report=REPORT, progress=lambda line: None)
    store = RunStore.open(tmp_path / "store")
    written = write_report(store, summary["run"], tmp_path / "out")
    page = _parse(written.html.read_text())
    text = " ".join(page.text)
    assert not re.search(r"\bNone\b", text) and not re.search(r"\bNone\b", written.markdown.read_text())
    assert ["baseline", "not measured"] in page.tables[0] and ["speedup", "none verified"] in page.tables[0]
    advice = page.tables[2][1]
    assert advice[1] == "sgemm_naive" and advice[2].startswith("1. mem.smem_tiling")
    assert advice[3].startswith("OPT ")


@pytest.mark.gpu
@pytest.mark.nvcc
def test_a_gpu_run_puts_each_rounds_profiled_kernel_under_the_h200s_roofs(task, tmp_path, monkeypatch):
    """The loop on the GPU (ncu profiles each round's kernel): round 0's naive kernel and round 1's
    tiled kernel (the scripted coder's answer, accepted) are both on the roofline, under the roofs
    ncu measured on this device."""
    from llm_server import ScriptedLLM, Step
    from loop_kit import TILED, fenced

    from skillbase.run.session import start_run
    from skillbase.run.types import Settings

    monkeypatch.setenv("SKILLBASE_LLM_TIMEOUT", "0.5")
    monkeypatch.setenv("SKILLBASE_LLM_RETRIES", "1")
    late = Step(content="late", delay_s=2.0)                  # round 1: the endpoint times out
    with ScriptedLLM([Step(content=fenced(TILED)), late, late]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        summary = start_run(task, Settings(rounds=2, repairs=0, agent="openai", model="scripted"),
                            store_path=tmp_path / "store", gpu=True, progress=lambda line: None)
    store = RunStore.open(tmp_path / "store")
    report = run_report(store, summary["run"])
    kernels = [e["focus_kernel"] for e in report["evidence"]]
    assert kernels[:2] == ["sgemm_naive", "sgemm_tiled"], kernels
    for entry in report["evidence"][:2]:
        peaks = {**entry["device"], **entry["roofline"]}
        assert peaks["peak_dram_bytes_per_s"] > 1e12 and peaks["peak_fp32_flops_per_s"] > 1e13, peaks
        assert entry["roofline"]["achieved_flops_per_s"] > 0 and entry["roofline"]["arithmetic_intensity_flop_per_byte"]
    page = render_html(report)
    speedup, roofline = _svg_texts(page)
    assert {"r0 sgemm_naive", "r1 sgemm_tiled"} <= set(roofline) and any(t.startswith("ridge ") for t in roofline)
    assert any(t.startswith("FP32 peak ") for t in roofline) and {"0", "1"} <= set(speedup)
    assert not re.search(r"\bNone\b", " ".join(_parse(page).text))


def test_write_report_keeps_existing_files_and_the_command_writes_both(gpu_run, tmp_path):
    from click.testing import CliRunner

    from skillbase.commands.report import report as report_command

    store, run_id, _, folder = gpu_run
    md, page = write_report(store, run_id, tmp_path)
    with pytest.raises(Exception, match="already exists"):
        write_report(store, run_id, tmp_path)
    result = CliRunner().invoke(report_command, [f"run_{run_id}", "-o", str(tmp_path / "cli"),
                                                 "--store", str(folder / "store")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "cli" / md.name).read_text() == md.read_text()
    assert page.read_text() == (tmp_path / "cli" / page.name).read_text()


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


def _chromium(*args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                              text=True, timeout=120)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_chromium_renders_the_tables_and_plots(gpu_run, tmp_path):
    from PIL import Image

    store, run_id, us, _ = gpu_run
    _, page = write_report(store, run_id, tmp_path)
    dom = _chromium("--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    rendered = _parse(dom.stdout)
    assert len(rendered.tables) == 5 and len(rendered.tables[1]) == 4        # header + 3 rounds
    assert rendered.tables[1][1][4] == "1,021.4"
    assert dom.stdout.count("<svg") == 2

    shot = tmp_path / "page.png"
    result = _chromium(f"--screenshot={shot}", "--window-size=1280,2400", page.as_uri())
    assert result.returncode == 0 and shot.is_file(), result.stderr[-2000:]
    image = Image.open(shot).convert("RGB")
    assert image.size == (1280, 2400)
    pixels = image.load()

    def count(rows: range, colour: tuple[int, int, int], tolerance: int = 12) -> int:
        """Pixels of COLOUR in ROWS (every other column)."""
        return sum(1 for y in rows for x in range(0, 1280, 2)
                   if all(abs(a - b) <= tolerance for a, b in zip(pixels[x, y], colour, strict=True)))

    band = 100 * 640
    blank = [count(range(y, y + 100), (255, 255, 255), 0) / band for y in range(0, 1400, 100)]
    # the title, the summary table and both plots fill the first 1400 px: no blank band of 100 px
    assert max(blank) < 0.995, blank
    everything = range(0, 2400)
    assert count(everything, (0xf4, 0xf4, 0xf4), 1) > 3000       # table headers drawn with their background
    assert count(everything, (0xcc, 0xcc, 0xcc), 8) > 3000       # and their cell borders
    assert count(everything, (0x2c, 0xa0, 0x2c), 20) >= 10        # the green point of the improving round
    assert count(everything, (0x1f, 0x77, 0xb4), 20) > 100       # the speedup step line
