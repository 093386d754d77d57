"""Fitting a dimension or a flop count from its value at the default sizes and with one size changed."""

from __future__ import annotations

import random

from skillbase.kernelbench.fit import Linear, Monomial, fit_dim, fit_flops, irregular_value


def test_irregular_values_are_one_less_and_never_a_multiple_of_32():
    assert irregular_value(16) == 15 and irregular_value(33) == 31 and irregular_value(4096) == 4095
    for _ in range(200):
        assert irregular_value(random.randrange(8, 1 << 20)) % 32


def test_a_dimension_is_a_literal_a_linear_form_or_a_product():
    assert fit_dim(16, {"N": (64, 63, 16)}) == Linear(0, None, 16)
    assert fit_dim(64, {"N": (64, 63, 63)}).text() == "N"
    conv = fit_dim(30, {"H": (32, 31, 29)})                       # a valid 3x3 convolution: H - 2
    assert conv.text() == "H - 2" and conv.at({"H": 1000}) == 998
    assert fit_dim(128, {"N": (64, 63, 126)}).text() == "2*N"
    flat = fit_dim(3 * 32 * 48, {"H": (32, 31, 3 * 31 * 48), "W": (48, 47, 3 * 32 * 47)})
    assert flat.text() == "3*H*W" and flat.at({"H": 5, "W": 7}) == 105


def test_forms_that_do_not_fit_are_refused():
    assert fit_dim(16, {"H": (32, 30, 15)}) is None                 # H // 2 moves by half a step
    assert fit_dim(40, {"H": (32, 31, 39), "W": (32, 31, 39)}) is None   # H + W is neither form


def test_flops_are_monomials_with_small_integer_exponents():
    m, n, k = 64, 40, 48
    matmul = fit_flops(2 * m * n * k, {"M": (m, m - 1, 2 * (m - 1) * n * k), "N": (n, n - 1, 2 * m * (n - 1) * k),
                                       "K": (k, k - 1, 2 * m * n * (k - 1))})
    assert matmul == Monomial(2, (("K", 1), ("M", 1), ("N", 1)))
    square = fit_flops(2 * n ** 3, {"N": (n, n - 1, 2 * (n - 1) ** 3)})
    assert square.text() == "2*N*N*N"
    assert fit_flops(30 * 30, {"H": (32, 31, 29 * 29)}) is None     # (H - 2)^2 is not a monomial
