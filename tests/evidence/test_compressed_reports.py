"""xz-compressed profiles (`R.ncu-rep.xz`) read exactly like the plain report they hold.

The committed population keeps its reports compressed (10x smaller); every reader takes them: the
evidence built from a `.xz` is the plain report's, byte for byte, except the path that names it. The
plain copy is made once, in the user's private cache, keyed by the compressed file's content.
"""

from __future__ import annotations

import json
import lzma
import random
import shutil
import stat
from pathlib import Path

import pytest
from profile_kit import plain_report

from skillbase.cli import main
from skillbase.errors import InputError
from skillbase.evidence import build_evidence, load_any
from skillbase.evidence import compressed as compressed_module
from skillbase.evidence.compressed import plain_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REPORT = plain_report("naive_gemm")   # 377 kB as ncu wrote it, one kernel: sgemm_naive
SOURCE = FIXTURES / "kernels" / "naive_gemm.cu"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("SKILLBASE_CACHE", str(root))
    return root


@pytest.fixture
def pair(tmp_path) -> tuple[Path, Path]:
    """(the plain report, its .xz copy), side by side."""
    plain = tmp_path / "naive_gemm.ncu-rep"
    shutil.copyfile(REPORT, plain)
    packed = tmp_path / "naive_gemm.ncu-rep.xz"
    packed.write_bytes(lzma.compress(plain.read_bytes(), format=lzma.FORMAT_XZ))
    return plain, packed


def _same_document(plain_json: str, packed_json: str, plain: Path, packed: Path) -> None:
    # the one difference: the document names the file it was read from
    assert json.loads(packed_json)["producer"]["source_path"] == str(packed)
    assert packed_json.replace(json.dumps(str(packed)), json.dumps(str(plain))) == plain_json


def test_evidence_from_the_xz_copy_is_the_plain_reports(cache, pair):
    plain, packed = pair
    assert packed.stat().st_size < plain.stat().st_size / 5
    _same_document(load_any(plain).to_json(), load_any(packed).to_json(), plain, packed)
    # with a kernel named, and built with the source's static features and ptxas
    _same_document(load_any(plain, "sgemm").to_json(), load_any(packed, "sgemm").to_json(), plain, packed)
    with_source = [build_evidence(report=p, source=SOURCE).to_json() for p in (plain, packed)]
    _same_document(*with_source, plain, packed)


def test_decompressed_once_into_the_private_cache_keyed_by_content(cache, pair, tmp_path):
    plain, packed = pair
    first = plain_file(packed)
    assert first.read_bytes() == plain.read_bytes() and first.name == "naive_gemm.ncu-rep"
    assert first.is_relative_to(cache)
    for folder in (cache, *[p for p in first.parents if p.is_relative_to(cache) and p != cache]):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    written = first.stat().st_mtime_ns
    load_any(packed)
    assert plain_file(packed) == first and first.stat().st_mtime_ns == written   # not decompressed again

    # the same name with other content (a re-captured report) is decompressed again, to its own copy
    other = plain_report("streaming_copy")
    packed.write_bytes(lzma.compress(other.read_bytes(), format=lzma.FORMAT_XZ))
    second = plain_file(packed)
    assert second != first and second.read_bytes() == other.read_bytes()
    assert load_any(packed).focus_kernel == load_any(other).focus_kernel != load_any(plain).focus_kernel
    # a plain report is read where it is
    assert plain_file(plain) == plain


def test_damaged_xz_is_one_line_naming_the_file(cache, pair):
    _, packed = pair
    data = bytearray(packed.read_bytes())
    rng = random.Random()
    offset = rng.randrange(len(data))   # xz checks every block and its index: any changed byte is caught
    data[offset] ^= rng.randrange(1, 256)
    damaged = packed.with_name("damaged.ncu-rep.xz")
    damaged.write_bytes(bytes(data))
    truncated = packed.with_name("truncated.ncu-rep.xz")
    truncated.write_bytes(packed.read_bytes()[: rng.randrange(1, len(data) - 1)])
    not_xz = packed.with_name("plain-bytes.ncu-rep.xz")
    shutil.copyfile(REPORT, not_xz)
    for bad in (damaged, truncated, not_xz):
        with pytest.raises(InputError) as caught:
            load_any(bad)
        assert caught.value.message.startswith(f"{bad}: corrupt or truncated .xz file"), (offset, caught.value)
        assert "\n" not in str(caught.value)
    # nothing half-written is left for a later read to trust, nor an empty folder per damaged file
    assert not list((cache / "decompressed").iterdir())


def test_valid_xz_of_something_else_names_the_xz_not_the_cache(cache, tmp_path):
    packed = tmp_path / "notes.ncu-rep.xz"
    packed.write_bytes(lzma.compress(b"not a profile\n", format=lzma.FORMAT_XZ))
    with pytest.raises(InputError) as caught:
        load_any(packed)
    assert caught.value.message.startswith(f"{packed}: not an Nsight Compute report")
    assert str(cache) not in str(caught.value)


def test_an_xz_bomb_stops_at_the_limit(cache, pair, monkeypatch):
    _, packed = pair
    monkeypatch.setattr(compressed_module, "MAX_DECOMPRESSED_BYTES", REPORT.stat().st_size - 1)
    with pytest.raises(InputError, match="decompresses to more than"):
        load_any(packed)
    assert not list((cache / "decompressed").iterdir())


def test_advise_cli_takes_the_xz_report(cache, pair, capsys):
    rankings = []
    for report in pair:
        try:
            main(["advise", "--report", str(report), "--json"])
        except SystemExit as exit_info:
            assert exit_info.code in (0, None)
        rankings.append([(c["skill"], c["score"]) for c in json.loads(capsys.readouterr().out)["candidates"]])
    assert rankings[0] and rankings[0] == rankings[1]


def test_calibration_population_reads_xz_reports_with_their_source(cache, pair, tmp_path):
    from skillbase.calibrate.population import expand_paths, load_population, member_label
    from skillbase.engine import Engine

    plain, packed = pair
    folders = {}
    for kind, report in (("plain", plain), ("packed", packed)):
        folder = tmp_path / kind
        folder.mkdir()
        shutil.copyfile(report, folder / report.name.replace("naive_gemm", "mem.coalesce.before"))
        shutil.copyfile(SOURCE, folder / "mem.coalesce.before.cu")
        folders[kind] = folder
    assert [p.name for p in expand_paths([folders["packed"]])] == ["mem.coalesce.before.ncu-rep.xz"]
    assert member_label(folders["packed"] / "mem.coalesce.before.ncu-rep.xz") == "mem.coalesce.before"

    population = load_population([folders["plain"], folders["packed"]], Engine.load())
    # the same measurement twice: counted once; the digest is the plain content's, compressed or not
    assert population.reports == 2 and len(population.members) == 1 and len(population.duplicates) == 1
    alone = {kind: load_population([folder], Engine.load()).members[0] for kind, folder in folders.items()}
    assert alone["packed"].report_digest == alone["plain"].report_digest
    assert alone["packed"].values == alone["plain"].values
    assert alone["packed"].evidence.static is not None   # the source beside K.before.ncu-rep.xz was found


def test_compress_file_writes_what_xz_reads_back(cache, tmp_path):
    from skillbase.evidence.compressed import compress_file

    target = compress_file(REPORT, tmp_path / "r.ncu-rep.xz")
    assert lzma.decompress(target.read_bytes(), format=lzma.FORMAT_XZ) == REPORT.read_bytes()
    if shutil.which("xz"):   # the real tool agrees
        import subprocess

        out = subprocess.run(["xz", "-dc", str(target)], capture_output=True, check=True).stdout
        assert out == REPORT.read_bytes()
    assert load_any(target).to_json() == load_any(REPORT).to_json().replace(
        json.dumps(str(REPORT)), json.dumps(str(target)))
    assert [p.name for p in tmp_path.iterdir() if p.is_file()] == ["r.ncu-rep.xz"]   # no partial copy left
