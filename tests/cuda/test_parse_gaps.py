"""CUDA the tree-sitter grammar cannot read (`__align__`, `__cluster_dims__`, `#pragma unroll` as an
unbraced loop body) parses whole through `syntax.parse`, with every node at its true byte offset and
line, and the static check is as strict around those constructs as anywhere else."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from skillbase.cuda import syntax
from skillbase.harness.static_check import check_source

ROOT = Path(__file__).resolve().parents[2]


def errors(tree) -> list[str]:
    return [f"{syntax.line(n)}: {n.type}" for n in syntax.walk(tree.root_node) if n.type == "ERROR" or n.is_missing]


def assert_offsets_exact(source: bytes, tree) -> None:
    """Every node's text is the source's bytes at its offsets, on the line its offset is on."""
    for node in syntax.walk(tree.root_node):
        assert node.text == source[node.start_byte:node.end_byte]
        row, column = node.start_point
        assert row == source.count(b"\n", 0, node.start_byte)
        assert column == node.start_byte - (source.rfind(b"\n", 0, node.start_byte) + 1)


ALIGNED_TILE = b"""__global__ void k(const float* a, float* out) {
    __shared__ __align__(16) float tile[64][64];
    tile[threadIdx.y][threadIdx.x] = a[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = tile[threadIdx.x][threadIdx.y];
}
"""
CLUSTER_KERNEL = b"""__global__ void __cluster_dims__(2, 1, 1) k(float* out) {
    out[blockIdx.x] = 1.0f;
}
"""
BOUNDED_KERNEL = b"""__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(256, 2) k(float* out) {
    out[blockIdx.x] = 1.0f;
}
__global__ void __maxnreg__(64) k2(float* out) { out[0] = 2.0f; }
"""
PRAGMA_NEST = b"""__global__ void k(float* acc, const float* a) {
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll 2
            for (int q = 0; q < 4; ++q) acc[i * 16 + j * 4 + q] += a[q];
    acc[0] = 0.0f;
}
"""


@pytest.mark.parametrize("source", [ALIGNED_TILE, CLUSTER_KERNEL, BOUNDED_KERNEL, PRAGMA_NEST],
                         ids=["align", "cluster_dims", "cluster_dims+launch_bounds+maxnreg", "pragma"])
def test_each_construct_parses_without_error_at_exact_offsets(source):
    plain = syntax.parser().parse(source)
    tree = syntax.parse(source)
    print(f"grammar alone: {errors(plain)}; syntax.parse: {errors(tree)}; hidden: {syntax.hidden_ranges(source)}")
    assert errors(plain), "the grammar reads this construct now: the hiding may be unnecessary"
    assert errors(tree) == []
    assert_offsets_exact(source, tree)


def test_aligned_shared_declaration_keeps_its_name_dims_and_text():
    tree = syntax.parse(ALIGNED_TILE)
    declaration = next(n for n in syntax.walk(tree.root_node) if n.type == "declaration")
    assert syntax.declarator_name(declaration.child_by_field_name("declarator")) == "tile"
    assert syntax.text(declaration.child_by_field_name("type")) == "float"
    assert syntax.text(declaration) == "__shared__ __align__(16) float tile[64][64];"
    assert syntax.line(declaration) == 2


def test_cluster_dims_kernel_is_a_kernel_with_its_name():
    function = syntax.parse(CLUSTER_KERNEL).root_node.children[0]
    assert function.type == "function_definition" and syntax.is_kernel(function)
    assert syntax.function_name(function.child_by_field_name("declarator")) == "k"


def test_pragma_nest_is_one_loop_nest_and_its_pragmas_are_recoverable():
    tree = syntax.parse(PRAGMA_NEST)
    outer = next(n for n in syntax.walk(tree.root_node) if n.type == "for_statement")
    middle = outer.child_by_field_name("body")
    inner = middle.child_by_field_name("body")
    assert (middle.type, inner.type) == ("for_statement", "for_statement")
    assert (syntax.line(outer), syntax.line(middle), syntax.line(inner)) == (2, 4, 6)
    assert syntax.hidden_pragmas(middle) == ["unroll"] and syntax.hidden_pragmas(inner) == ["unroll 2"]
    assert syntax.hidden_pragmas(outer) == []


def test_a_braced_body_pragma_stays_in_the_tree():
    source = b"__global__ void k(float* p) {\n#pragma unroll\n    for (int i = 0; i < 4; ++i) { p[i] = 0; }\n}\n"
    assert syntax.hidden_ranges(source) == []
    assert any(n.type == "preproc_call" for n in syntax.walk(syntax.parse(source).root_node))


def test_the_static_check_reports_lines_after_hidden_constructs_exactly():
    source = ALIGNED_TILE.replace(b"    __syncthreads();\n", b"    __syncthreads();\n    long t = clock64();\n")
    source += PRAGMA_NEST.replace(b"void k(", b"void k2(").replace(b"acc[0] = 0.0f;", b"acc[0] = (float)clock();")
    lines = source.decode().splitlines()
    expected = [("timing", lines.index("    long t = clock64();") + 1),
                ("timing", next(i for i, text in enumerate(lines, 1) if "(float)clock()" in text))]
    violations = check_source(source.decode())
    print([(v.rule, v.line) for v in violations], "expected", expected)
    assert expected == [("timing", 5), ("timing", 14)]      # after one aligned tile and two body pragmas
    assert [(v.rule, v.line) for v in violations] == expected


@pytest.mark.parametrize("construct", [
    b"__shared__ __align__(clock64()) float t[4];",
    b"__shared__ __align__(sizeof(float4) * (clock64() & 1)) float t[4];",
    b"float* q = (float*)malloc(__align__(16));",
])
def test_a_banned_call_inside_an_attribute_is_never_hidden(construct):
    """`parse` hides only constant arguments; a construct that calls anything stays in the tree and
    the static check sees the call."""
    source = b"__global__ void k(float* p) {\n    " + construct + b"\n    p[0] = 0;\n}\n"
    hidden = [source[a:b] for a, b in syntax.hidden_ranges(source)]
    assert not any(b"clock" in h or b"malloc" in h for h in hidden)
    violations = check_source(source.decode())
    print(construct, [(v.rule, v.line) for v in violations])
    assert violations and all(v.line == 2 for v in violations)


def test_a_banned_call_in_a_body_pragma_is_never_hidden():
    source = (b"__global__ void k(float* p) {\n    for (int i = 0; i < 4; ++i)\n#pragma unroll (clock() & 3)\n"
              b"        for (int j = 0; j < 4; ++j) p[j] += i;\n}\n")
    assert syntax.hidden_ranges(source) == []
    assert [(v.rule, v.line) for v in check_source(source.decode())] == [("timing", 3)]


def test_random_unbraced_nests_parse_whole():
    """Nests of random depth with a random mix of body pragmas and aligned shared tiles: no error,
    exact offsets, and the nest as deep as written."""
    rng = random.Random()
    for _ in range(40):
        depth = rng.randint(1, 6)
        lines = ["__global__ void k(float* out) {"]
        for level in range(rng.randint(0, 3)):
            alignment = rng.choice([8, 16, 32, 128])
            lines.append(f"    __shared__ __align__({alignment}) float s{level}[{rng.randint(1, 64)}];")
        for level in range(depth):
            if level and rng.random() < 0.7:
                pragmas = ["#pragma unroll", f"#pragma unroll {rng.randint(1, 8)}", "  #pragma nounroll"]
                lines.append(rng.choice(pragmas))
            lines.append("    " * (level + 1) + f"for (int i{level} = 0; i{level} < {rng.randint(1, 9)}; ++i{level})")
        lines.append("    " * (depth + 1) + "out[0] += 1.0f;")
        lines.append("}")
        source = "\n".join(lines).encode()
        tree = syntax.parse(source)
        assert errors(tree) == [], source.decode()
        assert_offsets_exact(source, tree)
        nest, node = 0, tree.root_node
        while (node := next((n for n in syntax.walk(node) if n.type == "for_statement" and n != node), None)):
            nest += 1
        assert nest == depth, source.decode()


def test_every_corpus_source_parses_without_error():
    """The skill examples, examples/, bench/ops/ and the test fixtures (less the deliberately broken
    one) all parse whole: 18 did not before `parse` hid the unreadable constructs."""
    patterns = ["skills/*/*/examples/**/*.cu", "examples/**/*.cu", "bench/ops/**/*.cu", "tests/fixtures/**/*.cu"]
    files = sorted({p for pattern in patterns for p in ROOT.glob(pattern)} - {ROOT / "tests/fixtures/bad/broken.cu"})
    failing = {str(p.relative_to(ROOT)): errors(syntax.parse(p.read_bytes())) for p in files}
    failing = {path: found for path, found in failing.items() if found}
    print(f"{len(files)} sources, {len(failing)} with parse errors")
    assert len(files) > 100 and failing == {}


def test_the_shared_parser_reads_whole_documents_after_a_parse_that_hid_ranges():
    syntax.parse(PRAGMA_NEST)
    source = b"int a;\n" * 40
    tree = syntax.parser().parse(source)
    assert len(tree.root_node.named_children) == 40 and not tree.root_node.has_error
