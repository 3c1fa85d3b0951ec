"""Load the ONNX package's "light" model zoo and check crossbar layers and weights.

The onnx wheel ships nine real CNNs (AlexNet, DenseNet-121, Inception v1/v2, ResNet-50,
ShuffleNet, SqueezeNet, VGG-19, ZFNet-512) in ``onnx/backend/test/data/light``, their weights
replaced by ``ConstantOfShape`` nodes. For each, ``load_onnx`` must succeed, find one crossbar
layer per Conv / Gemm / MatMul / Einsum node with a constant weight operand, and count exactly
the elements of those weights. The expected values are computed here from the ONNX file alone
(``expected_crossbar_weights``), without pimsolve's constant folding. Each model is then lowered
on the ISAAC target and its crossbar count re-derived from the layer geometry.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from functools import cache
from pathlib import Path

import onnx
import pytest
from onnx import numpy_helper, shape_inference

from pimsolve.cli import main
from pimsolve.frontend import zoo
from pimsolve.frontend.load import load_onnx
from pimsolve.ir import Graph
from pimsolve.lowering import lower
from pimsolve.target import load_target

LIGHT_DIR = Path(onnx.__file__).parent / "backend/test/data/light"
MODELS = sorted(LIGHT_DIR.glob("*.onnx"))
CROSSBAR_OPS = {"Conv", "Gemm", "MatMul", "Einsum"}


def constant_names(model: onnx.ModelProto) -> set[str]:
    """Tensors whose value is known without running the model: initializers, and outputs of
    nodes all of whose inputs are constant (recursively). Graph inputs that are not
    initializers are not constant."""
    constant = {init.name for init in model.graph.initializer}
    changed = True
    while changed:  # a fixed point, so node order does not matter
        changed = False
        for node in model.graph.node:
            if all(name in constant for name in node.input if name) and not all(
                    out in constant for out in node.output if out):
                constant.update(out for out in node.output if out)
                changed = True
    return constant


def constant_shapes(model: onnx.ModelProto, names: set[str]) -> dict[str, tuple[int, ...]]:
    """Static shapes of ``names``: initializer dims, the value of a ``ConstantOfShape``'s shape
    initializer, or else ONNX shape inference with data propagation."""
    inits = {init.name: init for init in model.graph.initializer}
    shapes = {name: tuple(init.dims) for name, init in inits.items()}
    for node in model.graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in inits:
            dims = numpy_helper.to_array(inits[node.input[0]])
            shapes[node.output[0]] = tuple(int(d) for d in dims)
    if names - shapes.keys():
        inferred = shape_inference.infer_shapes(model, data_prop=True)
        for info in inferred.graph.value_info:
            if info.name in names and info.name not in shapes:
                dims = info.type.tensor_type.shape.dim
                if all(d.HasField("dim_value") for d in dims):
                    shapes[info.name] = tuple(d.dim_value for d in dims)
    return shapes


def expected_crossbar_weights(model: onnx.ModelProto) -> list[tuple[int, ...]]:
    """Shape of the constant weight operand of every Conv/Gemm/MatMul/Einsum that stays in the
    graph (not itself a constant computation), in node order."""
    constant = constant_names(model)
    weights = []
    for node in model.graph.node:
        if node.op_type not in CROSSBAR_OPS or all(n in constant for n in node.input if n):
            continue
        # Conv: the weight is input 1; Gemm / MatMul / Einsum: either operand may be it
        candidates = node.input[1:2] if node.op_type == "Conv" else node.input[1::-1]
        weight = next((n for n in candidates if n in constant), None)
        if weight is not None:
            weights.append(weight)
    shapes = constant_shapes(model, set(weights))
    return [shapes[name] for name in weights]


@cache
def _loaded(path: Path) -> tuple[onnx.ModelProto, Graph]:
    return onnx.load(path), load_onnx(path)


def test_models_found() -> None:
    assert len(MODELS) == 9, MODELS


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_crossbar_layers_and_weights(path: Path) -> None:
    model, graph = _loaded(path)
    expected = expected_crossbar_weights(model)
    assert expected, "every light model has convolutions"
    assert len(graph.crossbar_layers) == len(expected)
    assert Counter(layer.weight_shape for layer in graph.crossbar_layers) == Counter(expected)
    assert graph.weights == sum(math.prod(shape) for shape in expected)
    for layer in graph.crossbar_layers:
        assert layer.weights == math.prod(layer.weight_shape), layer.name


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_lower_on_isaac(path: Path) -> None:
    _, graph = _loaded(path)
    target = load_target("isaac")
    workload = lower(graph, target)
    assert len(workload.mvm_layers) == len(graph.crossbar_layers)
    assert workload.weights == graph.weights
    assert workload.crossbars_needed == sum(m.unfolding.crossbars for m in workload.mvm_layers)
    # Re-derive the default im2col (IK2,O,1) crossbars from each layer's geometry: g groups of
    # an (I/g * Kh * Kw) x (O/g) matrix on 128x128 crossbars, 16-bit weights in 2-bit cells.
    rows, cols, slices = 128, 128, 16 // 2
    by_hand = 0
    for layer in graph.crossbar_layers:
        m = layer.mvm
        g = m.groups
        height = m.in_channels // g * m.kernel[0] * m.kernel[1]
        width = m.out_channels // g
        by_hand += g * math.ceil(height / rows) * math.ceil(width * slices / cols)
    assert workload.crossbars_needed == by_hand


ZOO = zoo.names()


@pytest.mark.parametrize("name", ZOO)
def test_benchmark_models_crossbar_layers_and_weights(name: str) -> None:
    """The same independent count on every network of ``benchmarks/models`` (the zoo)."""
    model = zoo.build(name)
    graph = load_onnx(model)
    expected = expected_crossbar_weights(model)
    assert len(graph.crossbar_layers) == len(expected)
    assert Counter(layer.weight_shape for layer in graph.crossbar_layers) == Counter(expected)
    assert graph.weights == sum(math.prod(shape) for shape in expected)


@pytest.mark.parametrize("model", [str(p) for p in MODELS] + ZOO,
                         ids=[p.stem for p in MODELS] + ZOO)
def test_inspect_succeeds(model: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``pimsolve inspect MODEL --target isaac --json`` on every light and benchmark model."""
    with pytest.raises(SystemExit) as info:
        main(["inspect", model, "--target", "isaac", "--json"])
    assert info.value.code in (0, None)
    report = json.loads(capsys.readouterr().out)
    assert report["totals"]["crossbars_needed"] > 0
