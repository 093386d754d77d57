"""The loop tests' task: the naive-GEMM fixture kernel in a temporary folder, and the candidates the
scripted LLM answers with (a tiled kernel, one that does not compile, one that cheats)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import skillbase.evidence.build as build_module

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REPORT = FIXTURES / "profiles" / "naive_gemm" / "report.ncu-rep.xz"

TILED = r"""
#include <cuda_runtime.h>
#define TILE 16
__global__ void sgemm_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        As[threadIdx.y][threadIdx.x] = (row < M && t + threadIdx.x < K) ? A[row * K + t + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (t + threadIdx.y < K && col < N) ? B[(t + threadIdx.y) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
extern "C" void launch(const float* A, const float* B, float* C, int M, int N, int K) {
    dim3 block(TILE, TILE);
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    sgemm_tiled<<<grid, block>>>(A, B, C, M, N, K);
}
"""
BROKEN = TILED.replace("float acc = 0.0f;", "float acc = 0.0f")          # a compile error
CHEAT = TILED.replace("    dim3 block(TILE, TILE);",                      # allocation inside the launcher
                      "    float* scratch; cudaMalloc(&scratch, 4);\n    dim3 block(TILE, TILE);")


def analysed_before_h74(patch: pytest.MonkeyPatch, counted: int | None = None) -> None:
    """The loop's static analysis (`build_evidence`) as it was before H74's fix (issue 16): every pointer
    parameter of a kernel counted as a read-only input, outputs too (or `counted` of them). What the runs of
    the LLM bench run recorded; the naive-GEMM fixture has 2 read-only inputs (A, B) and 3 pointers."""
    real = build_module.static_features

    def before_the_fix(*args, **kwargs):
        features = real(*args, **kwargs)
        for kernel in features["kernels"].values():
            every = sum(1 for param in kernel["params"] if param["pointer"])
            kernel["global_access"]["pointer_inputs"] = every if counted is None else counted
        return features
    patch.setattr(build_module, "static_features", before_the_fix)


def fenced(code: str) -> str:
    return f"Here is the kernel.\n```cuda\n{code}\n```\nDone."


@pytest.fixture
def task(tmp_path, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loop-test-secret")
    folder = tmp_path / "task"
    folder.mkdir()
    # The profiled fixture minus its stand-alone driver: the same kernel and launcher, one file.
    source = (FIXTURES / "kernels" / "naive_gemm.cu").read_text()
    source = source.split("#ifdef FIXTURE_MAIN")[0].replace('#include "common.h"', "#include <cuda_runtime.h>")
    (folder / "naive_gemm.cu").write_text(source)
    shutil.copy(FIXTURES / "kernels" / "naive_gemm.task.yaml", folder / "naive_gemm.task.yaml")
    return folder / "naive_gemm.cu"
