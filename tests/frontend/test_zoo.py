"""Tests of the model zoo, :mod:`pimsolve.frontend.zoo`.

Every model is built in both weight modes and checked with the full ONNX
checker and strict shape inference; builds must be byte-identical across
calls. The small models are run in onnxruntime with random weights, and the
Conv/Gemm counts and crossbar weight counts of ResNet-18 and VGG16 are
compared with the torchvision architectures. VGG16 in random mode carries
~553 MB of float32 weights, so that case is marked ``slow``.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from pimsolve.frontend import zoo

EXPECTED_NAMES = [
    "vgg8-28", "resnet18-28", "resnet18", "resnet34", "googlenet", "vgg16", "squeezenet",
    "vit-small", "bert-base-layer", "gpt-block",
]
SMALL = ["vgg8-28", "resnet18-28", "vit-small", "gpt-block"]
HEAVY_RANDOM = {"vgg16"}
INPUT_SHAPES = {
    "vgg8-28": (1, 1, 28, 28),
    "resnet18-28": (1, 1, 28, 28),
    "vit-small": (1, 3, 32, 32),
    "bert-base-layer": (1, 128, 768),
    "gpt-block": (1, 64, 768),
}
CROSSBAR_OPS = {"Conv", "Gemm", "MatMul", "Einsum"}

# torchvision resnet18, conv/fc weights only (no biases, no BN):
#   stem 64*3*7*7 = 9,408
#   layer1 4 * 64*64*9 = 147,456
#   layer2 128*64*9 + 3 * 128*128*9 + 128*64 (downsample) = 524,288
#   layer3 256*128*9 + 3 * 256*256*9 + 256*128 = 2,097,152
#   layer4 512*256*9 + 3 * 512*512*9 + 512*256 = 8,388,608
#   fc 1000*512 = 512,000
# total 11,678,912 (= 11,689,512 parameters - 9,600 BN affine - 1,000 fc bias)
RESNET18_WEIGHTS = 11_678_912
# torchvision vgg16: 14,710,464 conv + 123,633,664 fc = 138,344,128
# (= 138,357,544 parameters - 13,416 biases)
VGG16_WEIGHTS = 138_344_128


def _cases() -> list[pytest.ParameterSet]:
    return [
        pytest.param(
            name, mode, id=f"{name}-{mode}",
            marks=[pytest.mark.slow] if mode == "random" and name in HEAVY_RANDOM else [],
        )
        for name in EXPECTED_NAMES
        for mode in ("shape", "random")
    ]


def _param_shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    """Shapes of every constant tensor, ``ConstantOfShape`` outputs included."""
    inits = {t.name: t for t in model.graph.initializer}
    shapes = {name: tuple(t.dims) for name, t in inits.items()}
    for node in model.graph.node:
        if node.op_type == "ConstantOfShape":
            dims = numpy_helper.to_array(inits[node.input[0]])
            shapes[node.output[0]] = tuple(int(d) for d in dims)
    return shapes


def _crossbar_weights(model: onnx.ModelProto) -> list[tuple[str, tuple[int, ...]]]:
    """(op type, shape) of the constant weight operand of each Conv/Gemm/MatMul/Einsum."""
    shapes = _param_shapes(model)
    found = []
    for node in model.graph.node:
        if node.op_type in CROSSBAR_OPS:
            found += [(node.op_type, shapes[i]) for i in node.input[:2] if i in shapes]
    return found


def _op_counts(model: onnx.ModelProto) -> Counter[str]:
    return Counter(node.op_type for node in model.graph.node)


def test_registry() -> None:
    assert zoo.names() == EXPECTED_NAMES == list(zoo.MODELS)
    for name, spec in zoo.MODELS.items():
        assert spec.name == name
        assert spec.description and spec.source
        with pytest.raises(AttributeError):
            spec.name = "other"  # type: ignore[misc]


def test_unknown_name_lists_available() -> None:
    with pytest.raises(KeyError) as info:
        zoo.build("alexnet")
    assert all(name in str(info.value) for name in EXPECTED_NAMES)


def test_bad_weight_mode() -> None:
    with pytest.raises(ValueError):
        zoo.build("vgg8-28", weights="zeros")  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "mode"), _cases())
def test_model_valid_and_deterministic(name: str, mode: str) -> None:
    model = zoo.build(name, weights=mode)
    data = model.SerializeToString()
    assert zoo.build(name, weights=mode).SerializeToString() == data
    onnx.checker.check_model(data, full_check=True)
    onnx.shape_inference.infer_shapes(data, strict_mode=True)
    spec = zoo.MODELS[name]
    assert model.producer_name == "pimsolve-zoo"
    assert [i.name for i in model.graph.input] == [spec.input_name]
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert tuple(d.dim_value for d in dims) == spec.input_shape
    assert spec.input_shape == INPUT_SHAPES.get(name, (1, 3, 224, 224))
    if mode == "shape":
        assert not any(t.data_type == onnx.TensorProto.FLOAT and np.prod(t.dims) > 64 * 64
                       for t in model.graph.initializer)
    else:
        assert _op_counts(model)["ConstantOfShape"] == 0


@pytest.mark.parametrize("name", SMALL)
def test_modes_share_structure(name: str) -> None:
    shape, random = zoo.build(name), zoo.build(name, weights="random")
    ops = [(n.op_type, list(n.input)) for n in shape.graph.node if n.op_type != "ConstantOfShape"]
    assert ops == [(n.op_type, list(n.input)) for n in random.graph.node]
    assert _param_shapes(shape).items() >= _param_shapes(random).items()


@pytest.mark.parametrize("name", SMALL)
def test_random_weights_run_in_onnxruntime(name: str) -> None:
    ort = pytest.importorskip("onnxruntime")
    spec = zoo.MODELS[name]
    model = zoo.build(name, weights="random", seed=1)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).standard_normal(spec.input_shape, dtype=np.float32)
    (y,) = session.run(None, {spec.input_name: x})
    assert y.shape == spec.output_shape
    assert np.isfinite(y).all()
    assert np.abs(y).max() > 0


def test_seed_changes_random_weights() -> None:
    a = zoo.build("vgg8-28", weights="random", seed=0).graph.initializer
    b = zoo.build("vgg8-28", weights="random", seed=1).graph.initializer
    assert [t.name for t in a] == [t.name for t in b]
    assert a[0].raw_data != b[0].raw_data


def test_resnet18_architecture() -> None:
    model = zoo.build("resnet18")
    counts = _op_counts(model)
    # 1 stem + 16 block convs + 3 downsample convs; one fc
    assert (counts["Conv"], counts["Gemm"], counts["BatchNormalization"]) == (20, 1, 20)
    assert (counts["Add"], counts["MaxPool"], counts["GlobalAveragePool"]) == (8, 1, 1)
    assert sum(int(np.prod(s)) for _, s in _crossbar_weights(model)) == RESNET18_WEIGHTS


def test_vgg16_architecture() -> None:
    model = zoo.build("vgg16")
    counts = _op_counts(model)
    assert (counts["Conv"], counts["Gemm"], counts["MaxPool"]) == (13, 3, 5)
    assert sum(int(np.prod(s)) for _, s in _crossbar_weights(model)) == VGG16_WEIGHTS


@pytest.mark.parametrize(
    ("name", "convs", "gemms"),
    [("resnet34", 36, 1), ("googlenet", 57, 1), ("squeezenet", 26, 0), ("vgg8-28", 6, 2),
     ("resnet18-28", 20, 1)],
)
def test_cnn_layer_counts(name: str, convs: int, gemms: int) -> None:
    counts = _op_counts(zoo.build(name))
    assert (counts["Conv"], counts["Gemm"]) == (convs, gemms)


def test_transformer_op_patterns() -> None:
    vit, bert, gpt = (zoo.build(n) for n in ("vit-small", "bert-base-layer", "gpt-block"))
    vit_ops = _op_counts(vit)
    assert vit_ops["Einsum"] == 4 and vit_ops["Erf"] == 4 and vit_ops["Softmax"] == 4
    assert vit_ops["LayerNormalization"] == 9
    assert ("Einsum", (192, 768)) in _crossbar_weights(vit)
    assert _op_counts(bert)["Shape"] >= 1
    assert {"Gelu", "Split"} <= set(_op_counts(gpt))
    assert [o.version for o in gpt.opset_import] == [20]
    for model in (vit, bert, gpt):
        # two activation x activation MatMuls (QK^T and AV) per attention
        const = set(_param_shapes(model))
        act = [n for n in model.graph.node if n.op_type == "MatMul" and not set(n.input) & const]
        assert len(act) == 2 * _op_counts(model)["Softmax"]
