"""Input generators: dense distributions, structured sparse matrices, and user hooks.

Every generator draws from the one `numpy.random.Generator` that `make_inputs` creates from the
seed (a large dense draw from chunk generators seeded by it), so a (spec, sizes, seed) triple always
gives the same bytes and another seed gives other values. Structured generators (csr, csc, coo,
ell) fill several arguments at once because their parts (row pointers, indices, values) are only valid together.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from skillbase.task.dtypes import DTYPES, to_storage

__all__ = ["dense", "in_chunks", "structured", "STRUCTURED_PARTS", "DEFAULT_FLOAT_INIT", "DEFAULT_INT_INIT", "nnz_for"]

# An in/inout array without `init` gets these: symmetric floats exercise sign handling and
# cancellation; small non-negative ints are safe as counts but NOT as indices (specify those).
DEFAULT_FLOAT_INIT = {"dist": "uniform", "low": -1.0, "high": 1.0}
DEFAULT_INT_INIT = {"dist": "randint", "low": 0, "high": 100}

# generator -> (index parts that must be integer arrays, optional value part)
STRUCTURED_PARTS: dict[str, tuple[tuple[str, ...], str]] = {
    "csr": (("rowptr", "colind"), "values"),
    "csc": (("colptr", "rowind"), "values"),
    "coo": (("row", "col"), "values"),
    "ell": (("colind",), "values"),
}


def _float_work_dtype(name: str):
    # f64 draws in f64; everything else draws in f32 (bf16/f16 are rounded from it).
    return np.float64 if name == "f64" else np.float32


# A dense draw of at least PARALLEL_MIN elements is cut into CHUNK-element chunks, each filled by its own
# generator (SeedSequence.spawn, numpy's documented parallel scheme) on a thread pool sized to the cores:
# numpy's fills and ufuncs release the GIL. The chunking depends on the element count only, never on the
# core count, so a (spec, sizes, seed) gives the same bytes on every machine. Smaller draws take the seed's
# generator directly, as before.
PARALLEL_MIN = 1 << 22
CHUNK = 1 << 22


def _threads() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def in_chunks(numel: int, fill, chunk: int | None = None) -> None:
    """fill(start, stop) over [0, numel) in `chunk`-element (default CHUNK) pieces, on threads when there
    are several."""
    chunk = chunk or CHUNK
    bounds = [(start, min(start + chunk, numel)) for start in range(0, numel, chunk)]
    if len(bounds) <= 1 or _threads() == 1:
        for start, stop in bounds:
            fill(start, stop)
        return
    with ThreadPoolExecutor(max_workers=min(_threads(), len(bounds))) as pool:
        for future in [pool.submit(fill, start, stop) for start, stop in bounds]:
            future.result()      # the first failure raises here, as in the single-thread loop


_DRAWN = ("uniform", "normal", "randint")     # the random dists drawn chunk by chunk


def dense(init: dict, dtype_name: str, numel: int, rng: np.random.Generator) -> np.ndarray:
    """A flat array of `numel` elements in the host storage of `dtype_name`."""
    d = DTYPES[dtype_name]
    dist = init["dist"]
    if dist in _DRAWN:
        bounds = _int_bounds(init, dtype_name) if not d.is_float and dist != "normal" else None
        out = np.empty(numel, dtype=d.storage)
        if numel < PARALLEL_MIN:
            _draw(init, dtype_name, out, rng, bounds)
        else:
            # The chunks' seeds come from the seed's generator, which then goes on to the next argument.
            children = np.random.SeedSequence([int(x) for x in rng.integers(0, 2**63, size=4)]).spawn(
                -(-numel // CHUNK))
            in_chunks(numel, lambda start, stop: _draw(
                init, dtype_name, out[start:stop], np.random.Generator(np.random.PCG64(children[start // CHUNK])),
                bounds))
        return out
    work = _float_work_dtype(dtype_name) if d.is_float else np.int64
    if dist == "ones":
        values = np.ones(numel, dtype=work)
    elif dist == "zeros":
        values = np.zeros(numel, dtype=work)
    elif dist == "constant":
        values = np.full(numel, init["value"], dtype=work)
    elif dist == "arange":
        values = np.arange(numel, dtype=np.float64 if d.is_float else np.int64)
        values = values * init.get("step", 1) + init.get("start", 0)
    elif dist == "permutation":
        values = rng.permutation(numel)
    elif dist == "sorted":
        if d.is_float:
            low, high = float(init.get("low", -1.0)), float(init.get("high", 1.0))
            values = np.sort(rng.random(numel, dtype=work) * work(high - low) + work(low))
        else:
            values = np.sort(rng.integers(int(init.get("low", 0)), int(init.get("high", max(numel, 1))), size=numel))
    else:  # pragma: no cover - the schema restricts dist
        raise ValueError(f"unknown dist {dist}")
    _check_range(values, dtype_name, dist)
    return to_storage(values, dtype_name)


def _declared_range(init: dict) -> tuple[float, float] | tuple[int, int]:
    """[low, high) of a uniform (floats) or randint (ints) draw, with the spec format's defaults."""
    if init["dist"] == "uniform":
        return float(init.get("low", -1.0)), float(init.get("high", 1.0))
    return int(init.get("low", 0)), int(init.get("high", 100))


def _int_bounds(init: dict, dtype_name: str) -> tuple[int, int]:
    """[low, high) of a uniform/randint integer draw, refused when the dtype cannot hold it: the declared
    range bounds every value, so nothing is scanned afterwards."""
    low, high = (int(bound) for bound in _declared_range(init))
    info = np.iinfo(DTYPES[dtype_name].storage)
    if high > low and (low < info.min or high - 1 > info.max):
        raise ValueError(f"{init['dist']} values span [{low}, {high - 1}], outside {dtype_name} "
                         f"[{info.min}, {info.max}]")
    return low, high


def _draw(init: dict, dtype_name: str, out: np.ndarray, rng: np.random.Generator, bounds) -> None:
    """Fill `out` (storage dtype) from `rng`: floats drawn in their work dtype, straight into `out` when
    that is the storage (f32, f64), else through one chunk-sized temporary (bf16, f16); ints in int64,
    cast into `out` (the declared bounds were checked; a normal draw is checked here, chunk by chunk)."""
    d = DTYPES[dtype_name]
    dist, numel = init["dist"], out.size
    if d.is_float and dist in ("uniform", "normal"):
        work = _float_work_dtype(dtype_name)
        values = out if out.dtype == work else np.empty(numel, dtype=work)
        if dist == "uniform":
            low, high = _declared_range(init)
            rng.random(out=values, dtype=work)
            values *= work(high - low)   # in place: the same values as x * w + l, without temporaries
            values += work(low)
        else:
            rng.standard_normal(out=values, dtype=work)
            values *= work(float(init.get("std", 1.0)))
            values += work(float(init.get("mean", 0.0)))
        if values is not out:
            out[...] = to_storage(values, dtype_name)
        return
    if dist == "normal":              # integers from a rounded normal: unbounded, so checked
        values = np.rint(rng.standard_normal(numel) * float(init.get("std", 1.0)) + float(init.get("mean", 0.0)))
        _check_range(values, dtype_name, dist)
    elif d.is_float:                  # randint into a float type
        values = rng.integers(*_declared_range(init), size=numel)
    else:
        values = rng.integers(*bounds, size=numel)
    out[...] = to_storage(values, dtype_name)


def _check_range(values: np.ndarray, dtype_name: str, what: str) -> None:
    d = DTYPES[dtype_name]
    if d.is_float or values.size == 0:
        return
    info = np.iinfo(d.storage)
    low, high = values.min(), values.max()
    if low < info.min or high > info.max:
        raise ValueError(f"{what} values span [{low}, {high}], outside {dtype_name} [{info.min}, {info.max}]")


def nnz_for(init: dict, rows: int, cols: int, nnz: int | None, width: int | None) -> int:
    """Non-zeros of a csr/csc/coo matrix: `nnz` when given, else round(density*rows*cols)."""
    if nnz is None:
        nnz = int(round(float(init.get("density", 0.01)) * rows * cols))
    if not 0 <= nnz <= rows * cols:
        raise ValueError(f"nnz {nnz} does not fit a {rows}x{cols} matrix")
    return nnz


def _positions(rng: np.random.Generator, rows: int, cols: int, nnz: int) -> np.ndarray:
    # Distinct linear positions, sorted: row-major order, no duplicate (row, col) pairs.
    if nnz == 0:
        return np.zeros(0, dtype=np.int64)
    return np.sort(rng.choice(rows * cols, size=nnz, replace=False).astype(np.int64))


def structured(init: dict, rows: int, cols: int, nnz: int | None, width: int | None,
               part_dtypes: dict[str, str], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Arrays for each part of a csr / csc / coo / ell matrix, keyed by part name (flat)."""
    kind = init["generator"]
    values_init = init.get("values") or DEFAULT_FLOAT_INIT
    out: dict[str, np.ndarray] = {}
    if kind in ("csr", "csc", "coo"):
        nnz = nnz_for(init, rows, cols, nnz, width)
        if kind == "csc":
            # Column-major positions: sample in the transposed matrix.
            pos = _positions(rng, cols, rows, nnz)
            major, minor = pos // rows, pos % rows
            out["colptr"] = np.concatenate([[0], np.cumsum(np.bincount(major, minlength=cols))])
            out["rowind"] = minor
        else:
            pos = _positions(rng, rows, cols, nnz)
            major, minor = pos // cols, pos % cols
            if kind == "csr":
                out["rowptr"] = np.concatenate([[0], np.cumsum(np.bincount(major, minlength=rows))])
                out["colind"] = minor
            else:
                out["row"], out["col"] = major, minor
        count = nnz
    elif kind == "ell":
        if width is None:
            width = max(1, int(round(float(init.get("density", 0.01)) * cols)))
        if not 0 < width <= cols:
            raise ValueError(f"ell width {width} must be in 1..cols ({cols})")
        pad = int(init.get("pad_index", -1))
        # Ragged rows (the default) leave padding in most rows, which a correct ELL kernel must skip.
        if init.get("ragged", True):
            lengths = rng.integers(max(1, width // 2), width + 1, size=rows)
        else:
            lengths = np.full(rows, width)
        # Sorted distinct columns per row, vectorised: a sorted draw from [0, cols-width] plus
        # 0..width-1 is strictly increasing and stays below cols.
        colind = np.sort(rng.integers(0, cols - width + 1, size=(rows, width)), axis=1) + np.arange(width)
        colind[np.arange(width)[None, :] >= lengths[:, None]] = pad
        mask = colind != pad
        count = rows * width
        if init.get("layout", "row") == "col":
            colind, mask = colind.T.copy(), mask.T.copy()
        out["colind"] = colind.reshape(-1)
    else:  # pragma: no cover
        raise ValueError(f"unknown generator {kind}")
    for part, array in list(out.items()):
        out[part] = to_storage(np.asarray(array), part_dtypes.get(part, "i64"))
        _check_range(np.asarray(array), part_dtypes.get(part, "i64"), f"{kind} {part}")
    if "values" in part_dtypes:
        values = dense(values_init if "dist" in values_init else {**DEFAULT_FLOAT_INIT, **values_init},
                       part_dtypes["values"], count, rng)
        if kind == "ell":
            zero = to_storage(np.zeros(1), part_dtypes["values"])[0]
            values = values.copy()
            values[~mask.reshape(-1)] = zero
        out["values"] = values
    return out
