"""Tests of the ONNX op converters, through :func:`pimsolve.frontend.load.load_onnx`.

Every model here is a tiny ONNX graph built in the test with ``onnx.helper`` (see
``make_model``), loaded from memory, and checked field by field against values derived by hand
in the comments: convolution geometry (groups, depthwise, dilation, strides, explicit and
automatic padding, 1-D), the M/K/N of Gemm, MatMul and Einsum, BatchNormalization folding,
Erf-GELU fusion, constant folding of weights built by ``Constant``, ``ConstantOfShape``,
``Identity`` and ``Shape`` chains, the kind of every common op, and the errors for unsupported
ops and symbolic input shapes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from pimsolve.errors import InputError
from pimsolve.frontend.load import load_onnx
from pimsolve.ir import Graph, Layer, LayerKind

FLOAT = TensorProto.FLOAT


def make_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Mapping[str, Sequence[int | str]],
    outputs: Sequence[str],
    initializers: Mapping[str, np.ndarray] | None = None,
    opset: int = 17,
) -> onnx.ModelProto:
    """A checked ONNX model of ``nodes``: float inputs of the given (maybe symbolic) shapes,
    ``outputs`` typed by ONNX shape inference, and ``initializers`` as numpy arrays."""
    graph = helper.make_graph(
        list(nodes),
        "test",
        [helper.make_tensor_value_info(name, FLOAT, list(shape)) for name, shape in
         inputs.items()],
        [helper.make_empty_tensor_value_info(name) for name in outputs],
        initializer=[numpy_helper.from_array(np.asarray(v), name)
                     for name, v in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8 if opset < 19 else 9
    model = onnx.shape_inference.infer_shapes(model)  # gives the outputs their types
    onnx.checker.check_model(model)
    return model


def w(*shape: int) -> np.ndarray:
    """A float32 weight of ``shape`` (values do not matter to the mapping)."""
    return np.ones(shape, dtype=np.float32)


def i64(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def load(nodes, inputs, outputs, initializers=None, opset=17, **kwargs) -> Graph:
    return load_onnx(make_model(nodes, inputs, outputs, initializers, opset), **kwargs)


def only_layer(graph: Graph) -> Layer:
    assert len(graph.layers) == 1, [layer.op for layer in graph.layers]
    return graph.layers[0]


# --------------------------------------------------------------------------- Conv


def conv_layer(x_shape, w_shape, **attrs) -> Layer:
    node = helper.make_node("Conv", ["x", "W"], ["y"], name="conv", **attrs)
    layer = only_layer(load([node], {"x": x_shape}, ["y"], {"W": w(*w_shape)}))
    assert layer.kind is LayerKind.CONV and layer.is_crossbar
    assert layer.weight_shape == tuple(w_shape)
    assert layer.weights == math.prod(w_shape)
    assert [t.name for t in layer.inputs] == ["x"]  # the weight is not an activation input
    return layer


def test_conv_groups() -> None:
    # 4 -> 6 channels in 2 groups: W is (6, 4/2, 3, 3); pads 1 keep 6x6.
    layer = conv_layer((1, 4, 6, 6), (6, 2, 3, 3), group=2, pads=[1, 1, 1, 1])
    m = layer.mvm
    assert (m.in_channels, m.out_channels, m.groups, m.kernel) == (4, 6, 2, (3, 3))
    assert m.weights == 6 * 2 * 9 == 108
    assert m.input_hw == m.output_hw == (6, 6)
    assert m.pads == (1, 1, 1, 1)
    assert m.windows == 36
    assert layer.outputs[0].shape == (1, 6, 6, 6)


def test_conv_depthwise() -> None:
    # group = channels = 8: one 3x3 filter per channel, 8 * 9 = 72 weights; 5x5 -> 3x3.
    layer = conv_layer((1, 8, 5, 5), (8, 1, 3, 3), group=8)
    m = layer.mvm
    assert (m.in_channels, m.out_channels, m.groups) == (8, 8, 8)
    assert m.weights == 72
    assert m.output_hw == (3, 3)


def test_conv_dilation() -> None:
    # 3x3 kernel dilated by 2 spans 5x5: 9x9 -> (9 - 5) + 1 = 5x5.
    m = conv_layer((1, 2, 9, 9), (3, 2, 3, 3), dilations=[2, 2]).mvm
    assert m.dilations == (2, 2)
    assert m.kernel == (3, 3)
    assert m.output_hw == (5, 5)
    assert m.weights == 3 * 2 * 9


def test_conv_strides() -> None:
    # H: floor((7 - 3) / 2) + 1 = 3; W: floor((8 - 3) / 3) + 1 = 2.
    m = conv_layer((2, 2, 7, 8), (4, 2, 3, 3), strides=[2, 3]).mvm
    assert m.strides == (2, 3)
    assert m.input_hw == (7, 8)
    assert m.output_hw == (3, 2)
    assert m.batch == 2
    assert m.windows == 2 * 3 * 2


def test_conv_explicit_pads() -> None:
    # ONNX pads [top, left, bottom, right] = [1, 0, 2, 1]:
    # H: 5 + 1 + 2 - 3 + 1 = 6; W: 5 + 0 + 1 - 3 + 1 = 4.
    m = conv_layer((1, 1, 5, 5), (2, 1, 3, 3), pads=[1, 0, 2, 1]).mvm
    assert m.pads == (1, 0, 2, 1)
    assert m.output_hw == (6, 4)


@pytest.mark.parametrize(
    ("auto_pad", "pads", "out_hw"),
    [
        # Input 7x6, kernel 4x3, strides 2.
        # SAME: out = ceil(in / stride) = (4, 3);
        # total pad H = (4 - 1) * 2 + 4 - 7 = 3, W = (3 - 1) * 2 + 3 - 6 = 1.
        # SAME_UPPER puts the odd extra at the end: top 1, bottom 2; left 0, right 1.
        pytest.param("SAME_UPPER", (1, 0, 2, 1), (4, 3), id="same_upper"),
        # SAME_LOWER puts it at the beginning: top 2, bottom 1; left 1, right 0.
        pytest.param("SAME_LOWER", (2, 1, 1, 0), (4, 3), id="same_lower"),
        # VALID: no padding; H = floor((7 - 4) / 2) + 1 = 2, W = floor((6 - 3) / 2) + 1 = 2.
        pytest.param("VALID", (0, 0, 0, 0), (2, 2), id="valid"),
    ],
)
def test_conv_auto_pad(auto_pad: str, pads: tuple, out_hw: tuple) -> None:
    m = conv_layer((1, 1, 7, 6), (2, 1, 4, 3), strides=[2, 2], auto_pad=auto_pad).mvm
    assert m.pads == pads
    assert m.output_hw == out_hw
    assert m.kernel == (4, 3)


def test_conv_same_lower_dilated() -> None:
    # Kernel 2 dilated by 2 spans 3; input 8, stride 2: out = 4,
    # total = (4 - 1) * 2 + 3 - 8 = 1 per axis; SAME_LOWER: begin 1, end 0.
    m = conv_layer((1, 1, 8, 8), (1, 1, 2, 2), strides=[2, 2], dilations=[2, 2],
                   auto_pad="SAME_LOWER").mvm
    assert m.pads == (1, 1, 0, 0)
    assert m.output_hw == (4, 4)


def test_conv_1d() -> None:
    # Length 10, kernel 3, stride 2, pads [1, 2]: out = floor((10 + 3 - 3) / 2) + 1 = 6.
    # Seen as a 2-D convolution of height 1.
    m = conv_layer((1, 3, 10), (5, 3, 3), strides=[2], pads=[1, 2]).mvm
    assert (m.in_channels, m.out_channels) == (3, 5)
    assert m.kernel == (1, 3)
    assert m.strides == (1, 2)
    assert m.pads == (0, 1, 0, 2)
    assert m.input_hw == (1, 10)
    assert m.output_hw == (1, 6)
    assert m.weights == 45


def test_conv_1d_same_upper() -> None:
    # Length 9, kernel 4, stride 1: out 9, total pad 3: begin 1, end 2.
    m = conv_layer((1, 2, 9), (3, 2, 4), auto_pad="SAME_UPPER").mvm
    assert m.pads == (0, 1, 0, 2)
    assert m.output_hw == (1, 9)


def test_conv_of_two_activations_is_vector() -> None:
    node = helper.make_node("Conv", ["x", "k"], ["y"], name="conv")
    layer = only_layer(load([node], {"x": (1, 2, 4, 4), "k": (3, 2, 3, 3)}, ["y"]))
    assert layer.kind is LayerKind.VECTOR
    # 2 * windows (2x2) * weights (3 * 2 * 9)
    assert layer.vector_ops == 2 * 4 * 54


# --------------------------------------------------------------------------- Gemm


def gemm_layer(a_shape, b_shape, const: str = "B", **attrs) -> Layer:
    node = helper.make_node("Gemm", ["A", "B"], ["y"], name="gemm", **attrs)
    if const == "B":
        inputs, inits = {"A": a_shape}, {"B": w(*b_shape)}
    else:
        inputs, inits = {"B": b_shape}, {"A": w(*a_shape)}
    layer = only_layer(load([node], inputs, ["y"], inits))
    assert layer.kind is LayerKind.GEMM
    return layer


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "attrs"),
    [
        # y (3x5) = A (3x4) B (4x5): M=3, K=4, N=5 in every case.
        pytest.param((3, 4), (4, 5), {}, id="plain"),
        pytest.param((3, 4), (5, 4), {"transB": 1}, id="transB"),
        pytest.param((4, 3), (4, 5), {"transA": 1}, id="transA"),
        pytest.param((4, 3), (5, 4), {"transA": 1, "transB": 1}, id="transA_transB"),
    ],
)
def test_gemm_transposes(a_shape, b_shape, attrs) -> None:
    layer = gemm_layer(a_shape, b_shape, **attrs)
    assert (layer.attributes["M"], layer.attributes["K"], layer.attributes["N"]) == (3, 4, 5)
    assert (layer.mvm.in_channels, layer.mvm.out_channels) == (4, 5)
    assert layer.weight_shape == b_shape
    assert layer.weights == 20
    assert layer.mvm.windows == 3
    assert layer.outputs[0].shape == (3, 5)


def test_gemm_constant_a() -> None:
    # y (5x3) = W (5x4) x (4x3): the 3 columns of x are the input vectors (M=3), each of
    # K=4 elements, giving N=5 outputs.
    layer = gemm_layer((5, 4), (4, 3), const="A")
    assert (layer.attributes["M"], layer.attributes["K"], layer.attributes["N"]) == (3, 4, 5)
    assert (layer.mvm.in_channels, layer.mvm.out_channels) == (4, 5)
    assert layer.weight_shape == (5, 4)
    assert [t.name for t in layer.inputs] == ["B"]


# --------------------------------------------------------------------------- MatMul


def mkn(layer: Layer) -> tuple[int, int, int]:
    return layer.attributes["M"], layer.attributes["K"], layer.attributes["N"]


def test_matmul_constant_right() -> None:
    # x (2, 3, 4) @ W (4, 5): M = 2 * 3 = 6 vectors of K = 4, N = 5.
    node = helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")
    layer = only_layer(load([node], {"x": (2, 3, 4)}, ["y"], {"W": w(4, 5)}))
    assert layer.kind is LayerKind.GEMM
    assert mkn(layer) == (6, 4, 5)
    assert (layer.mvm.in_channels, layer.mvm.out_channels, layer.mvm.groups) == (4, 5, 1)
    assert layer.weight_shape == (4, 5)
    assert layer.mvm.windows == 6


def test_matmul_constant_left() -> None:
    # W (5, 4) @ x (4, 3): 3 columns of x are the vectors: M = 3, K = 4, N = 5.
    node = helper.make_node("MatMul", ["W", "x"], ["y"], name="mm")
    layer = only_layer(load([node], {"x": (4, 3)}, ["y"], {"W": w(5, 4)}))
    assert layer.kind is LayerKind.GEMM
    assert mkn(layer) == (3, 4, 5)
    assert (layer.mvm.in_channels, layer.mvm.out_channels) == (4, 5)
    assert layer.weight_shape == (5, 4)
    assert layer.weights == 20


def test_matmul_constant_left_batched() -> None:
    # W (2, 5, 4) @ x (2, 4, 3): 2 weight matrices (groups), each sees 3 vectors of 4.
    node = helper.make_node("MatMul", ["W", "x"], ["y"], name="mm")
    layer = only_layer(load([node], {"x": (2, 4, 3)}, ["y"], {"W": w(2, 5, 4)}))
    assert mkn(layer) == (3, 4, 5)
    assert layer.mvm.groups == 2
    assert layer.weights == 40


def test_matmul_constant_right_batched() -> None:
    # x (2, 3, 6, 4) @ W (3, 4, 5): one matrix per head h (3 groups); each sees the
    # 2 * 6 = 12 rows of its head: M = 12, K = 4, N = 5.
    node = helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")
    layer = only_layer(load([node], {"x": (2, 3, 6, 4)}, ["y"], {"W": w(3, 4, 5)}))
    assert mkn(layer) == (12, 4, 5)
    assert layer.mvm.groups == 3
    assert (layer.mvm.in_channels, layer.mvm.out_channels) == (12, 15)
    assert layer.weights == 60


def test_matmul_constant_right_broadcast_activation() -> None:
    """A 2-D activation broadcast against a stack of 2 weight matrices.

    x (4, 8) @ W (2, 8, 16) -> y (2, 4, 16): each of the 2 matrices multiplies all 4 rows of
    x, so M = 4 (not 4 / 2), K = 8, N = 16, groups = 2.
    """
    node = helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")
    layer = only_layer(load([node], {"x": (4, 8)}, ["y"], {"W": w(2, 8, 16)}))
    assert layer.outputs[0].shape == (2, 4, 16)
    assert layer.mvm.groups == 2
    assert layer.weights == 2 * 8 * 16
    assert mkn(layer) == (4, 8, 16)
    assert layer.mvm.windows == 4


def test_matmul_constant_left_broadcast_activation() -> None:
    """A stack of 2 constant matrices times one 2-D activation.

    W (2, 5, 4) @ x (4, 3) -> y (2, 5, 3): each of the 2 matrices multiplies all 3 columns of
    x, so M = 3, K = 4, N = 5, groups = 2.
    """
    node = helper.make_node("MatMul", ["W", "x"], ["y"], name="mm")
    layer = only_layer(load([node], {"x": (4, 3)}, ["y"], {"W": w(2, 5, 4)}))
    assert layer.outputs[0].shape == (2, 5, 3)
    assert layer.mvm.groups == 2
    assert layer.weights == 40
    assert mkn(layer) == (3, 4, 5)


def test_matmul_vector_operands() -> None:
    # x (4,) @ W (4, 5): one vector; x (3, 4) @ w (4,): 3 vectors, one output each.
    node = helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")
    layer = only_layer(load([node], {"x": (4,)}, ["y"], {"W": w(4, 5)}))
    assert mkn(layer) == (1, 4, 5)
    layer = only_layer(load([node], {"x": (3, 4)}, ["y"], {"W": w(4)}))
    assert mkn(layer) == (3, 4, 1)
    assert layer.weights == 4


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "m", "k", "n", "batch"),
    [
        pytest.param((3, 4), (4, 5), 3, 4, 5, 1, id="2d"),
        pytest.param((2, 3, 4), (2, 4, 5), 3, 4, 5, 2, id="batched"),
    ],
)
def test_matmul_two_activations(a_shape, b_shape, m, k, n, batch) -> None:
    node = helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")
    layer = only_layer(load([node], {"a": a_shape, "b": b_shape}, ["y"]))
    assert layer.kind is LayerKind.VECTOR
    assert not layer.is_crossbar and layer.weights == 0
    assert layer.vector_ops == 2 * batch * m * k * n
    assert [t.name for t in layer.inputs] == ["a", "b"]


# --------------------------------------------------------------------------- Einsum


def test_einsum_gemm() -> None:
    # "bld,df->blf", x (2, 3, 4), W (4, 5): M = b * l = 6, K = d = 4, N = f = 5.
    node = helper.make_node("Einsum", ["x", "W"], ["y"], name="es", equation="bld,df->blf")
    layer = only_layer(load([node], {"x": (2, 3, 4)}, ["y"], {"W": w(4, 5)}))
    assert layer.kind is LayerKind.GEMM
    assert mkn(layer) == (6, 4, 5)
    assert layer.mvm.groups == 1
    assert layer.weight_shape == (4, 5)
    assert layer.weights == 20


def test_einsum_batched() -> None:
    # "bhd,hdf->bhf", x (2, 3, 4), W (3, 4, 5): h = 3 groups, each M = b = 2, K = 4, N = 5.
    node = helper.make_node("Einsum", ["x", "W"], ["y"], name="es", equation="bhd,hdf->bhf")
    layer = only_layer(load([node], {"x": (2, 3, 4)}, ["y"], {"W": w(3, 4, 5)}))
    assert layer.kind is LayerKind.GEMM
    assert mkn(layer) == (2, 4, 5)
    assert layer.mvm.groups == 3
    assert (layer.mvm.in_channels, layer.mvm.out_channels) == (12, 15)
    assert layer.weights == 60
    assert layer.outputs[0].shape == (2, 3, 5)


# --------------------------------------------------------------------------- passes


def _bn_inits(channels: int) -> dict[str, np.ndarray]:
    return {n: w(channels) for n in ("s", "b", "mean", "var")}


def test_batchnorm_after_conv_is_folded() -> None:
    conv = helper.make_node("Conv", ["x", "W"], ["c"], name="conv")
    bn = helper.make_node("BatchNormalization", ["c", "s", "b", "mean", "var"], ["y"], name="bn")
    inits = {"W": w(4, 2, 3, 3)} | _bn_inits(4)
    plain = load([helper.make_node("Conv", ["x", "W"], ["y"], name="conv")], {"x": (1, 2, 5, 5)},
                 ["y"], {"W": w(4, 2, 3, 3)})
    graph = load([conv, bn], {"x": (1, 2, 5, 5)}, ["y"], inits)
    assert len(graph.layers) == 1 == len(plain.layers)
    layer = graph.layers[0]
    assert layer.op == "Conv+BatchNormalization"
    assert layer.kind is LayerKind.CONV
    assert layer.fused == ("bn",)
    assert [t.name for t in layer.outputs] == ["y"]
    assert layer.mvm == plain.layers[0].mvm
    assert graph.weights == 72


def test_batchnorm_after_relu_not_folded() -> None:
    conv = helper.make_node("Conv", ["x", "W"], ["c"], name="conv")
    relu = helper.make_node("Relu", ["c"], ["r"], name="relu")
    bn = helper.make_node("BatchNormalization", ["r", "s", "b", "mean", "var"], ["y"], name="bn")
    graph = load([conv, relu, bn], {"x": (1, 2, 5, 5)}, ["y"],
                 {"W": w(4, 2, 3, 3)} | _bn_inits(4))
    assert [layer.op for layer in graph.layers] == ["Conv+Relu", "BatchNormalization"]
    bn_layer = graph.layer("bn")
    assert bn_layer.kind is LayerKind.VECTOR
    assert [t.name for t in bn_layer.inputs] == ["r"]
    assert bn_layer.vector_ops == 2 * 4 * 3 * 3  # scale and shift per element


def test_batchnorm_not_folded_when_conv_output_is_shared() -> None:
    conv = helper.make_node("Conv", ["x", "W"], ["c"], name="conv")
    bn = helper.make_node("BatchNormalization", ["c", "s", "b", "mean", "var"], ["y"], name="bn")
    relu = helper.make_node("Relu", ["c"], ["z"], name="relu")
    graph = load([conv, bn, relu], {"x": (1, 2, 5, 5)}, ["y", "z"],
                 {"W": w(4, 2, 3, 3)} | _bn_inits(4))
    assert [layer.op for layer in graph.layers] == ["Conv", "BatchNormalization", "Relu"]


def test_relu_fused_into_the_conv_before_it() -> None:
    conv = helper.make_node("Conv", ["x", "W"], ["c"], name="conv")
    bn = helper.make_node("BatchNormalization", ["c", "s", "b", "mean", "var"], ["n"], name="bn")
    relu = helper.make_node("Relu", ["n"], ["y"], name="relu")
    graph = load([conv, bn, relu], {"x": (1, 2, 5, 5)}, ["y"],
                 {"W": w(4, 2, 3, 3)} | _bn_inits(4))
    (layer,) = graph.layers
    assert layer.op == "Conv+BatchNormalization+Relu"
    assert layer.activation == "Relu"
    assert layer.fused == ("bn", "relu")
    assert [t.name for t in layer.outputs] == ["y"]
    assert layer.vector_ops == 4 * 3 * 3  # one per output element


@pytest.mark.parametrize("outputs", [["y", "c"], ["y", "z"]], ids=["graph_output", "shared"])
def test_relu_not_fused_when_the_conv_output_is_read_elsewhere(outputs) -> None:
    conv = helper.make_node("Conv", ["x", "W"], ["c"], name="conv")
    relu = helper.make_node("Relu", ["c"], ["y"], name="relu")
    nodes = [conv, relu]
    if "z" in outputs:
        nodes.append(helper.make_node("Neg", ["c"], ["z"], name="neg"))
    graph = load(nodes, {"x": (1, 2, 5, 5)}, outputs, {"W": w(4, 2, 3, 3)})
    assert graph.layer("conv").activation is None
    assert graph.layer("relu").op == "Relu"


def _erf_gelu_nodes(x: str, y: str) -> list[onnx.NodeProto]:
    return [
        helper.make_node("Div", [x, "sqrt2"], ["d"], name="div"),
        helper.make_node("Erf", ["d"], ["e"], name="erf"),
        helper.make_node("Add", ["e", "one"], ["a"], name="add"),
        helper.make_node("Mul", [x, "a"], ["m"], name="mul"),
        helper.make_node("Mul", ["m", "half"], [y], name="half"),
    ]


_GELU_CONSTS = {"sqrt2": np.array(math.sqrt(2), np.float32), "one": np.array(1, np.float32),
                "half": np.array(0.5, np.float32)}


def test_erf_gelu_fused() -> None:
    graph = load(_erf_gelu_nodes("x", "y"), {"x": (1, 4, 8)}, ["y"], _GELU_CONSTS)
    layer = only_layer(graph)
    assert layer.op == "Gelu"
    assert layer.kind is LayerKind.VECTOR
    assert [t.name for t in layer.inputs] == ["x"]
    assert [t.name for t in layer.outputs] == ["y"]
    assert layer.vector_ops == 8 * 32  # 8 ops per element, as the Gelu op
    assert set(layer.fused) == {"erf", "add", "mul", "half"}


def test_erf_gelu_between_matmuls() -> None:
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"], name="fc1"),
             *_erf_gelu_nodes("h", "g"),
             helper.make_node("MatMul", ["g", "W2"], ["y"], name="fc2")]
    graph = load(nodes, {"x": (2, 4)}, ["y"],
                 _GELU_CONSTS | {"W1": w(4, 8), "W2": w(8, 3)})
    assert [layer.op for layer in graph.layers] == ["MatMul", "Gelu", "MatMul"]
    assert [t.name for t in graph.layers[1].inputs] == ["h"]
    assert [t.name for t in graph.layers[2].inputs] == ["g"]
    assert graph.weights == 32 + 24


@pytest.mark.parametrize("node", ["div", "add", "half"])
def test_erf_gelu_not_fused_over_an_activation_operand(node: str) -> None:
    """The pattern's second operands (sqrt 2, 1, 0.5) are constants; if one is an activation
    the chain is not a GELU, and above all that activation must stay an input of some layer."""
    nodes = _erf_gelu_nodes("x", "y")
    constant = {"div": "sqrt2", "add": "one", "half": "half"}[node]
    target = next(n for n in nodes if n.name == node)
    target.input[list(target.input).index(constant)] = "z"
    consts = {k: v for k, v in _GELU_CONSTS.items() if k != constant}
    graph = load(nodes, {"x": (1, 4), "z": (1, 4)}, ["y"], consts)
    readers = [layer.name for layer in graph.layers if "z" in {t.name for t in layer.inputs}]
    assert readers, [(layer.op, [t.name for t in layer.inputs]) for layer in graph.layers]
    assert "Gelu" not in [layer.op for layer in graph.layers]


def test_erf_gelu_not_fused_with_other_constants() -> None:
    """x * 0.5 * (1 + erf(x / 3)) has the shape of the pattern but is not GELU."""
    graph = load(_erf_gelu_nodes("x", "y"), {"x": (1, 4)}, ["y"],
                 _GELU_CONSTS | {"sqrt2": np.array(3.0, np.float32)})
    assert [layer.op for layer in graph.layers] == ["Div", "Erf", "Add", "Mul", "Mul"]


# --------------------------------------------------------------------------- constant folding


def test_weight_from_constant_node() -> None:
    nodes = [helper.make_node("Constant", [], ["W"], name="const",
                              value=numpy_helper.from_array(w(3, 2, 1, 1))),
             helper.make_node("Conv", ["x", "W"], ["y"], name="conv")]
    layer = only_layer(load(nodes, {"x": (1, 2, 4, 4)}, ["y"]))
    assert layer.kind is LayerKind.CONV
    assert layer.weight_shape == (3, 2, 1, 1)
    assert layer.weights == 6


def test_weight_from_constant_of_shape() -> None:
    nodes = [helper.make_node("ConstantOfShape", ["Wshape"], ["W"], name="cos",
                              value=numpy_helper.from_array(np.array([0.5], np.float32))),
             helper.make_node("Conv", ["x", "W"], ["y"], name="conv")]
    layer = only_layer(load(nodes, {"x": (1, 2, 5, 5)}, ["y"], {"Wshape": i64(4, 2, 3, 3)}))
    assert layer.kind is LayerKind.CONV
    assert layer.weight_shape == (4, 2, 3, 3)
    assert layer.weights == 72
    assert layer.mvm.output_hw == (3, 3)


def test_weight_from_identity() -> None:
    nodes = [helper.make_node("Identity", ["W0"], ["W"], name="id"),
             helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")]
    layer = only_layer(load(nodes, {"x": (3, 4)}, ["y"], {"W0": w(4, 6)}))
    assert layer.kind is LayerKind.GEMM
    assert mkn(layer) == (3, 4, 6)
    assert layer.weight_shape == (4, 6)


def test_weight_reshaped_by_shape_chain() -> None:
    # The weight's shape [8, 4] is [shape(x)[2], 4], computed in the graph.
    nodes = [
        helper.make_node("Shape", ["x"], ["xs"], name="shape"),
        helper.make_node("Gather", ["xs", "two"], ["d"], name="gather", axis=0),
        helper.make_node("Unsqueeze", ["d", "zero"], ["d1"], name="unsq"),
        helper.make_node("Concat", ["d1", "four"], ["wshape"], name="concat", axis=0),
        helper.make_node("Reshape", ["Wflat", "wshape"], ["W"], name="reshape"),
        helper.make_node("MatMul", ["x", "W"], ["y"], name="mm"),
    ]
    inits = {"two": np.array(2, np.int64), "zero": i64(0), "four": i64(4), "Wflat": w(32)}
    layer = only_layer(load(nodes, {"x": (1, 6, 8)}, ["y"], inits))
    assert layer.kind is LayerKind.GEMM
    assert layer.weight_shape == (8, 4)
    assert mkn(layer) == (6, 8, 4)
    assert layer.outputs[0].shape == (1, 6, 4)


def test_all_constant_subgraph_disappears() -> None:
    # A MatMul of two constants is folded away; only the Add on the activation stays.
    nodes = [helper.make_node("MatMul", ["A", "B"], ["c"], name="mm"),
             helper.make_node("Add", ["x", "c"], ["y"], name="add")]
    layer = only_layer(load(nodes, {"x": (2, 3)}, ["y"], {"A": w(2, 4), "B": w(4, 3)}))
    assert layer.op == "Add"
    assert [t.name for t in layer.inputs] == ["x"]


# --------------------------------------------------------------------------- op kinds

X = (1, 4, 6, 6)  # 144 elements
N_X = 144


def _case(op, kind, ops=None, *, inputs=None, extra=None, outputs=("y",), opset=17, **attrs):
    names = list(inputs or {"x": X})
    names += list(extra or {})
    return pytest.param(op, names, dict(inputs or {"x": X}), dict(extra or {}), list(outputs),
                        opset, attrs, kind, ops, id=op)


OP_CASES = [
    _case("Relu", "vector", N_X),  # one op per element
    _case("Clip", "vector", extra={"lo": np.array(0, np.float32),
                                   "hi": np.array(6, np.float32)}),
    _case("Sigmoid", "vector"),
    _case("Tanh", "vector"),
    _case("LeakyRelu", "vector", alpha=0.1),
    _case("Gelu", "vector", opset=20),
    # 3x3 windows, stride 1, no pads: 6x6 -> 4x4; 4 * 16 outputs * 9 = 576
    _case("MaxPool", "vector", 4 * 16 * 9, kernel_shape=[3, 3]),
    # 2x2 windows, stride 2: 6x6 -> 3x3; 4 * 9 outputs * 4 = 144
    _case("AveragePool", "vector", 4 * 9 * 4, kernel_shape=[2, 2], strides=[2, 2]),
    _case("GlobalAveragePool", "vector", N_X),  # reads every element once
    _case("Add", "vector", N_X, inputs={"x": X, "x2": X}),
    _case("Sum", "vector", 2 * N_X, inputs={"x": X, "x2": X, "x3": X}),  # two adds / element
    _case("Mul", "vector", N_X, inputs={"x": X, "x2": X}),
    _case("Sub", "vector", N_X, inputs={"x": X, "x2": X}),
    _case("Div", "vector", N_X, inputs={"x": X, "x2": X}),
    _case("Concat", "data", 0, inputs={"x": X, "x2": X}, axis=1),
    _case("Split", "data", 0, extra={"parts": i64(1, 3)}, outputs=("y", "y2"), axis=1),
    _case("Slice", "data", 0, extra={"starts": i64(1), "ends": i64(3), "axes": i64(2)}),
    _case("Reshape", "data", 0, extra={"shape": i64(1, 4, 36)}),
    _case("Flatten", "data", 0, axis=1),
    _case("Transpose", "data", 0, perm=[0, 2, 3, 1]),
    _case("Squeeze", "data", 0, extra={"axes": i64(0)}),
    _case("Unsqueeze", "data", 0, extra={"axes": i64(0)}),
    _case("Dropout", "data", 0),
    _case("LRN", "vector", size=3),
    _case("Softmax", "vector", axis=1),
    _case("LayerNormalization", "vector", extra={"scale": w(6)}),
    _case("ReduceMean", "vector", N_X, extra={"axes": i64(2, 3)}, opset=18),
]


@pytest.mark.parametrize(
    ("op", "names", "inputs", "extra", "outputs", "opset", "attrs", "kind", "ops"), OP_CASES)
def test_op_kind(op, names, inputs, extra, outputs, opset, attrs, kind, ops) -> None:
    node = helper.make_node(op, names, outputs, name="node", **attrs)
    graph = load([node], inputs, outputs, extra, opset=opset)
    layer = only_layer(graph)
    assert layer.op == op
    assert layer.kind is LayerKind(kind)
    assert not layer.is_crossbar
    assert [t.name for t in layer.inputs] == list(inputs)  # constants are not activations
    assert [t.name for t in layer.outputs] == outputs
    if kind == "data":
        assert layer.vector_ops == 0
    else:
        assert layer.vector_ops > 0
    if ops is not None:
        assert layer.vector_ops == ops


def test_relu_ops_follow_shape() -> None:
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    assert only_layer(load([node], {"x": (2, 3, 5)}, ["y"])).vector_ops == 30


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("op", "names", "extra", "attrs"),
    [
        pytest.param("TopK", ["x", "k"], {"k": i64(2)}, {}, id="TopK"),
        pytest.param("NonMaxSuppression", ["boxes", "scores"], {}, {}, id="NonMaxSuppression"),
    ],
)
def test_unsupported_op(op, names, extra, attrs) -> None:
    if op == "TopK":
        inputs, outputs = {"x": (1, 5)}, ["v", "i"]
    else:
        inputs, outputs = {"boxes": (1, 4, 4), "scores": (1, 1, 4)}, ["sel"]
    node = helper.make_node(op, names, outputs, name="the_node", **attrs)
    model = make_model([node], inputs, outputs, extra)
    with pytest.raises(InputError) as info:
        load_onnx(model)
    message = str(info.value)
    assert f"'{op}'" in message
    assert "the_node" in message
    assert "supported ops" in message
    assert "Conv" in message  # the list follows


def test_foreign_domain_op() -> None:
    node = helper.make_node("Frob", ["x"], ["y"], name="frob", domain="com.example")
    graph = helper.make_graph([node], "test", [helper.make_tensor_value_info("x", FLOAT, [1, 2])],
                              [helper.make_tensor_value_info("y", FLOAT, [1, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.example", 1)])
    model.ir_version = 8
    with pytest.raises(InputError, match=r"Frob.*frob.*supported ops"):
        load_onnx(model)


def _symbolic_model() -> onnx.ModelProto:
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
             helper.make_node("Relu", ["h"], ["y"], name="relu")]
    return make_model(nodes, {"x": ("batch", 4)}, ["y"], {"W": w(4, 3)})


def test_symbolic_dim_needs_input_shape() -> None:
    with pytest.raises(InputError) as info:
        load_onnx(_symbolic_model())
    message = str(info.value)
    assert "--input-shape" in message
    assert "'x'" in message and "batch" in message


def test_input_shapes_resolve_symbolic_dim() -> None:
    graph = load_onnx(_symbolic_model(), input_shapes={"x": (5, 4)})
    assert graph.inputs[0].shape == (5, 4)
    assert mkn(graph.layer("mm")) == (5, 4, 3)
    assert graph.layer("mm").activation == "Relu"
    assert graph.layer("mm").vector_ops == 15  # the fused Relu's
    assert graph.outputs[0].shape == (5, 3)


@pytest.mark.parametrize(
    ("shapes", "words"),
    [
        pytest.param({"nope": (5, 4)}, ["nope", "x"], id="wrong_name"),
        pytest.param({"x": (5, 4, 1)}, ["rank 3", "rank 2"], id="wrong_rank"),
    ],
)
def test_bad_input_shapes(shapes, words) -> None:
    with pytest.raises(InputError) as info:
        load_onnx(_symbolic_model(), input_shapes=shapes)
    for word in words:
        assert word in str(info.value)
