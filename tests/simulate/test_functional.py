"""Functional equivalence: programs run on real numbers match onnxruntime.

Tolerance: 1e-5 relative to the largest output magnitude. onnxruntime computes in float32 and
the executor in float64, so the observed difference is float32 rounding (about 1e-7 relative).
With fixed-point quantization (16-bit weights and activations) the tolerance is 1e-3.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from pimsolve.api import functional_check
from pimsolve.simulate.execute import sliced_product

pytest.importorskip("onnxruntime")

FLOAT_TOLERANCE = 1e-5
QUANTIZED_TOLERANCE = 1e-3


def _model(nodes, inputs, output, weights, seed=0):
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), n)
             for n, shape in weights.items()]
    graph = helper.make_graph(
        nodes, "net", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                       for n, s in inputs.items()],
        [helper.make_tensor_value_info(output[0], TensorProto.FLOAT, output[1])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def conv_relu_pool_fc():
    """Conv 3x3 (pad 1) -> Relu -> MaxPool 2x2 -> Flatten -> Gemm."""
    return _model([
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Flatten", ["p1"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], name="fc", transB=1)],
        {"x": [1, 3, 8, 8]}, ("y", [1, 10]),
        {"w1": [16, 3, 3, 3], "b1": [16], "wf": [10, 16 * 4 * 4], "bf": [10]})


def residual_block():
    """Conv -> Relu -> Conv (stride 1, pad 1) + identity -> Relu, then global average pool."""
    return _model([
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("Add", ["c2", "x"], ["s"], name="add"),
        helper.make_node("Relu", ["s"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["y"], name="gap")],
        {"x": [1, 24, 6, 6]}, ("y", [1, 24, 1, 1]),
        {"w1": [24, 24, 3, 3], "b1": [24], "w2": [24, 24, 3, 3], "b2": [24]})


def concat_block():
    """Inception-style: 1x1, 3x3 and pool->1x1 branches concatenated along channels."""
    return _model([
        helper.make_node("Conv", ["x", "wa", "ba"], ["a"], name="branch1x1",
                         kernel_shape=[1, 1]),
        helper.make_node("Conv", ["x", "wb", "bb"], ["b"], name="branch3x3", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("AveragePool", ["x"], ["p"], name="pool", kernel_shape=[3, 3],
                         strides=[1, 1], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["p", "wc", "bc"], ["c"], name="branchpool",
                         kernel_shape=[1, 1]),
        helper.make_node("Concat", ["a", "b", "c"], ["cat"], name="concat", axis=1),
        helper.make_node("Relu", ["cat"], ["y"], name="relu")],
        {"x": [1, 20, 5, 5]}, ("y", [1, 28, 5, 5]),
        {"wa": [8, 20, 1, 1], "ba": [8], "wb": [12, 20, 3, 3], "bb": [12], "wc": [8, 20, 1, 1],
         "bc": [8]})


def tiny_conv():
    """Conv 3x3 (48 rows per window) -> Relu: fits the 2 crossbars of Jain et al.'s macro."""
    return _model([
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c1"], ["y"], name="relu1")],
        {"x": [1, 48, 4, 4]}, ("y", [1, 2, 4, 4]), {"w1": [2, 48, 3, 3], "b1": [2]})


NETWORKS = {"conv-relu-pool-fc": conv_relu_pool_fc, "residual": residual_block,
            "concat": concat_block}


@pytest.mark.parametrize("mode", ["ll", "ht"])
@pytest.mark.parametrize("network", sorted(NETWORKS))
def test_program_matches_onnxruntime(network: str, mode: str) -> None:
    # puma: in-order cores with sync communication; AGs of one replica span cores
    result = functional_check(NETWORKS[network](), target="puma", mode=mode)
    assert result.max_rel_error < FLOAT_TOLERANCE, result.max_rel_error


@pytest.mark.parametrize("target", ["isaac", "cimmlc-jain", "cimmlc-jia"])
def test_every_computing_mode_computes_the_same(target: str) -> None:
    """Crossbar (isaac), wordline (432 rows read in 32-row blocks, Jain) and core mode (Jia)
    all match."""
    result = functional_check(tiny_conv(), target=target, mode="ll")
    assert result.max_rel_error < FLOAT_TOLERANCE


def test_fixed_point_with_bit_slicing_is_close() -> None:
    result = functional_check(conv_relu_pool_fc(), target="isaac", mode="ll", quantize=True)
    assert 0 < result.max_rel_error < QUANTIZED_TOLERANCE


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 4), st.integers(1, 8), st.sampled_from([1, 2, 4]), st.integers(0, 2**31))
def test_bit_slicing_is_exact(rows: int, cols: int, cell_bits: int, seed: int) -> None:
    """Splitting 8-bit weights into cell_bits digits and shifting the partial products back
    gives the integer product exactly."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=rows)
    w = rng.integers(-127, 128, size=(rows, cols))
    assert np.array_equal(sliced_product(x, w, cell_bits, 8), x @ w)
