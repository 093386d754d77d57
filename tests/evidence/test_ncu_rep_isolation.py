"""A report is read where an abort inside ncu_report cannot end this process, and a valid report is
never called corrupt because of how it was isolated (issue 22): with other threads alive a fork could
inherit a lock held forever, and a forked child that dies is checked again in a clean interpreter."""

from __future__ import annotations

import threading

import pytest
from profile_kit import plain_report

from skillbase.errors import InputError
from skillbase.evidence import ncu_rep

REPORT = plain_report("naive_gemm")


def test_with_another_thread_alive_the_report_is_read_in_a_fresh_interpreter(monkeypatch):
    forked = []
    monkeypatch.setattr(ncu_rep, "_read_in_forked_child", lambda path: forked.append(path) or (b"", "unused"))
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        evidence = ncu_rep.load_ncu_report(REPORT)
    finally:
        stop.set()
        worker.join()
    assert not forked
    assert evidence.kernels and evidence.focus().duration_ns > 0


def test_a_forked_child_that_died_on_a_valid_report_is_not_the_last_word(monkeypatch):
    monkeypatch.setattr(ncu_rep, "_read_in_forked_child", lambda path: (b"", "signal SIGSEGV"))
    evidence = ncu_rep.load_ncu_report(REPORT)
    assert evidence.kernels


def test_a_reader_that_dies_in_both_places_is_one_line(monkeypatch):
    monkeypatch.setattr(ncu_rep, "_read_in_forked_child", lambda path: (b"", "signal SIGSEGV"))
    monkeypatch.setattr(ncu_rep, "_read_in_fresh_interpreter", lambda path: (b"", "signal SIGABRT"))
    with pytest.raises(InputError, match=r"corrupt Nsight Compute report \(its reader died: signal SIGABRT\)"):
        ncu_rep.load_ncu_report(REPORT)
