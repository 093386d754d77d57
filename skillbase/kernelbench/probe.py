"""Run one KernelBench problem file (untrusted code) in its own process and describe it as JSON.

`python -m skillbase.kernelbench.probe PROBLEM.py RESULT.json` imports the problem, reads the module
constants that `get_inputs()` / `get_init_inputs()` use, and runs the model:

- on torch's `meta` device (shapes and operators only, no memory, no arithmetic) at the default sizes
  and once per candidate size symbol changed alone, to fit the shapes and the work model (fit.py),
  then with every kept symbol changed at once (the irregular preset) to check the fit;
- for real on the CPU at the irregular sizes (when small enough): the forward pass twice on the same
  inputs must agree (no unseeded randomness), and two input draws must give the same output shape.

An input that is a Python number (`s = 3.14` in `[A, s]`) becomes a scalar argument of the launcher with
the value get_inputs() returned (SCALARS gives its task dtype); one that changes between two calls of
get_inputs() (drawn at random) is rejected, since a task's scalar argument is one value, not a draw.

The result is either {"reason": one line} (the problem cannot become a task) or the task's facts.
The parent (importer.py) runs this with a timeout; the standard library and torch only.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import keyword
import math
import re
import sys
from pathlib import Path

from skillbase.kernelbench.fit import MIN_SYMBOL_VALUE, Monomial, fit_dim, fit_flops, irregular_value

# torch dtype name -> task dtype
DTYPES = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "int32": "i32",
          "int64": "i64", "int8": "i8", "uint8": "u8"}
# A Python number get_inputs() returns -> the task dtype of its launcher argument. The widest types keep the
# exact value the problem returned (a Python float is a double); a bool travels as 0/1 (C `bool`).
SCALARS = {"float": "f64", "int": "i64", "bool": "u8"}
PYTHON_TYPES = {"bool": bool, "int": int, "float": float}
# Sizes are also checked this many steps below their defaults (every symbol is at least MIN_SYMBOL_VALUE).
CHECK_STEP = 3
# The real CPU checks run only when the irregular size holds at most this many elements in all.
CPU_CHECK_ELEMENTS = 20_000_000
REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "prod", "var", "std", "var_mean", "std_mean", "norm",
              "linalg_vector_norm", "_softmax", "_log_softmax", "logsumexp", "cumsum", "cumprod", "argmax",
              "argmin", "native_layer_norm", "native_batch_norm", "_native_batch_norm_legit",
              "_native_batch_norm_legit_functional", "native_group_norm", "_weight_norm_interface",
              "avg_pool1d", "avg_pool2d", "avg_pool3d", "max_pool1d", "max_pool2d_with_indices",
              "max_pool3d_with_indices", "adaptive_avg_pool1d", "_adaptive_avg_pool2d", "_adaptive_avg_pool3d",
              "adaptive_max_pool2d", "adaptive_max_pool3d"}


class Rejected(Exception):
    """The problem cannot become a task; the message is the one-line reason."""


def main(argv: list[str]) -> int:
    problem, result_path = Path(argv[0]), Path(argv[1])
    try:
        result = describe(problem)
    except Rejected as error:
        result = {"reason": str(error)}
    except Exception as error:  # noqa: BLE001 - whatever the untrusted file raises is its reason, in one line
        result = {"reason": f"{type(error).__name__}: {_line(error)}"}
    result_path.write_text(json.dumps(result))
    return 0


def _line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return (text[0] if text else type(error).__name__)[:300]


def load(problem: Path):
    spec = importlib.util.spec_from_file_location("kernelbench_problem", problem)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # noqa: BLE001 - its own failure, reported in one line
        raise Rejected(f"does not import: {type(error).__name__}: {_line(error)}") from None
    missing = [name for name in ("Model", "get_inputs", "get_init_inputs") if not hasattr(module, name)]
    if missing:
        raise Rejected(f"not a KernelBench problem: no {', '.join(missing)}")
    return module


def candidate_symbols(module) -> dict[str, int]:
    """Module constants read by get_inputs / get_init_inputs that are large enough to be sizes."""
    names = set(module.get_inputs.__code__.co_names) | set(module.get_init_inputs.__code__.co_names)
    found = {}
    for name in sorted(names):
        value = getattr(module, name, None)
        if type(value) is int and value >= MIN_SYMBOL_VALUE and re.fullmatch(r"[A-Za-z_]\w*", name) \
                and not keyword.iskeyword(name):
            found[name] = value
    return found


def trace(module, torch, sizes: dict[str, int]) -> dict:
    """Shapes of the inputs, the parameters and buffers, the output, and flops per operator, on `meta`."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import flop_registry

    for name, value in sizes.items():
        setattr(module, name, value)
    flops: list[int] = []
    op_shapes: list[list[int]] = []     # each counted operator's output shape (a product form of its flops)

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            packet = func.overloadpacket
            counted = len(flops)
            if packet in flop_registry:
                flops.append(int(flop_registry[packet](*args, **kwargs, out_val=out)))
            elif torch.Tag.pointwise in func.tags:
                first = out[0] if isinstance(out, (tuple, list)) else out
                flops.append(int(first.numel()) if isinstance(first, torch.Tensor) else 0)
            elif packet.__name__ in REDUCTIONS:
                tensor = next((a for a in args if isinstance(a, torch.Tensor)), None)
                flops.append(int(tensor.numel()) if tensor is not None else 0)
            if len(flops) > counted:
                first = out[0] if isinstance(out, (tuple, list)) else out
                op_shapes.append(list(first.shape) if isinstance(first, torch.Tensor) else [])
            return out

    try:
        with torch.device("meta"):
            init = module.get_init_inputs()
            model = module.Model(*init)
            inputs = module.get_inputs()
            again = module.get_inputs()
    except Exception as error:  # noqa: BLE001
        if ".item()" in str(error):
            raise Rejected("building the model or its inputs reads a tensor's value (.item()), which the probe "
                           "cannot do on the meta device (a scalar input must be a Python number)") from None
        raise Rejected(f"building the model or its inputs failed at {sizes}: {type(error).__name__}: "
                       f"{_line(error)}") from None
    if not isinstance(inputs, (list, tuple)):
        raise Rejected("get_inputs() does not return a list")
    scalars = [scalar_fact(i, x, torch) for i, x in enumerate(inputs)]
    if [tuple(x.shape) if s is None else s[0] for x, s in zip(inputs, scalars, strict=True)] != \
            [tuple(x.shape) if isinstance(x, torch.Tensor) else scalar_kind(x) for x in again]:
        raise Rejected("dynamic shape: get_inputs() returns different shapes on each call")
    for i, (s, x) in enumerate(zip(scalars, again, strict=True)):
        if s is not None and s[1] != x:
            raise Rejected(f"get_inputs()[{i}] is a {s[0]} drawn at random ({s[1]!r}, then {x!r}): a task's scalar "
                           "argument is one fixed value, not a draw")
    tensors = [x for x, s in zip(inputs, scalars, strict=True) if s is None]
    try:
        with torch.no_grad(), Count():
            out = model(*inputs)
    except Exception as error:  # noqa: BLE001
        text = _line(error)
        if any(word in text.lower() for word in ("data-dependent", "data dependent", "nonzero", "item()",
                                                 "meta tensor", "symbolic")):
            raise Rejected(f"dynamic shape: the output shape depends on the input values ({text[:160]})") from None
        raise Rejected(f"forward fails at {sizes}: {type(error).__name__}: {text}") from None
    if isinstance(out, (tuple, list, dict)):
        kind = "tuple" if isinstance(out, tuple) else type(out).__name__
        raise Rejected(f"forward returns a {kind}, not one tensor (a single output is supported)")
    if not isinstance(out, torch.Tensor):
        raise Rejected(f"forward returns a {type(out).__name__}, not a tensor")
    state = model.state_dict()
    return {"inputs": [tensor_fact(x, torch) for x in tensors], "scalars": scalars,
            "params": [[key, *tensor_fact(t, torch)] for key, t in state.items()],
            "buffers": [key for key, _ in model.named_buffers()],
            "output": tensor_fact(out, torch), "flops": flops, "op_shapes": op_shapes}


def scalar_kind(x) -> str | None:
    """The SCALARS key of a Python number (bool before int: True is an int too), else None."""
    return next((kind for kind, python in PYTHON_TYPES.items() if isinstance(x, python)), None)


def scalar_fact(i: int, x, torch) -> list | None:
    """None for a tensor input; [kind, value] for a Python number; Rejected for anything else."""
    if isinstance(x, torch.Tensor):
        return None
    kind = scalar_kind(x)
    if kind is None:
        raise Rejected(f"get_inputs()[{i}] is a {type(x).__name__}, not a tensor or a Python number "
                       "(tensors and float, int or bool scalars are supported)")
    if kind == "float" and not math.isfinite(x):
        raise Rejected(f"get_inputs()[{i}] is the float {x!r}: a scalar argument must be finite")
    if kind == "int" and not -2**63 <= x < 2**63:
        raise Rejected(f"get_inputs()[{i}] is the int {x}, outside a 64-bit integer")
    return [kind, PYTHON_TYPES[kind](x)]


def tensor_fact(t, torch) -> list:
    name = str(t.dtype).removeprefix("torch.")
    if name not in DTYPES:
        raise Rejected(f"dtype {name} is not supported (supported: {', '.join(DTYPES)})")
    return [DTYPES[name], list(t.shape)]


def shapes_of(observed: dict) -> list[list[int]]:
    return [x[1] for x in observed["inputs"]] + [p[2] for p in observed["params"]] + [observed["output"][1]]


def fit(module, torch, defaults: dict[str, int]) -> tuple[dict[str, int], dict, list[str]]:
    """Choose the size symbols and fit every dimension and flop count; returns (symbols with their
    default values, {"dims": [...], "flops": str | None}, notes)."""
    base = trace(module, torch, defaults)
    notes = []
    perturbed = {}
    for symbol, value in defaults.items():
        try:
            perturbed[symbol] = trace(module, torch, {**defaults, symbol: irregular_value(value)})
        except Rejected as error:
            notes.append(f"{symbol} kept at {value}: changing it fails ({error})")
        finally:
            setattr(module, symbol, value)
    # A scalar input is one fixed value in the task: a size that moves it stays at its default.
    moves_scalar = {s for s in perturbed if perturbed[s]["scalars"] != base["scalars"]}
    kept = [s for s in defaults if s in perturbed and s not in moves_scalar and _same_structure(base, perturbed[s])]
    for s in sorted(moves_scalar):
        notes.append(f"{s} kept at {defaults[s]}: changing it changes a scalar input of get_inputs()")
    for s in set(perturbed) - set(kept) - moves_scalar:
        notes.append(f"{s} kept at {defaults[s]}: changing it changes the model's structure")
    while True:
        dims, bad = _fit_dims(base, perturbed, defaults, kept)
        if not bad:
            break
        kept = [s for s in kept if s not in bad]
        notes += [f"{s} kept at {defaults[s]}: a dimension moves with it in a way no expression here fits"
                  for s in sorted(bad)]
    irregular = {s: irregular_value(defaults[s]) for s in kept}
    # The fit saw one step per symbol; it must also predict every size changed at once, by one step
    # (the irregular preset) and by three (which catches H//2 fitted as H - 16 from a single step).
    checks: list[tuple[dict, dict]] = []
    while kept:
        checks = [(sizes, trace(module, torch, sizes)) for sizes in
                  ({**defaults, **irregular}, {**defaults, **{s: defaults[s] - CHECK_STEP for s in kept}})]
        for s, v in defaults.items():
            setattr(module, s, v)
        if all([[d.at(sizes) for d in shape] for shape in dims] == shapes_of(seen) for sizes, seen in checks):
            break
        dropped = kept.pop()
        irregular.pop(dropped)
        notes.append(f"{dropped} kept at {defaults[dropped]}: the shapes with every size changed at once disagree")
        dims, _ = _fit_dims(base, perturbed, defaults, kept)
    flops = _fit_work(base, perturbed, defaults, kept)
    if flops is not None and kept and any(flops[1](sizes) != sum(seen["flops"]) for sizes, seen in checks):
        flops = None
    flops = flops[0] if flops is not None else None
    return {s: defaults[s] for s in kept}, {"dims": [[d.text() for d in shape] for shape in dims],
                                             "flops": flops, "irregular": irregular}, notes


def _same_structure(a: dict, b: dict) -> bool:
    return (len(a["inputs"]), [p[0] for p in a["params"]], len(a["flops"])) == \
        (len(b["inputs"]), [p[0] for p in b["params"]], len(b["flops"]))


def _fit_dims(base, perturbed, defaults, kept):
    dims, bad = [], set()
    per_symbol = {s: shapes_of(perturbed[s]) for s in kept}
    for t, shape in enumerate(shapes_of(base)):
        fitted = []
        for k, d in enumerate(shape):
            moved = {s: (defaults[s], irregular_value(defaults[s]), per_symbol[s][t][k]) for s in kept
                     if len(per_symbol[s][t]) == len(shape)}
            if len(moved) != len(kept):
                bad |= set(kept) - set(moved)
                fitted.append(None)
                continue
            expression = fit_dim(d, moved)
            if expression is None:
                bad |= {s for s, obs in moved.items() if obs[2] != d}
            fitted.append(expression)
        dims.append(fitted)
    return dims, bad


def _fit_work(base, perturbed, defaults, kept):
    """(work.flops as text, a function of the sizes giving it), or None when an operator's count fits
    neither a monomial of the sizes nor its output's element count times one (a convolution)."""
    merged: dict[tuple, int] = {}
    products: list[tuple[Monomial, list]] = []
    for i, f in enumerate(base["flops"]):
        moved = {s: (defaults[s], irregular_value(defaults[s]), perturbed[s]["flops"][i]) for s in kept}
        term = fit_flops(f, moved)
        if term is not None:
            merged[term.powers] = merged.get(term.powers, 0) + term.coef
            continue
        product = _fit_product(i, f, base, perturbed, defaults, kept)
        if product is None:
            return None
        products.append(product)
    monomials = [Monomial(c, p) for p, c in sorted(merged.items()) if c]

    def at(sizes: dict[str, int]) -> int:
        total = sum(m.at(sizes) for m in monomials)
        for ratio, dims in products:
            value = ratio.at(sizes)
            for d in dims:
                value *= d.at(sizes)
            total += value
        return total

    texts = [m.text() for m in monomials]
    for ratio, dims in products:
        factors = [] if ratio.text() == "1" else [ratio.text()]
        factors += [d.text() if re.fullmatch(r"\w+", d.text()) else f"({d.text()})" for d in dims if d.text() != "1"]
        texts.append("*".join(factors) or "1")
    return " + ".join(texts) or "0", at


def _fit_product(i, f, base, perturbed, defaults, kept):
    """Operator i's flops as (a monomial) x (its output's dimensions, each fitted), or None."""
    shape = base["op_shapes"][i]
    dims = []
    for k, d in enumerate(shape):
        moved = {s: (defaults[s], irregular_value(defaults[s]), perturbed[s]["op_shapes"][i][k]) for s in kept
                 if len(perturbed[s]["op_shapes"][i]) == len(shape)}
        if len(moved) != len(kept):
            return None
        fitted = fit_dim(d, moved)
        if fitted is None:
            return None
        dims.append(fitted)
    numel = math.prod(shape)
    ratios = {}
    for s in kept:
        other = math.prod(perturbed[s]["op_shapes"][i])
        if not other or perturbed[s]["flops"][i] % other:
            return None
        ratios[s] = (defaults[s], irregular_value(defaults[s]), perturbed[s]["flops"][i] // other)
    if not numel or f % numel:
        return None
    ratio = fit_flops(f // numel, ratios)
    return (ratio, dims) if ratio is not None else None


def cpu_checks(module, torch, sizes: dict[str, int], elements: int) -> tuple[str | None, list[str]]:
    """Real forward passes on the CPU at `sizes`: (what the forward updates or None, notes for the import report:
    the checks skipped, or an output no harness can judge a kernel by)."""
    if elements > CPU_CHECK_ELEMENTS:
        return None, [f"randomness and output shape not checked on the CPU ({elements:,} elements at the irregular "
                      "size); the harness's determinism check on the GPU still applies"]
    for name, value in sizes.items():
        setattr(module, name, value)
    torch.manual_seed(0)
    model = module.Model(*module.get_init_inputs())
    inputs = module.get_inputs()
    state_before = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        first = model(*inputs)
        torch.manual_seed(12345)
        second = model(*inputs)
        other = model(*module.get_inputs())
    if not torch.equal(torch.nan_to_num(first), torch.nan_to_num(second)):
        raise Rejected("random ops without a seed: two forward passes on the same inputs differ "
                       "(dropout in training mode, torch.rand in forward, ...)")
    if first.shape != other.shape:
        raise Rejected("dynamic shape: the output shape depends on the input values")
    notes = []
    if first.numel() > 1 and all(bool((out == out.flatten()[0]).all()) for out in (first, other)):
        # No harness can tell a right kernel from one that writes this value: the harness's spec sanity refuses
        # such a reference at run time (KernelBench's level2/9 at its own sizes). A note, not a refusal: the
        # default sizes may still draw a usable reference, and a refusal would renumber the problems after it.
        value = first.flatten()[0].item()
        notes.append(f"its output is {'all zeros' if value == 0 else f'the constant {value:g}'} on two input draws "
                     "at the irregular sizes: a kernel that writes that would pass, and the harness refuses to "
                     "judge a kernel where the reference is so")
    changed = [k for k, v in model.state_dict().items() if not torch.equal(v, state_before[k])]
    return ("forward updates " + ", ".join(changed)) if changed else None, notes


def describe(problem: Path) -> dict:
    import torch

    torch.set_num_threads(1)
    module = load(problem)
    defaults = candidate_symbols(module)
    symbols, fitted, notes = fit(module, torch, defaults)
    if not symbols:
        raise Rejected("no module constant of at least 8 read by get_inputs()/get_init_inputs() varies the shapes "
                       "(a task needs a size it can change for its irregular preset)")
    base = trace(module, torch, defaults)
    sizes = {**defaults, **fitted["irregular"]}
    irregular = trace(module, torch, sizes)
    elements = sum(math.prod(shape) for shape in shapes_of(irregular))
    updates, checked = cpu_checks(module, torch, sizes, elements)
    notes += checked
    forward_params = list(inspect.signature(module.Model.forward).parameters)[1:]
    tensors = iter(base["inputs"])
    return {"symbols": symbols, "irregular": fitted["irregular"], "dims": fitted["dims"], "flops": fitted["flops"],
            # every input's task dtype, in get_inputs() order; "scalars" holds [kind, value] where it is a number
            "inputs": [next(tensors)[0] if s is None else SCALARS[s[0]] for s in base["scalars"]],
            "scalars": base["scalars"], "input_names": forward_params,
            "params": [[p[0], p[1]] for p in base["params"]], "buffers": base["buffers"],
            "output": base["output"][0], "mutates_buffers": bool(updates), "notes": notes}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
