"""The one launcher reader (`skillbase.cuda.launchers`): what the task spec, `init` and the static
features take to be a launcher and its parameters."""

from __future__ import annotations

from skillbase.cuda import syntax
from skillbase.cuda.launchers import Param, launchers, launchers_from_source, parameters
from skillbase.evidence.static.features import static_features

SOURCE = b"""
#include <cuda_runtime.h>
__global__ void scale(const float* __restrict__ x, float* y, int n) { }
__device__ float helper(float v) { return v; }
static void not_exported(float* y) { }
extern "C" void launch(const float* __restrict__ x, float* y, int n, float alpha) { scale<<<1, 1>>>(x, y, n); }
extern "C" {
    int setup(int n) { return 0; }
    void teardown(void) { }
    __global__ void c_kernel(float* y) { }
}
namespace ns {
extern "C" void in_namespace(float const* x, unsigned int* count, size_t bytes) { }
}
"""


def test_only_extern_c_host_functions_are_launchers():
    found = launchers_from_source(SOURCE)
    # kernels (even with C linkage), device helpers and static functions are not
    assert list(found) == ["launch", "setup", "teardown", "in_namespace"]
    assert found["launch"].line == 6


def test_parameters_as_the_spec_reads_them():
    found = launchers_from_source(SOURCE)
    assert found["launch"].params == (Param("x", "float", True, True), Param("y", "float", True, False),
                                      Param("n", "int", False, False), Param("alpha", "float", False, False))
    # `float const*` is a const pointee too; the element type drops qualifiers
    assert found["in_namespace"].params == (Param("x", "float", True, True),
                                            Param("count", "unsigned int", True, False),
                                            Param("bytes", "size_t", False, False))


def test_void_means_no_parameters():
    found = launchers_from_source(SOURCE)
    assert found["teardown"].params == ()
    assert found["setup"].params == (Param("n", "int", False, False),)


def test_parameters_as_written_for_the_static_features():
    tree = syntax.parse(SOURCE)
    kernel = next(n for n in syntax.walk(tree.root_node)
                  if n.type == "function_definition" and syntax.declarator_name(n.child_by_field_name("declarator"))
                  == "scale")
    first = parameters(kernel)[0]
    assert (first.name, first.declared, first.base, first.pointer, first.const, first.restrict) == \
        ("x", "const float* __restrict__", "float", True, True, True)


def test_the_static_features_list_the_same_launchers(tmp_path):
    path = tmp_path / "k.cu"
    path.write_bytes(SOURCE)
    assert list(static_features(path)["launchers"]) == list(launchers(path))
