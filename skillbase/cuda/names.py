"""Kernel names: demangling (c++filt / cu++filt when present) and the base function name.

ncu, ptxas and the source each spell a kernel differently (`_Z6kernelPfi`, `kernel(float *, int)`,
`void kernel<128>(float*)`, `kernel`). Everything is matched on the *base name*: the function
identifier without namespace, template arguments, parameters or return type.
"""

from __future__ import annotations

import functools
import shutil
import subprocess


def base_name(name: str) -> str:
    """`void ns::k<128, float>(float *, int)` -> `k`; `_Z1kPf` -> `k`; `k` -> `k`."""
    name = name.strip()
    if name.startswith("_Z"):
        parsed = itanium_base_name(name)
        return parsed if parsed else name
    head = _strip_params(name)
    head = _strip_templates(head)
    # drop a return type or qualifiers before the name ("void k", "static __global__ void k")
    head = head.split()[-1] if head.split() else head
    return head.split("::")[-1]


def without_params(name: str) -> str:
    """`void k<128>(float*)` -> `k<128>`; `k(float *, int)` -> `k`; whitespace removed inside <>."""
    head = _strip_params(name.strip())
    depth = 0
    # A return type precedes the name only at template depth 0: keep the last top-level word.
    start = 0
    for index, char in enumerate(head):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == " " and depth == 0:
            start = index + 1
    return "".join(head[start:].split())


def _strip_params(name: str) -> str:
    """Cut the parameter list: the last top-level '(' that is not part of `operator()`."""
    depth = 0
    for index, char in enumerate(name):
        if char == "<":
            depth += 1
        elif char == ">":
            depth = max(0, depth - 1)
        elif char == "(" and depth == 0:
            return name[:index].rstrip()
    return name


def _strip_templates(name: str) -> str:
    out, depth = [], 0
    for char in name:
        if char == "<":
            depth += 1
        elif char == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(char)
    return "".join(out).strip()


def itanium_base_name(mangled: str) -> str | None:
    """Base function name from an Itanium mangled name, without a demangler.

    Handles `_Z<len><id>…`, nested `_ZN…<len><id>[I…E]E…` and template arguments; returns None
    for shapes it does not know (a caller then keeps the mangled name).
    """
    s = mangled
    if not s.startswith("_Z"):
        return None
    i = 2
    if i < len(s) and s[i] == "L":  # internal linkage (static functions)
        i += 1
    if i < len(s) and s[i] == "N":
        i += 1
        while i < len(s) and s[i] in "rVKRO":  # cv / ref qualifiers of member functions
            i += 1
        last = None
        while i < len(s) and s[i] != "E":
            if s[i].isdigit():
                ident, i = _source_name(s, i)
                if ident is None:
                    return None
                last = ident
            elif s[i] == "I":
                i = _skip_template_args(s, i)
                if i < 0:
                    return None
            elif s.startswith("St", i):
                i += 2
            elif s[i] == "S":  # substitution S_, S0_, …
                end = s.find("_", i)
                if end < 0:
                    return None
                i = end + 1
            else:
                return last
        return last
    if i < len(s) and s[i].isdigit():
        ident, _ = _source_name(s, i)
        return ident
    return None


def _source_name(s: str, i: int) -> tuple[str | None, int]:
    j = i
    while j < len(s) and s[j].isdigit():
        j += 1
    length = int(s[i:j])
    ident = s[j:j + length]
    if len(ident) != length:
        return None, -1
    return ident, j + length


def _skip_template_args(s: str, i: int) -> int:
    """From an 'I' to just past its matching 'E'; identifiers are skipped by their length."""
    depth = 0
    while i < len(s):
        char = s[i]
        if char.isdigit() and depth > 0:
            _, i = _source_name(s, i)
            if i < 0:
                return -1
            continue
        if char == "L" and depth > 0:  # literal L<type><value>E: no nesting inside
            end = s.find("E", i)
            if end < 0:
                return -1
            i = end + 1
            continue
        if char in "INX":
            depth += 1
        elif char == "E":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


@functools.cache
def _demangler() -> str | None:
    for tool in ("cu++filt", "c++filt"):
        path = shutil.which(tool)
        if path:
            return path
    return None


def demangle_all(names: list[str]) -> dict[str, str]:
    """Demangle many names with one demangler process; names it cannot read map to themselves."""
    names = [n for n in dict.fromkeys(names) if n]
    tool = _demangler()
    if not names:
        return {}
    if tool is None:
        return {n: n for n in names}
    try:
        result = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True, text=True, timeout=10)
        lines = result.stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return {n: n for n in names}
    if result.returncode != 0 or len(lines) != len(names):
        return {n: n for n in names}
    return dict(zip(names, lines, strict=True))
