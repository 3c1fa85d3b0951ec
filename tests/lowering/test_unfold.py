"""Tests of PIMCOMP's unfolding formats, :func:`pimsolve.lowering.unfoldings`.

Property tests (hypothesis) on random convolutions and crossbar geometries check the invariants
of Table IV: every format reshapes all the weights (H * W * P = weights, P counting groups),
builds H only from input-side factors (I, I*Kw, I*Kh*Kw, never O), and sizes its array groups
and crossbars as ceil(H / rows) and ceil(W * slices / cols). A 1x1 kernel has a single format;
the default (IK2,O,1) im2col format is always there. A worked example (a 3x3 conv, 64 -> 128
channels, on ISAAC's 128x128 crossbars with 8 bit slices per weight) is computed by hand.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from pimsolve.ir import CrossbarGeometry, MvmGeometry
from pimsolve.lowering import DEFAULT_FORMAT, FORMATS, crossbar_geometry, unfoldings
from pimsolve.target import load_target


def conv_out(size: int, kernel: int, stride: int, dilation: int, pad_begin: int,
             pad_end: int) -> int:
    """Output length of a convolution along one axis."""
    return (size + pad_begin + pad_end - dilation * (kernel - 1) - 1) // stride + 1


@st.composite
def mvm_geometries(draw) -> MvmGeometry:
    groups = draw(st.integers(1, 4))
    i = draw(st.integers(1, 96))
    o = draw(st.integers(1, 96))
    kh, kw = draw(st.integers(1, 7)), draw(st.integers(1, 7))
    sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dh, dw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    pads = tuple(draw(st.integers(0, 3)) for _ in range(4))
    # large enough for at least one output pixel even without padding
    hin = draw(st.integers(dh * (kh - 1) + 1, dh * (kh - 1) + 24))
    win = draw(st.integers(dw * (kw - 1) + 1, dw * (kw - 1) + 24))
    out = (conv_out(hin, kh, sh, dh, pads[0], pads[2]), conv_out(win, kw, sw, dw, pads[1], pads[3]))
    return MvmGeometry(in_channels=groups * i, out_channels=groups * o, kernel=(kh, kw),
                       strides=(sh, sw), dilations=(dh, dw), pads=pads, groups=groups,
                       input_hw=(hin, win), output_hw=out, batch=draw(st.integers(1, 3)))


@st.composite
def crossbars(draw) -> CrossbarGeometry:
    weight_bits = draw(st.sampled_from([4, 8, 16]))
    cell_bits = draw(st.integers(1, min(4, weight_bits)))
    slices = math.ceil(weight_bits / cell_bits) * draw(st.sampled_from([1, 2]))
    cols = draw(st.integers(slices, 512))
    return CrossbarGeometry(
        rows=draw(st.integers(1, 512)), cols=cols, cell_bits=cell_bits,
        weight_bits=weight_bits, activation_bits=draw(st.sampled_from([8, 16])),
        column_slices=slices, crossbars_per_core=draw(st.integers(1, 128)),
        cores=draw(st.integers(1, 200)))


@settings(max_examples=300, deadline=None)
@given(mvm_geometries(), crossbars())
def test_unfolding_invariants(mvm: MvmGeometry, xbar: CrossbarGeometry) -> None:
    g = mvm.groups
    i, o = mvm.in_channels // g, mvm.out_channels // g
    kh, kw = mvm.kernel
    options = unfoldings(mvm, xbar)
    names = [u.name for u in options]
    assert len(set(names)) == len(names)
    assert names == [f for f in FORMATS if f in names]  # in Table IV order
    assert DEFAULT_FORMAT in names
    for u in options:
        # all the weights, each exactly once
        assert u.height * u.width * u.parallel == mvm.weights == g * i * o * kh * kw
        # H accumulates inputs only; W holds whole outputs; P counts groups
        assert u.height in {i, i * kw, i * kh * kw}
        assert u.width in {o, o * kh, o * kh * kw}
        assert u.parallel % g == 0
        assert u.array_groups == u.parallel * math.ceil(u.height / xbar.rows)
        # a weight's bit slices never straddle two crossbars
        assert u.crossbars_per_ag == math.ceil(u.width / (xbar.cols // xbar.column_slices))
        assert u.crossbars == u.array_groups * u.crossbars_per_ag
        # enough cells for every bit slice of every weight
        assert u.crossbars * xbar.rows * xbar.cols >= mvm.weights * xbar.column_slices
        assert u.cycles > 0 and u.load_elements > 0 and u.extra_memory_elements > 0
    default = options[names.index(DEFAULT_FORMAT)]
    assert (default.height, default.width, default.parallel) == (i * kh * kw, o, g)
    # im2col: one MVM per output pixel, each loading its full window (Table IV, last row)
    assert default.cycles == mvm.windows
    assert default.load_elements == mvm.windows * kh * kw * mvm.in_channels
    matrices = [(u.height, u.width, u.parallel) for u in options]
    assert len(set(matrices)) == len(matrices)  # formats with identical matrices listed once
    if kh * kw == 1:
        assert names == [DEFAULT_FORMAT]
    elif kh == 1:  # (IK, O, K), (IK, OK, 1) and (IK2, O, 1) coincide: the default stays
        assert names == ["I,O,K2", "I,OK2,1", DEFAULT_FORMAT]
    elif kw > 1:
        assert names == list(FORMATS)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 4), st.integers(1, 300), st.integers(1, 300), st.integers(1, 64),
       crossbars())
def test_gemm_has_one_unfolding(groups: int, k: int, n: int, m: int,
                                xbar: CrossbarGeometry) -> None:
    mvm = MvmGeometry(in_channels=groups * k, out_channels=groups * n, groups=groups,
                      input_hw=(m, 1), output_hw=(m, 1))
    (u,) = unfoldings(mvm, xbar)
    assert u.name == DEFAULT_FORMAT
    assert (u.height, u.width, u.parallel) == (k, n, groups)
    assert u.cycles == m


def test_hand_example_3x3_conv_on_isaac() -> None:
    """3x3 conv, I = 64, O = 128, 8x8 input padded by 1, on 128x128 crossbars with 16-bit
    weights on 2-bit cells: 8 columns per weight, so one crossbar row holds 16 weights.

    ======= ======== ==== == ====================== ===============================
    format  H        W    P  AGs = P * ceil(H/128)  crossbars/AG = ceil(W * 8/128)
    ======= ======== ==== == ====================== ===============================
    I,O,K2  64       128  9  9 * 1 = 9              ceil(1024/128) = 8    (72 total)
    I,OK2,1 64       1152 1  1 * 1 = 1              ceil(9216/128) = 72   (72 total)
    IK,O,K  64*3=192 128  3  3 * ceil(192/128) = 6  ceil(1024/128) = 8    (48 total)
    IK,OK,1 192      384  1  1 * 2 = 2              ceil(3072/128) = 24   (48 total)
    IK2,O,1 64*9=576 128  1  ceil(576/128) = 5      ceil(1024/128) = 8    (40 total)
    ======= ======== ==== == ====================== ===============================

    (I,OK2,1: W = 128 * 9 = 1152; IK,OK,1: W = 128 * 3 = 384.)
    Every H * W * P = 73,728 = 64 * 128 * 9.
    """
    xbar = crossbar_geometry(load_target("isaac"))
    assert (xbar.rows, xbar.cols, xbar.column_slices) == (128, 128, 8)
    mvm = MvmGeometry(in_channels=64, out_channels=128, kernel=(3, 3), pads=(1, 1, 1, 1),
                      input_hw=(8, 8), output_hw=(8, 8))
    table = {u.name: (u.height, u.width, u.parallel, u.array_groups, u.crossbars_per_ag,
                      u.crossbars) for u in unfoldings(mvm, xbar)}
    assert table == {
        "I,O,K2": (64, 128, 9, 9, 8, 72),
        "I,OK2,1": (64, 1152, 1, 1, 72, 72),
        "IK,O,K": (192, 128, 3, 6, 8, 48),
        "IK,OK,1": (192, 384, 1, 2, 24, 48),
        "IK2,O,1": (576, 128, 1, 5, 8, 40),
    }
    # Table IV cycles for an 8x8 output (Ho * Wo = 64; IK,OK,1 slides over Hp * Wo = 10 * 8;
    # I,OK2,1 visits every input pixel Hin * Win = 64).
    cycles = {u.name: u.cycles for u in unfoldings(mvm, xbar)}
    assert cycles == {"I,O,K2": 64, "I,OK2,1": 64, "IK,O,K": 64, "IK,OK,1": 80, "IK2,O,1": 64}


def test_hand_example_grouped() -> None:
    """Depthwise-like: 2 groups of a 3x3 conv, 4 -> 6 channels (I = 2, O = 3 per group), on
    8x8 crossbars with 2 slices per weight. IK2,O,1: H = 2*9 = 18, W = 3, P = 2 groups;
    AGs = 2 * ceil(18/8) = 6; crossbars/AG = ceil(3*2/8) = 1. I,O,K2: H = 2, W = 3,
    P = 9 * 2 = 18, AGs = 18 * 1 = 18."""
    xbar = CrossbarGeometry(rows=8, cols=8, cell_bits=4, weight_bits=8, activation_bits=8,
                            column_slices=2, crossbars_per_core=4, cores=1)
    mvm = MvmGeometry(in_channels=4, out_channels=6, kernel=(3, 3), groups=2,
                      input_hw=(5, 5), output_hw=(3, 3))
    by_name = {u.name: u for u in unfoldings(mvm, xbar)}
    im2col = by_name["IK2,O,1"]
    assert (im2col.height, im2col.width, im2col.parallel) == (18, 3, 2)
    assert (im2col.array_groups, im2col.crossbars_per_ag) == (6, 1)
    per_tap = by_name["I,O,K2"]
    assert (per_tap.height, per_tap.width, per_tap.parallel) == (2, 3, 18)
    assert (per_tap.array_groups, per_tap.crossbars_per_ag) == (18, 1)
