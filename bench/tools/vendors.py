"""Vendor implementations (hand-written `vendor_<dtype>.cu` beside the baselines): the library, what
to link and the hooks the harness calls outside timing. The generator writes their task specs (the
baseline's task with the library allowed and linked, `hooks:` named and the baseline kernel as the
reference) and lists them in op.yaml (library only, for display).

Every vendor .cu defines `extern "C" int bench_setup(<the launcher's scalar args, in order>)`, which
creates handles, plans and workspaces for one size and returns 0 on success, and
`extern "C" void bench_teardown(void)`, which frees them."""

from _gen import OPS

HOOKS = {"setup": "bench_setup", "teardown": "bench_teardown"}


def vendor(library: str, link: list | None = None) -> dict:
    """`link` defaults to the library itself; header-only libraries (CUB) link nothing."""
    return {"library": library, "link": [library] if link is None else list(link), "hooks": dict(HOOKS)}


CUBLAS = vendor("cublas")
VENDORS = {
    "matrix_mul": {"vendor_fp32": CUBLAS, "vendor_bf16": CUBLAS},
    "square_matrix_mul": {"vendor_fp32": CUBLAS},
    "matrix_vector_mul": {"vendor_fp32": CUBLAS},
    "dot_product": {"vendor_fp32": CUBLAS},
    "spmv_csr": {"vendor_fp32": vendor("cusparse")},
    "fft": {"vendor_fp32": vendor("cufft")},
    "prefix_sum": {"vendor_fp32": vendor("cub", link=[])},
    "sorting": {"vendor_fp32": vendor("cub", link=[])},
}

for _op, _entries in VENDORS.items():
    OPS[_op].vendor = dict(_entries)
