"""Input generators: dense distributions, structured sparse matrices, and user hooks.

Every generator draws from the one `numpy.random.Generator` that `make_inputs` creates from the
seed, so a (spec, sizes, seed) triple always gives the same bytes and another seed gives other
values. Structured generators (csr, csc, coo, ell) fill several arguments at once because their
parts (row pointers, indices, values) are only valid together.
"""

from __future__ import annotations

import numpy as np

from skillbase.task.dtypes import DTYPES, to_storage

__all__ = ["dense", "structured", "STRUCTURED_PARTS", "DEFAULT_FLOAT_INIT", "DEFAULT_INT_INIT", "nnz_for"]

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


def dense(init: dict, dtype_name: str, numel: int, rng: np.random.Generator) -> np.ndarray:
    """A flat array of `numel` elements in the host storage of `dtype_name`."""
    d = DTYPES[dtype_name]
    dist = init["dist"]
    work = _float_work_dtype(dtype_name) if d.is_float else np.int64
    if dist == "uniform":
        low, high = float(init.get("low", -1.0)), float(init.get("high", 1.0))
        if d.is_float:
            values = rng.random(numel, dtype=work)
            values *= work(high - low)   # in place: the same values as x * w + l, without temporaries
            values += work(low)
        else:
            values = rng.integers(int(low), int(high), size=numel, endpoint=False)
    elif dist == "normal":
        mean, std = float(init.get("mean", 0.0)), float(init.get("std", 1.0))
        values = rng.standard_normal(numel, dtype=work if d.is_float else np.float64) * std + mean
        if not d.is_float:
            values = np.rint(values)
    elif dist == "randint":
        values = rng.integers(int(init.get("low", 0)), int(init.get("high", 100)), size=numel)
    elif dist == "ones":
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
