"""PIMCOMP's five unfolding formats (Table IV), generalized, with their array groups.

For a convolution with ``I`` input and ``O`` output channels per group, kernel ``Kh x Kw``
(Table IV's K^2 = Kh * Kw, its "IK" = I * Kw: one kernel row), padded input ``Hp x Wp`` and
output ``Ho x Wo``, each format is a tuple (H, W, P) with H * W * P = I * O * Kh * Kw; it is
*valid* when O is not a factor of H (H is the accumulated direction, PIMCOMP Sec. V-B). All
five are valid by construction; formats with identical matrices (all five for a 1x1 kernel or
a GEMM, three for a 1xK kernel) are listed once. Groups multiply P: each group has its own
matrices and inputs. A weight's bit slices stay in one crossbar, so an array group of width W
takes ceil(W / floor(cols / column_slices)) crossbars.

Per replica and inference, with ``g`` groups and ``It = g * I`` input channels in total:

=============  ==================  =====================  =======================
format         cycles              load elements          extra memory elements
=============  ==================  =====================  =======================
I,O,K2         Ho * Wo             Ho * Kh * Wp * It      Kh*Kw*It + Kh*Kw*g*O
I,OK2,1        Hin * Win           Hin * Win * It         It + Kh*Kw*g*O
IK,O,K         Ho * Wo             Ho * Kh * Wp * It      Kh*Kw*It + Kh*g*O
IK,OK,1        Hp * Wo             Hp * Wo * Kw * It      Kw*It + Kh*g*O
IK2,O,1        Ho * Wo             Ho * Wo * Kh*Kw * It   Kh*Kw*It + g*O
=============  ==================  =====================  =======================

(times the batch). Loads follow Table IV: formats that slide along a row reload only ``Kh``
input rows per output row; the im2col format (IK2,O,1) reloads every window in full.
"""

from __future__ import annotations

import math

from pimsolve.ir import CrossbarGeometry, MvmGeometry, Unfolding

__all__ = ["FORMATS", "DEFAULT_FORMAT", "EMITTED_FORMATS", "unfoldings", "ag_rows"]

FORMATS = ("I,O,K2", "I,OK2,1", "IK,O,K", "IK,OK,1", "IK2,O,1")
DEFAULT_FORMAT = "IK2,O,1"


def unfoldings(mvm: MvmGeometry, xbar: CrossbarGeometry) -> tuple[Unfolding, ...]:
    """Every distinct valid unfolding of a crossbar layer, in ``FORMATS`` order."""
    g = mvm.groups
    i, o = mvm.in_channels // g, mvm.out_channels // g
    it = mvm.in_channels
    kh, kw = mvm.kernel
    hin, win = mvm.input_hw
    hp, wp = hin + mvm.pads[0] + mvm.pads[2], win + mvm.pads[1] + mvm.pads[3]
    ho, wo = mvm.output_hw
    b = mvm.batch
    k2 = kh * kw
    table = {
        "I,O,K2": ((i, o, k2), ho * wo, ho * kh * wp * it, k2 * it + k2 * g * o),
        "I,OK2,1": ((i, o * k2, 1), hin * win, hin * win * it, it + k2 * g * o),
        "IK,O,K": ((i * kw, o, kh), ho * wo, ho * kh * wp * it, k2 * it + kh * g * o),
        "IK,OK,1": ((i * kw, o * kh, 1), hp * wo, hp * wo * kw * it, kw * it + kh * g * o),
        "IK2,O,1": ((i * k2, o, 1), ho * wo, ho * wo * k2 * it, k2 * it + g * o),
    }
    # formats with the same matrices (all five for 1x1, three for 1xK) are listed once; the
    # default keeps its place among them
    matrices = {table[DEFAULT_FORMAT][0]: DEFAULT_FORMAT}
    for name in FORMATS:
        matrices.setdefault(table[name][0], name)
    kept = set(matrices.values())
    result = []
    for name in FORMATS:
        if name not in kept:
            continue
        (h, w, p), cycles, load, extra = table[name]
        assert h * w * p == i * o * k2, name  # PIMCOMP's first validity rule holds by construction
        result.append(Unfolding(
            name=name, height=h, width=w, parallel=p * g, cycles=b * cycles,
            load_elements=b * load, extra_memory_elements=extra,
            array_groups=p * g * math.ceil(h / xbar.rows),
            crossbars_per_ag=math.ceil(w / xbar.weights_per_crossbar_row)))
    return tuple(result)


EMITTED_FORMATS = ("I,O,K2", "IK,O,K", "IK2,O,1")
"""Unfoldings whose matrices are row slices of the im2col matrix (W = O); the two with O*K
columns (I,OK2,1 and IK,OK,1) scatter partial outputs and are not emitted yet."""


def ag_rows(u: Unfolding, groups: int, rows: int) -> list[tuple[int, int, int]]:
    """Per AG of one replica: (convolution group, first im2col row, rows).

    The im2col vector of a group is ordered (kernel row, kernel column, channel), so each of the
    P / groups matrices of a W = O unfolding is a contiguous block of ``u.height`` of its rows,
    cut into AGs of at most ``rows``."""
    per_group = u.parallel // groups
    blocks = math.ceil(u.height / rows)
    return [(group, sub * u.height + b * rows, min(rows, u.height - b * rows))
            for group in range(groups) for sub in range(per_group) for b in range(blocks)]
