"""Shape and work expressions of a KernelBench problem, fitted from its shapes at perturbed sizes.

A KernelBench problem fixes its sizes in module constants (`batch_size = 16`, `dim = 16384`) that
`get_inputs()` / `get_init_inputs()` read. The probe changes one constant at a time and records every
tensor's shape and every operator's flop count; this module turns those observations into the spec's
expressions over the constants that behave as sizes (the size symbols):

- a dimension that never moves is a literal;
- a dimension that moves with one symbol is `a*s + c` (a conv's `H - 2` is `H + -2`);
- a dimension that moves with several is `c*s1*s2*...` (a flatten);
- a flop count per operator is `c * s1^e1 * s2^e2 ...` with small integer exponents.

Anything else is not expressible: the symbols it moves with are dropped (kept at their value as
literals), and the fit is repeated. Standard library only: the probe subprocess imports it too.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Linear", "Monomial", "fit_dim", "fit_flops", "irregular_value", "MIN_SYMBOL_VALUE"]

# A module constant below this is a configuration value (kernel size, stride, dim to reduce), not a size.
MIN_SYMBOL_VALUE = 8
IRREGULAR_MULTIPLE = 32
MAX_EXPONENT = 4


def irregular_value(value: int) -> int:
    """The value a size symbol takes in the irregular preset: one less, never a multiple of 32."""
    candidate = value - 1
    while candidate % IRREGULAR_MULTIPLE == 0 and candidate > 1:
        candidate -= 1
    return candidate


@dataclass(frozen=True)
class Linear:
    """`coef * symbol + const`, or a literal when symbol is None."""
    coef: int
    symbol: str | None
    const: int

    def at(self, sizes: dict[str, int]) -> int:
        return self.const + (self.coef * sizes[self.symbol] if self.symbol else 0)

    def text(self) -> str:
        if self.symbol is None:
            return str(self.const)
        term = self.symbol if self.coef == 1 else f"{self.coef}*{self.symbol}"
        if self.const == 0:
            return term
        return f"{term} + {self.const}" if self.const > 0 else f"{term} - {-self.const}"


@dataclass(frozen=True)
class Monomial:
    """`coef * prod(symbol ** exponent)`."""
    coef: int
    powers: tuple[tuple[str, int], ...]

    def at(self, sizes: dict[str, int]) -> int:
        value = self.coef
        for symbol, exponent in self.powers:
            value *= sizes[symbol] ** exponent
        return value

    def text(self) -> str:
        factors = [] if self.coef == 1 and self.powers else [str(self.coef)]
        for symbol, exponent in self.powers:
            factors += [symbol] * exponent
        return "*".join(factors)


def fit_dim(default: int, moved: dict[str, tuple[int, int, int]]) -> Linear | Monomial | None:
    """One dimension: `default` at the default sizes, and per symbol that moved it
    `(symbol's default value, its perturbed value, the dimension there)`. None when no form fits."""
    moved = {s: obs for s, obs in moved.items() if obs[2] != default}
    if not moved:
        return Linear(0, None, default)
    if len(moved) == 1:
        (symbol, (value, perturbed, dim)), = moved.items()
        delta, step = dim - default, perturbed - value
        if delta % step == 0 and delta // step >= 1:
            coef = delta // step
            return Linear(coef, symbol, default - coef * value)
    return _monomial(default, {s: (v, p, d) for s, (v, p, d) in moved.items()}, max_exponent=1)


def fit_flops(default: int, moved: dict[str, tuple[int, int, int]]) -> Monomial | None:
    """One operator's flop count as a monomial over the symbols that moved it, or None."""
    moved = {s: obs for s, obs in moved.items() if obs[2] != default}
    if not moved:
        return Monomial(default, ())
    return _monomial(default, moved, max_exponent=MAX_EXPONENT)


def _monomial(default: int, moved: dict[str, tuple[int, int, int]], max_exponent: int) -> Monomial | None:
    powers = []
    denominator = 1
    for symbol, (value, perturbed, observed) in sorted(moved.items()):
        # observed / default == (perturbed / value) ** e, checked exactly in integers
        exponent = next((e for e in range(1, max_exponent + 1)
                         if observed * value ** e == default * perturbed ** e), None)
        if exponent is None:
            return None
        powers.append((symbol, exponent))
        denominator *= value ** exponent
    if default % denominator:
        return None
    return Monomial(default // denominator, tuple(powers))
