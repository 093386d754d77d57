"""Vendor implementations (hand-written `vendor_<dtype>.cu` beside the baselines): library, link
flags and the untimed setup/teardown functions. The generator writes their task specs (the
baseline's task with the library allowed) and lists them in op.yaml."""

from _gen import OPS

CUBLAS = {"library": "cublas", "link": ["cublas"], "setup": "bench_setup", "teardown": "bench_teardown"}
VENDORS = {
    "matrix_mul": {"vendor_fp32": CUBLAS, "vendor_bf16": CUBLAS},
    "square_matrix_mul": {"vendor_fp32": CUBLAS},
    "matrix_vector_mul": {"vendor_fp32": CUBLAS},
    "dot_product": {"vendor_fp32": CUBLAS},
    "spmv_csr": {"vendor_fp32": {"library": "cusparse", "link": ["cusparse"], "setup": "bench_setup",
                                 "teardown": "bench_teardown"}},
    "fft": {"vendor_fp32": {"library": "cufft", "link": ["cufft"], "setup": "bench_setup", "teardown": "bench_teardown"}},
    "prefix_sum": {"vendor_fp32": {"library": "cub", "link": [], "setup": "bench_setup", "teardown": "bench_teardown"}},
    "sorting": {"vendor_fp32": {"library": "cub", "link": [], "setup": "bench_setup", "teardown": "bench_teardown"}},
}

for _op, _entries in VENDORS.items():
    OPS[_op].vendor = dict(_entries)
