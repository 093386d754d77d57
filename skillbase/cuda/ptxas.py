"""Parse the resource report of `nvcc -Xptxas -v` (registers, shared memory, stack, spills, barriers).

Only entry functions (kernels) are kept. Keys follow the evidence's kernel naming: the base name
(`tmpl_kernel`, namespace and template arguments dropped) when it is unique in the report, else
the demangled name without parameters (`tmpl_kernel<float,128>`), so that `evidence.ptxas[focus]`
finds the focus kernel whichever tool named it.
"""

from __future__ import annotations

import re
from typing import Any

from skillbase.cuda.names import base_name, demangle_all, without_params

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[0\]")

FIELDS = ("registers", "shared_bytes", "stack_frame_bytes", "spill_store_bytes", "spill_load_bytes",
          "cmem_bytes", "barriers", "arch")


def parse_ptxas(text: str) -> dict[str, dict[str, Any]]:
    """`{kernel: {registers, shared_bytes, stack_frame_bytes, spill_store_bytes, spill_load_bytes,
    cmem_bytes, barriers, arch, mangled}}` for every entry function in TEXT (empty when none)."""
    entries: dict[str, dict[str, Any]] = {}
    stacks: dict[str, tuple[int, int, int]] = {}
    current: str | None = None      # entry function whose "Used …" line comes next
    properties: str | None = None   # function whose stack/spill line comes next
    for line in text.splitlines():
        if match := _ENTRY.search(line):
            current = match.group(1)
            entries[current] = {"registers": None, "shared_bytes": 0, "stack_frame_bytes": None,
                                "spill_store_bytes": None, "spill_load_bytes": None, "cmem_bytes": None,
                                "barriers": None, "arch": match.group(2), "mangled": current}
            continue
        if match := _PROPS.search(line):
            properties = match.group(1)
            continue
        if (match := _STACK.search(line)) and properties:
            stacks[properties] = tuple(int(g) for g in match.groups())  # type: ignore[assignment]
            continue
        if (match := _USED.search(line)) and current in entries:
            entry = entries[current]
            entry["registers"] = int(match.group(1))
            if m := _BARRIERS.search(line):
                entry["barriers"] = int(m.group(1))
            if m := _SMEM.search(line):
                entry["shared_bytes"] = int(m.group(1))
            if m := _CMEM.search(line):
                entry["cmem_bytes"] = int(m.group(1))
            current = None
    for mangled, entry in entries.items():
        if mangled in stacks:
            entry["stack_frame_bytes"], entry["spill_store_bytes"], entry["spill_load_bytes"] = stacks[mangled]
    return _rekey(entries)


def _rekey(entries: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    demangled = demangle_all(list(entries))
    bases = [base_name(demangled.get(m, m)) for m in entries]
    out: dict[str, dict[str, Any]] = {}
    for (mangled, entry), base in zip(entries.items(), bases, strict=True):
        if bases.count(base) == 1:
            key = base
        else:
            full = demangled.get(mangled, mangled)
            key = without_params(full) if full != mangled else mangled
        out[key] = entry
    return out
