"""The size-expression evaluator runs no code: only arithmetic over size symbols and four functions."""

from __future__ import annotations

import pytest

from skillbase.task.expr import ExprError, parse_expr


@pytest.mark.parametrize("text, sizes, expected", [
    ("2*M*N*K", {"M": 2, "N": 3, "K": 4}, 48),
    ("4*(M*K + K*N + M*N)", {"M": 1, "N": 2, "K": 3}, 44),
    ("(H + 2*pad - R)//stride + 1", {"H": 37, "pad": 1, "R": 3, "stride": 2}, 19),
    ("ceil_div(n, 256)", {"n": 1000}, 4),
    ("min(M, 8) + max(N, 2, 3)", {"M": 10, "N": 1}, 11),
    ("log2(n)", {"n": 1024}, 10.0),
    ("n % 7 - -1", {"n": 10}, 4),
    ("2**n", {"n": 10}, 1024),
    (12, {}, 12),
    (0.5, {}, 0.5),
])
def test_arithmetic(text, sizes, expected):
    assert parse_expr(text).evaluate(sizes) == expected


@pytest.mark.parametrize("text", [
    "__import__('os').system('true')",   # a call that is not whitelisted
    "M.bit_length()",                    # attribute access
    "().__class__",                      # attribute access on a literal
    "open('x')",                         # builtin call
    "M[0]",                              # subscript
    "lambda: 1",
    "M if N else K",                     # conditional
    "M < N",                             # comparison
    "'abc'",                             # string constant
    "True",                              # booleans are not sizes
    "[M, N]",                            # list
    "min",                               # function not called
    "ceil_div(M)",                       # wrong arity
    "max(*M)",                           # starred
    "M & N",                             # bit operators are not in the whitelist
    "f(M)",
])
def test_rejected_at_parse_time(text):
    with pytest.raises(ExprError):
        parse_expr(text)


def test_names_outside_the_known_sizes_are_rejected():
    with pytest.raises(ExprError, match="unknown size symbol 'Q'"):
        parse_expr("M*Q", known={"M", "N"})
    assert parse_expr("M*N", known={"M", "N"}).symbols == {"M", "N"}


def test_huge_powers_and_division_by_zero_are_errors_not_hangs():
    with pytest.raises(ExprError):
        parse_expr("2**2**2**40").evaluate({})
    with pytest.raises(ExprError):
        parse_expr("M // N").evaluate({"M": 1, "N": 0})
    with pytest.raises(ExprError):
        parse_expr("ceil_div(M, 0)").evaluate({"M": 1})


def test_missing_size_and_non_integral_results():
    with pytest.raises(ExprError, match="needs size K"):
        parse_expr("M*K").evaluate({"M": 1})
    with pytest.raises(ExprError, match="not a whole number"):
        parse_expr("M/3").evaluate_int({"M": 10})
    assert parse_expr("M/2").evaluate_int({"M": 10}) == 5
