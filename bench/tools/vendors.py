"""Vendor implementations (hand-written `vendor_<dtype>.cu` beside the baselines): the library, what
to link and the hooks the harness calls outside timing. The generator writes their task specs (the
baseline's task with the library allowed and linked, `hooks:` named and the baseline kernel as the
reference) and lists them in op.yaml (library only, for display).

Every vendor .cu defines `extern "C" int bench_setup(<the launcher's scalar args, in order>)`, which
creates handles, plans and workspaces for one size and returns 0 on success, and
`extern "C" void bench_teardown(void)`, which frees them.

NO_VENDOR says, for every operator (or dtype) without a vendor implementation, why: op.yaml's
`no_vendor`, shown by `skillbase bench list --json` and in the operator's README."""

from _gen import OPS

HOOKS = {"setup": "bench_setup", "teardown": "bench_teardown"}


def vendor(library: str, link: list | None = None, allow: list | None = None) -> dict:
    """`link` defaults to the library itself; header-only libraries (CUB) link nothing. `allow` defaults
    to the library (CUB's transform-reduces also use Thrust's counting iterator: [cub, thrust])."""
    return {"library": library, "link": [library] if link is None else list(link), "hooks": dict(HOOKS),
            **({"allow": list(allow)} if allow else {})}


CUBLAS = vendor("cublas")
CUB = vendor("cub", link=[])
CUB_COUNTING = vendor("cub", link=[], allow=["cub", "thrust"])
CUDNN = vendor("cudnn")
CUSPARSE = vendor("cusparse")
VENDORS = {
    "matrix_mul": {"vendor_fp32": CUBLAS, "vendor_bf16": CUBLAS},
    "square_matrix_mul": {"vendor_fp32": CUBLAS, "vendor_bf16": CUBLAS},
    "matrix_vector_mul": {"vendor_fp32": CUBLAS, "vendor_bf16": CUBLAS},
    "dot_product": {"vendor_fp32": CUBLAS, "vendor_bf16": CUB_COUNTING},
    "spmv_csr": {"vendor_fp32": CUSPARSE, "vendor_bf16": CUSPARSE},
    "fft": {"vendor_fp32": vendor("cufft")},
    "prefix_sum": {"vendor_fp32": CUB},
    "sorting": {"vendor_fp32": CUB, "vendor_bf16": CUB},
    # Issue 17: cuBLAS geam (out-of-place C = alpha op(A) + beta op(B)) covers these exactly, FP32 only.
    "vector_add": {"vendor_fp32": CUBLAS},
    "matrix_scalar_mul": {"vendor_fp32": CUBLAS},
    "matrix_copy": {"vendor_fp32": CUBLAS},
    "matrix_transpose": {"vendor_fp32": CUBLAS},
    # CUB transform-reduces (the loss is a sum of per-element terms, FP32 accumulation).
    "mse_loss": {"vendor_fp32": CUB_COUNTING, "vendor_bf16": CUB_COUNTING},
    "hinge_loss": {"vendor_fp32": CUB_COUNTING, "vendor_bf16": CUB_COUNTING},
    "monte_carlo_int": {"vendor_fp32": CUB},
    "simpson_int": {"vendor_fp32": CUB_COUNTING},
    "top_k": {"vendor_fp32": CUB, "vendor_bf16": CUB},
    # cuBLAS GEMMs: p - 1 products (the baseline's algorithm); one strided-batched GEMM per j.
    "matrix_power": {"vendor_fp32": CUBLAS, "vendor_bf16": CUBLAS},
    "high_order_contraction": {"vendor_fp32": CUBLAS},
    # cuSPARSE's generic API in every format it has (BF16: BF16 values, FP32 compute).
    "spmv_coo": {"vendor_fp32": CUSPARSE, "vendor_bf16": CUSPARSE},
    "spmv_csc": {"vendor_fp32": CUSPARSE, "vendor_bf16": CUSPARSE},
    "spmm_csr": {"vendor_fp32": CUSPARSE, "vendor_bf16": CUSPARSE},
    "spmm_coo": {"vendor_fp32": CUSPARSE, "vendor_bf16": CUSPARSE},
    "spmm_csc": {"vendor_fp32": CUSPARSE, "vendor_bf16": CUSPARSE},
    # cuDNN's legacy API (cudnn.h, -lcudnn): handles and descriptors made in setup. BF16: the same
    # routines on CUDNN_DATA_BFLOAT16 tensors; the convolutions in PSEUDO_BFLOAT16_CONFIG (FP32 compute).
    "relu": {"vendor_fp32": CUDNN, "vendor_bf16": CUDNN},
    "sigmoid": {"vendor_fp32": CUDNN, "vendor_bf16": CUDNN},
    "row_tanh": {"vendor_fp32": CUDNN, "vendor_bf16": CUDNN},
    "elu": {"vendor_fp32": CUDNN, "vendor_bf16": CUDNN},
    "softmax": {"vendor_fp32": CUDNN, "vendor_bf16": CUDNN},
    "batch_norm": {"vendor_fp32": CUDNN},
    "conv_1d": {"vendor_fp32": CUDNN, "vendor_bf16": CUDNN},
    "conv_2d": {"vendor_fp32": CUDNN, "vendor_bf16": CUDNN},
    "max_pooling_2d": {"vendor_fp32": CUDNN, "vendor_bf16": CUDNN},
}

GEAM_BF16 = "BF16: cuBLAS's geam has no BF16 variant (S, D, C and Z only)."
NO_ROUTINE = "No vendor library has this operation as a routine: the bench compares it with PyTorch only."
NO_VENDOR = {
    # -- elementwise ---------------------------------------------------------------------------------------
    "vector_add": GEAM_BF16,
    "matrix_scalar_mul": GEAM_BF16,
    "matrix_copy": GEAM_BF16 + " (a copy is cudaMemcpyAsync, a runtime call the launcher may not make.)",
    "matrix_transpose": GEAM_BF16,
    "leaky_relu": "cuDNN's legacy activations have no leaky ReLU (its graph API's pointwise RELU_FWD with a "
                  "lower slope does, through cudnn-frontend, which the bench does not use); no other library has it.",
    "selu": "No library routine: cuDNN's legacy activations have no SELU (ELU's coefficient cannot add the "
            "output scale).",
    "gelu": "cuDNN's legacy activations have no GELU (its graph API's pointwise GELU_FWD would need "
            "cudnn-frontend, which the bench does not use); no other library has it as a routine.",
    "swiglu": "No library routine for silu(gate) * up (cuDNN's legacy SWISH activation is silu alone; the "
              "product needs a second pass of our own, which would not be the library's result).",
    "silu_and_mul": "No library routine (vLLM's fused kernel; cuDNN's legacy SWISH activation is silu alone).",
    "reverse_array": NO_ROUTINE,
    # -- reduction -----------------------------------------------------------------------------------------
    "cross_entropy_loss": "No single routine: cuDNN's log-softmax (cudnnSoftmaxForward, CUDNN_SOFTMAX_LOG) "
                          "gives the row log-probabilities, but picking each row's label and the mean need "
                          "kernels of ours, and CUB has no segmented log-sum-exp.",
    "prefix_sum": "BF16: CUB's scan would accumulate in BF16 (its accumulator is the input type); the "
                  "baseline accumulates in FP32.",
    # -- dense ---------------------------------------------------------------------------------------------
    "high_order_contraction": "BF16: accumulating the J strided-batched GEMMs through a BF16 C would round J "
                              "times; the baseline accumulates in FP32 (a BF16 vendor would need an FP32 "
                              "scratch the task does not have).",
    # -- llm -----------------------------------------------------------------------------------------------
    "layer_norm": "cuDNN's legacy API has no LayerNorm (its graph API's norm forward would need "
                  "cudnn-frontend, which the bench does not use); no other library routine.",
    "rms_norm": "cuDNN's legacy API has no RMSNorm (its graph API's norm forward would need cudnn-frontend, "
                "which the bench does not use); no other library routine.",
    "batch_norm": "BF16: cuDNN's cudnnBatchNormalizationForwardTraining takes BF16 x and y only in its "
                  "PSEUDO_BFLOAT16_CONFIG, whose scale, bias, mean and variance (bnScaleBiasMeanVarDesc, as "
                  "cudnnDeriveBNTensorDescriptor derives it) are CUDNN_DATA_FLOAT (cuDNN API reference, cudnn_ops "
                  "library, cudnnBatchNormalizationForwardTraining, supported configurations: "
                  "https://docs.nvidia.com/deeplearning/cudnn/latest/api/cudnn-ops-library.html). This task's gamma "
                  "and beta are BF16: converting them needs the data, which bench_setup does not get, so every call "
                  "would first run a conversion kernel of ours. (PyTorch does not send BF16 batch norm to cuDNN "
                  "either.)",
    "rope": NO_ROUTINE,
    "softmax_attention": "cuDNN's fused attention exists only in its graph API (through cudnn-frontend, "
                         "which the bench does not use); no legacy routine. PyTorch's SDPA is the reference.",
    "merge_attn_states": NO_ROUTINE + " (It is vLLM's own kernel.)",
    "triangle_attention": NO_ROUTINE + " (AlphaFold's; cuDNN's attention has no per-row bias layout like it.)",
    # -- sparse --------------------------------------------------------------------------------------------
    "spmv_ell": "cuSPARSE's SpMV has no ELL format (its Blocked-ELL is for SpMM only), so no vendor routine.",
    "spmm_ell": "cuSPARSE has Blocked-ELL, not ELL: converting this ELL (column-major, -1 padding) to "
                "Blocked-ELL with block size 1 needs the data, which bench_setup does not get, so every call "
                "would convert first; not implemented.",
    # -- scientific ----------------------------------------------------------------------------------------
    "stencil_2d": NO_ROUTINE,
    "stencil_3d": NO_ROUTINE,
    "fft": "BF16 does not apply (see bf16_reason).",
}

for _op, _entries in VENDORS.items():
    OPS[_op].vendor = dict(_entries)
for _op, _reason in NO_VENDOR.items():
    OPS[_op].no_vendor = _reason
