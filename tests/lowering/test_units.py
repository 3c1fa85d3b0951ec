"""Tests of COMPASS partition units, :func:`pimsolve.lowering.partition_units`.

A layer's default unfolding is a grid of array groups (rows) by crossbar columns; partition
units must tile that grid exactly, each fit one core, and cut rows (which makes partial sums
cross units) only when one full column does not fit in a core. Hand examples spell the units
out, and a lowered convolution's units are checked against its default unfolding.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from pimsolve.frontend.load import load_onnx
from pimsolve.ir import PartitionUnit, Unfolding
from pimsolve.lowering import lower, partition_units
from pimsolve.target import load_target


def grid(array_groups: int, crossbars_per_ag: int) -> Unfolding:
    """An unfolding with the given AG grid; the other fields do not matter here."""
    return Unfolding(name="IK2,O,1", height=1, width=1, parallel=1, cycles=1, load_elements=1,
                     extra_memory_elements=1, array_groups=array_groups,
                     crossbars_per_ag=crossbars_per_ag)


def coverage(units: tuple[PartitionUnit, ...], rows: int, cols: int) -> np.ndarray:
    """How many units cover each (array group, crossbar column) cell."""
    counts = np.zeros((rows, cols), dtype=int)
    for u in units:
        assert 0 <= u.ag_start < u.ag_stop <= rows, u
        assert 0 <= u.col_start < u.col_stop <= cols, u
        counts[u.ag_start:u.ag_stop, u.col_start:u.col_stop] += 1
    return counts


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 300), st.integers(1, 80), st.integers(1, 128))
def test_units_tile_the_grid(rows: int, cols: int, per_core: int) -> None:
    units = partition_units(grid(rows, cols), per_core)
    assert (coverage(units, rows, cols) == 1).all()
    assert sum(u.crossbars for u in units) == rows * cols
    for u in units:
        assert 0 < u.crossbars <= per_core
    if rows <= per_core:
        # one whole column fits a core: no unit cuts the rows (no partial sums across units),
        # and each unit takes as many columns as fit, except the last one of the layer
        assert all((u.ag_start, u.ag_stop) == (0, rows) for u in units)
        for u in units:
            assert u.col_stop == cols or (u.col_stop - u.col_start + 1) * rows > per_core
    else:
        # a column is taller than a core: single-column units of full cores, bar the last chunk
        for u in units:
            assert u.col_stop - u.col_start == 1
            assert u.ag_stop == rows or u.ag_stop - u.ag_start == per_core


def test_hand_example_whole_columns() -> None:
    # 5 AGs x 8 crossbar columns (the 3x3, 64 -> 128 conv on ISAAC), 16 crossbars per core:
    # 16 // 5 = 3 columns per unit -> columns [0,3), [3,6), [6,8): 15, 15 and 10 crossbars.
    units = partition_units(grid(5, 8), 16)
    assert units == (PartitionUnit(0, 5, 0, 3), PartitionUnit(0, 5, 3, 6),
                     PartitionUnit(0, 5, 6, 8))
    assert [u.crossbars for u in units] == [15, 15, 10]


def test_hand_example_tall_columns() -> None:
    # 40 AGs x 2 columns, 16 crossbars per core: a column (40) does not fit, so each column is
    # cut into rows [0,16), [16,32), [32,40): 6 units of 16, 16, 8 crossbars.
    units = partition_units(grid(40, 2), 16)
    assert sorted((u.col_start, u.ag_start, u.ag_stop, u.crossbars) for u in units) == [
        (0, 0, 16, 16), (0, 16, 32, 16), (0, 32, 40, 8),
        (1, 0, 16, 16), (1, 16, 32, 16), (1, 32, 40, 8)]


def test_exact_fit_is_one_unit() -> None:
    assert partition_units(grid(4, 24), 96) == (PartitionUnit(0, 4, 0, 24),)


def test_lowered_layer_units_follow_default_unfolding() -> None:
    """A 3x3 conv 64 -> 128 on ISAAC: default IK2,O,1 is 5 AGs x 8 columns (see
    test_unfold.py); ISAAC cores hold 96 crossbars, so 96 // 5 = 19 >= 8 columns: one unit."""
    conv = helper.make_node("Conv", ["x", "W"], ["y"], name="conv", pads=[1, 1, 1, 1])
    graph = helper.make_graph(
        [conv], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 128, 8, 8])],
        initializer=[numpy_helper.from_array(np.zeros((128, 64, 3, 3), np.float32), "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    workload = lower(load_onnx(model), load_target("isaac"))
    layer = workload.mvm_layer("conv")
    assert (layer.unfolding.array_groups, layer.unfolding.crossbars_per_ag) == (5, 8)
    assert layer.partition_units == (PartitionUnit(0, 5, 0, 8),)
    assert workload.crossbars_needed == 40
