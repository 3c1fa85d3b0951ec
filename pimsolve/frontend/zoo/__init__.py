"""Model zoo: deterministic ONNX builders of the networks PIM papers evaluate.

The models are written with :mod:`onnx.helper` (no PyTorch needed) and are
byte-identical for the same ``(name, weights, seed)``.

Examples
--------
>>> from pimsolve.frontend import zoo
>>> model = zoo.build("resnet18")                          # tiny, ConstantOfShape weights
>>> model = zoo.build("vit-small", weights="random", seed=1)  # runnable float32 weights
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import onnx

from . import cnn, transformer
from ._builder import PRODUCER_NAME, GraphBuilder, WeightMode

__all__ = ["MODELS", "PRODUCER_NAME", "WeightMode", "ZooModel", "build", "names"]

_PIMCOMP = "PIMCOMP (Sun et al., TCAD), Sec. VIII-A"
_COMPASS = "COMPASS (Park et al.), Table II"


@dataclass(frozen=True)
class ZooModel:
    """Description of one zoo model.

    Attributes
    ----------
    name : str
        Registry key, e.g. ``"resnet18"``.
    description : str
        One-line description of the architecture.
    input_shape : tuple of int
        Shape of the single float32 input.
    source : str
        Which PIM paper(s) evaluate this network.
    builder : callable
        ``builder(graph_builder, input_name) -> output_name``.
    output_shape : tuple of int
        Shape of the single float32 output.
    opset : int
        Default-domain opset version.
    input_name : str
        Name of the graph input.
    """

    name: str
    description: str
    input_shape: tuple[int, ...]
    source: str
    builder: Callable[[GraphBuilder, str], str]
    output_shape: tuple[int, ...]
    opset: int = 17
    input_name: str = "input"


_IMAGENET = (1, 3, 224, 224)

MODELS: dict[str, ZooModel] = {
    m.name: m
    for m in (
        ZooModel(
            "vgg8-28", "VGG8 (6 conv 3x3 + 2 FC) on 1x28x28 MNIST-style input",
            (1, 1, 28, 28), f"{_PIMCOMP}; VGG8 layer plan of DNN+NeuroSim", cnn.vgg8_28, (1, 10),
        ),
        ZooModel(
            "resnet18-28", "ResNet-18 with a 3x3 stride-1 stem, no max pool, on 1x28x28 input",
            (1, 1, 28, 28), _PIMCOMP, cnn.resnet18_28, (1, 10),
        ),
        ZooModel(
            "resnet18", "torchvision ResNet-18, BatchNormalization not folded", _IMAGENET,
            f"{_PIMCOMP}; {_COMPASS}", cnn.resnet18, (1, 1000),
        ),
        ZooModel(
            "resnet34", "torchvision ResNet-34, BatchNormalization not folded", _IMAGENET,
            _PIMCOMP, cnn.resnet34, (1, 1000),
        ),
        ZooModel(
            "googlenet", "torchvision GoogLeNet (Inception v1) without auxiliary heads",
            _IMAGENET, _PIMCOMP, cnn.googlenet, (1, 1000),
        ),
        ZooModel(
            "vgg16", "torchvision VGG16: 13 conv 3x3 + 3 FC, no BN", _IMAGENET,
            f"{_COMPASS}; PUMA (ASPLOS 2019)", cnn.vgg16, (1, 1000),
        ),
        ZooModel(
            "squeezenet", "torchvision SqueezeNet 1.1 (fire modules, 1x1 conv classifier)",
            _IMAGENET, _COMPASS, cnn.squeezenet, (1, 1000),
        ),
        ZooModel(
            "vit-small", "ViT on 3x32x32: patch 4, dim 192, 3 heads, 4 blocks, MLP 768",
            (1, 3, 32, 32),
            "pimsolve transformer benchmark: exercises OCC's contraction detection (Einsum, "
            "MatMul with a constant operand) and attention's activation products",
            transformer.vit_small, (1, 10),
        ),
        ZooModel(
            "bert-base-layer", "One BERT-base encoder layer: 12 heads, FF 3072, seq 128",
            (1, 128, 768),
            "pimsolve transformer benchmark (BERT-base shapes); OCC Sec. IV contractions",
            transformer.bert_base_layer, (1, 128, 768), input_name="hidden_states",
        ),
        ZooModel(
            "gpt-block", "One GPT-2 decoder block: 12 heads, FF 3072, seq 64, causal mask",
            (1, 64, 768),
            "pimsolve transformer benchmark (GPT-2 shapes); decoder layers as in DCC Sec. 5",
            transformer.gpt_block, (1, 64, 768), opset=20, input_name="hidden_states",
        ),
    )
}


def names() -> list[str]:
    """Return the names of the zoo models, in registry order.

    Returns
    -------
    list of str
        The keys of :data:`MODELS`.
    """
    return list(MODELS)


def build(name: str, *, weights: WeightMode = "shape", seed: int = 0) -> onnx.ModelProto:
    """Build one zoo model.

    Parameters
    ----------
    name : str
        A key of :data:`MODELS`.
    weights : {"shape", "random"}
        ``"shape"``: every parameter is a ``ConstantOfShape`` (value 0.01) of an
        int64 shape initializer, so the file is tiny but shapes are exact.
        ``"random"``: every parameter is a float32 initializer drawn from
        ``numpy.random.default_rng(seed)`` (He-normal-like scale).
    seed : int
        Seed for ``"random"`` weights; ignored in ``"shape"`` mode.

    Returns
    -------
    onnx.ModelProto
        The model; identical bytes for identical arguments.

    Raises
    ------
    KeyError
        If ``name`` is not a zoo model; the message lists the available names.
    ValueError
        If ``weights`` is not ``"random"`` or ``"shape"``.
    """
    spec = MODELS.get(name)
    if spec is None:
        raise KeyError(f"unknown zoo model {name!r}; available: {', '.join(MODELS)}")
    b = GraphBuilder(weights, seed)
    out = spec.builder(b, b.input(spec.input_name, spec.input_shape))
    return b.finish(spec.name, [(out, spec.output_shape)], opset=spec.opset, doc=spec.description)
