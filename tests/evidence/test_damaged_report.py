"""A damaged .ncu-rep never takes the process down (issue 22). The fuzz suite found 7 bytes in the
fixture report's header whose change fails a CHECK inside ncu_report's protobuf reader, which aborts
the whole interpreter; the report is now read in a forked child, and its death is one InputError."""

from __future__ import annotations

import pytest
from profile_kit import plain_report

from skillbase.errors import InputError
from skillbase.evidence import load_ncu_report

REPORT = plain_report("naive_gemm")   # the bytes as ncu wrote them: offsets below are into these
# offset 194 of the fixture: what the fuzz suite wrote there (was 5f67656d6d0c2d)
ABORTING_BYTES = (194, bytes.fromhex("c1f0305e9f64b8"))


def test_the_bytes_that_aborted_the_reader_are_one_input_error(tmp_path):
    offset, chunk = ABORTING_BYTES
    data = bytearray(REPORT.read_bytes())
    data[offset: offset + len(chunk)] = chunk
    damaged = tmp_path / "damaged.ncu-rep"
    damaged.write_bytes(bytes(data))
    with pytest.raises(InputError, match="corrupt Nsight Compute report") as caught:
        load_ncu_report(damaged)
    assert "re-capture" in caught.value.hint


def test_the_intact_report_reads_the_same_through_the_child():
    evidence = load_ncu_report(REPORT)
    assert evidence.kernels and evidence.kernels[0].name == "sgemm_naive"
    assert evidence.kernels[0].metrics
