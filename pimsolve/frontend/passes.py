"""Graph-level rewrites on the layer list: fold BatchNormalization, fuse activations into
crossbar layers, fuse Erf-based GELU."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import replace

from pimsolve.ir import Layer, LayerKind

__all__ = ["fold_batchnorm", "fuse_activation", "fuse_erf_gelu", "FUSED_ACTIVATIONS"]

FUSED_ACTIVATIONS = frozenset({"Relu"})
"""Activations a crossbar layer's vector unit applies to its output pixels."""


def _consumers(layers: list[Layer]) -> dict[str, list[Layer]]:
    readers: dict[str, list[Layer]] = defaultdict(list)
    for layer in layers:
        for t in layer.inputs:
            readers[t.name].append(layer)
    return readers


def fold_batchnorm(layers: list[Layer], graph_outputs: set[str]) -> list[Layer]:
    """Fold each BatchNormalization into the crossbar layer before it.

    Folding is exact (the affine map merges into the weights and bias) when the crossbar
    layer's output feeds only the BatchNormalization and is not a graph output.
    """
    readers = _consumers(layers)
    producer = {t.name: layer for layer in layers for t in layer.outputs}
    folded: dict[str, Layer] = {}
    dropped: set[str] = set()
    for layer in layers:
        if layer.op != "BatchNormalization" or not layer.inputs:
            continue
        source = producer.get(layer.inputs[0].name)
        if (source is None or not source.is_crossbar or source.name in folded
                or len(readers[layer.inputs[0].name]) != 1
                or layer.inputs[0].name in graph_outputs):
            continue
        folded[source.name] = replace(source, op=f"{source.op}+BatchNormalization",
                                      outputs=layer.outputs, fused=(*source.fused, layer.name))
        dropped.add(layer.name)
    return [folded.get(layer.name, layer) for layer in layers if layer.name not in dropped]


def fuse_activation(layers: list[Layer], graph_outputs: set[str]) -> list[Layer]:
    """Fuse each Relu into the crossbar layer before it, as PIMCOMP's frontend does: the
    home core applies it to an output pixel right after the bias add, so the pixel is not
    stored, reloaded and stored again (HT) or routed through another core (LL).

    Applies when the crossbar layer's output feeds only the activation and is not a graph
    output, and the crossbar layer has no activation yet.
    """
    readers = _consumers(layers)
    producer = {t.name: layer for layer in layers for t in layer.outputs}
    fused: dict[str, Layer] = {}
    dropped: set[str] = set()
    for layer in layers:
        if layer.op not in FUSED_ACTIVATIONS or len(layer.inputs) != 1:
            continue
        source = producer.get(layer.inputs[0].name)
        if (source is None or not source.is_crossbar or source.name in fused
                or source.activation is not None
                or len(readers[layer.inputs[0].name]) != 1
                or layer.inputs[0].name in graph_outputs
                or layer.outputs[0].shape != layer.inputs[0].shape):
            continue
        fused[source.name] = replace(source, op=f"{source.op}+{layer.op}", outputs=layer.outputs,
                                     vector_ops=source.vector_ops + layer.vector_ops,
                                     fused=(*source.fused, layer.name), activation=layer.op)
        dropped.add(layer.name)
    return [fused.get(layer.name, layer) for layer in layers if layer.name not in dropped]


def _scalar_is(layer: Layer, value: float) -> bool:
    """Whether ``layer`` has one activation input and one scalar constant equal to ``value``."""
    scalars = layer.attributes.get("scalar_operands", [])
    return len(layer.inputs) == 1 and len(scalars) == 1 and math.isclose(
        scalars[0], value, rel_tol=1e-3)


def fuse_erf_gelu(layers: list[Layer], graph_outputs: set[str]) -> list[Layer]:
    """Fuse x * 0.5 * (1 + erf(x / sqrt 2)), as exported by PyTorch, into one Gelu layer.

    Matches Div -> Erf -> Add -> Mul (by x) -> Mul (by 0.5), each intermediate read once.
    """
    readers = _consumers(layers)
    producer = {t.name: layer for layer in layers for t in layer.outputs}

    def only_reader(layer: Layer, op: str) -> Layer | None:
        name = layer.outputs[0].name
        nxt = readers.get(name, [])
        if len(nxt) == 1 and nxt[0].op == op and name not in graph_outputs:
            return nxt[0]
        return None

    replaced: dict[str, Layer] = {}
    dropped: set[str] = set()
    for erf in layers:
        if erf.op != "Erf" or not erf.inputs:
            continue
        div = producer.get(erf.inputs[0].name)
        if div is None or div.op != "Div" or len(readers[div.outputs[0].name]) != 1:
            continue
        add = only_reader(erf, "Add")
        mul = only_reader(add, "Mul") if add else None
        half = only_reader(mul, "Mul") if mul else None
        x = div.inputs[0]
        if half is None or x.name not in {t.name for t in mul.inputs} or len(mul.inputs) != 2:
            continue
        if not (_scalar_is(div, math.sqrt(2)) and _scalar_is(add, 1.0) and _scalar_is(half, 0.5)):
            continue
        chain = (div, erf, add, mul, half)
        gelu = Layer(div.name, "Gelu", LayerKind.VECTOR, (x,), half.outputs,
                     vector_ops=8 * math.prod(x.shape),
                     attributes={"pattern": "x * 0.5 * (1 + erf(x / sqrt(2)))"},
                     fused=tuple(layer.name for layer in chain[1:]))
        replaced[div.name] = gelu
        dropped.update(layer.name for layer in chain[1:])
    return [replaced.get(layer.name, layer) for layer in layers if layer.name not in dropped]
