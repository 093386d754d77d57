"""Draft `K.task.yaml` from K.cu's extern "C" launcher signature (`skillbase init`).

What the signature tells us is filled in: argument order and names, dtypes from C types, size
symbols from int parameters, a role guessed from constness (const pointer -> in, otherwise out).
What it cannot tell (array shapes with several size symbols, the work model, real sizes) is left
as `TODO`, which `load_task` rejects, so an unfinished spec can never be used by accident. Every
guess and every TODO is returned as one line, for the user to check.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from skillbase.cuda.launchers import Launcher, launchers
from skillbase.errors import InputError
from skillbase.task.dtypes import DTYPES, STREAM_HINT, STREAM_TYPES, c_type_dtypes

__all__ = ["draft_spec"]

_INT_DTYPES = ("i32", "i64", "u32", "i8", "u8")
# Irregular sizes: not multiples of 32, and different from each other so swapped dimensions show.
_IRREGULAR = (1000, 1003, 997, 1009, 991, 1013, 983, 1019)


def _pick_launcher(path: Path, name: str | None) -> Launcher:
    found = launchers(path)
    if not found:
        raise InputError(f"{path}: no extern \"C\" launcher found",
                         hint='add one, e.g. extern "C" void launch(const float* x, float* y, int n) '
                              '{ kernel<<<…>>>(…); }')
    if name is None:
        if len(found) > 1:
            raise InputError(f"{path}: several extern \"C\" functions ({', '.join(found)}); choose one",
                             hint=f"skillbase init {path} --launcher {next(iter(found))}")
        return next(iter(found.values()))
    if name not in found:
        raise InputError(f"{path}: no extern \"C\" function '{name}' (found: {', '.join(found)})")
    return found[name]


@dataclass(frozen=True)
class Drafted:
    """A task spec written by `init`: where, and what the user must still check (one line each)."""

    kernel: Path
    spec: Path
    todo: tuple[str, ...]

    def to_json(self) -> dict:
        from skillbase.documents import versioned

        return versioned("init", {"kernel": str(self.kernel), "spec": str(self.spec), "todo": list(self.todo)})


def write_draft(kernel: str | Path, launcher: str | None = None, force: bool = False) -> Drafted:
    """Draft KERNEL's task spec and write it beside the kernel (never over an existing one without `force`)."""
    from skillbase.task.spec import spec_path_for

    kernel_path, spec_path = spec_path_for(kernel)
    if spec_path.exists() and not force:
        raise InputError(f"{spec_path} already exists; not overwriting it", hint="pass --force to replace it")
    text, todo = draft_spec(kernel_path, launcher)
    spec_path.write_text(text)
    return Drafted(kernel_path, spec_path, tuple(todo))


def draft_spec(cu_path: str | Path, launcher: str | None = None) -> tuple[str, list[str]]:
    """(YAML text of the draft, the things the user must still fill in or check, one line each)."""
    path = Path(cu_path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    fn = _pick_launcher(path, launcher)
    todo: list[str] = []
    symbols = [p.name for p in fn.params if not p.pointer and (c_type_dtypes(p.type) or ("",))[0] in _INT_DTYPES]
    arg_lines: list[str] = []
    pointer_bytes: list[str] = []
    for i, p in enumerate(fn.params):
        where = f"args[{i}] ({p.name})"
        compatible = c_type_dtypes(p.type)
        if compatible is None and not p.pointer and p.type.strip() in STREAM_TYPES:
            arg_lines.append(f"  - {{name: {p.name}, dtype: i64, value: 0}}   # TODO: drop this stream parameter")
            todo.append(f"{where}: a {p.type} parameter; {STREAM_HINT}")
            continue
        if compatible is None:
            dtype = "f32"
            todo.append(f"{where}.dtype: C type '{p.type}' has no dtype; f32 is a placeholder")
        else:
            dtype = compatible[0]
        if p.pointer:
            role = "in" if p.const else "out"
            if len(symbols) == 1:
                shape = f"[{symbols[0]}]"
                todo.append(f"{where}.shape: guessed [{symbols[0]}]; check it")
                pointer_bytes.append(f"{DTYPES[dtype].itemsize}*{symbols[0]}")
            else:
                shape = "[TODO]"
                todo.append(f"{where}.shape: TODO - its dimensions as expressions over "
                            f"{', '.join(symbols) or 'size symbols'}")
            if not p.const:
                todo.append(f"{where}.role: guessed out (non-const pointer); use inout if the kernel reads it, "
                            "in if it only reads")
            init = ""
            if role == "in" and not DTYPES[dtype].is_float:
                init = ", init: {dist: randint, low: 0, high: 100}"
                todo.append(f"{where}.init: integer input; if it holds indices, bound them "
                            "(randint high, permutation, csr generator)")
            comment = "" if p.const else "   # role guessed"
            arg_lines.append(f"  - {{name: {p.name}, dtype: {dtype}, shape: {shape}, role: {role}{init}}}{comment}")
        else:
            if p.name in symbols:
                arg_lines.append(f"  - {{name: {p.name}, dtype: {dtype}, value: {p.name}}}")
            else:
                arg_lines.append(f"  - {{name: {p.name}, dtype: {dtype}, value: 1.0}}   # TODO: the value to pass")
                todo.append(f"{where}.value: 1.0 is a placeholder for this {p.type} scalar")
    if not symbols:
        todo.append("sizes: the launcher has no int parameter; add size symbols to the presets and use them in shapes")
    if not any("role: out" in line or "role: inout" in line for line in arg_lines):
        todo.append("args: no argument is written (all pointers are const); mark the output role out or inout")

    def size_set(values) -> str:
        if not symbols:
            return "{TODO: 1}"
        return "{" + ", ".join(f"{s}: {v}" for s, v in zip(symbols, values, strict=True)) + "}"

    single = len(symbols) == 1
    # GEMM-like launchers (2-3 sizes) get square guesses; longer lists (conv) get small ones to edit.
    few = len(symbols) <= 3
    small = [1 << 20] if single else [256 if few else 8] * len(symbols)
    default = [1 << 24] if single else [2048 if few else 64] * len(symbols)
    irregular = [1000003] if single else \
        list(_IRREGULAR[:len(symbols)]) + [1001] * max(0, len(symbols) - len(_IRREGULAR))
    todo.append("sizes.presets: guessed sizes; set the sizes that matter "
                "(one whose data exceed the 60 MB L2 for memory-bound kernels)")
    if single and pointer_bytes:
        work_bytes = " + ".join(pointer_bytes)
        flops = f"{symbols[0]}   # TODO: flops per call"
        todo.append("work.flops: TODO - floating-point operations of one call "
                    "(a guess of one per element is filled in)")
        todo.append("work.bytes: guessed as every array read or written once; check it")
    else:
        work_bytes = "TODO   # compulsory DRAM bytes of one call, e.g. 4*(M*K + K*N + M*N)"
        flops = "TODO   # floating-point operations of one call, e.g. 2*M*N*K"
        todo.append("work.flops: TODO - floating-point operations of one call")
        todo.append("work.bytes: TODO - compulsory DRAM bytes of one call")

    text = "\n".join([
        f"# Drafted by `skillbase init {path.name}` from {fn.name}'s signature (line {fn.line}).",
        "# Fill in every TODO and check every guess; docs/task-format.md describes each field.",
        f"launcher: {fn.name}",
        "args:",
        *arg_lines,
        "sizes:",
        "  presets:",
        f"    small: {size_set(small)}",
        f"    default: {size_set(default)}",
        "  scored: [default]",
        f"  irregular: {size_set(irregular)}   # not a multiple of 32: catches tile assumptions",
        "work:",
        f"  flops: {flops}",
        f"  bytes: {work_bytes}",
        "allow: []",
        "reference: null   # the original kernel is the reference",
        "",
    ])
    return text, todo
