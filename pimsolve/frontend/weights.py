"""The numbers of a model: weight and bias of every crossbar layer, as ``y = x @ W + b``.

Only the functional executor needs them (timing never does). Convolutions keep the ONNX layout
(O, I/g, kh, kw); GEMMs are returned as a (K, N) matrix. A folded BatchNormalization is merged
into its convolution exactly. Where the file holds no values (shape-only weights made with
ConstantOfShape), seeded random values stand in, so the executor still checks the data flow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from pimsolve.errors import InputError
from pimsolve.frontend.fold import fold
from pimsolve.frontend.load import _with_static_inputs, read_model
from pimsolve.ir import Graph

__all__ = ["LayerWeights", "layer_weights"]


@dataclass(frozen=True, eq=False)
class LayerWeights:
    """Weight (conv: O x I/g x kh x kw; gemm: K x N) and bias (length O or N)."""

    weight: np.ndarray
    bias: np.ndarray


def _attr(node: onnx.NodeProto, name: str, default):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def layer_weights(source: str | Path | onnx.ModelProto, graph: Graph, *,
                  input_shapes: Mapping[str, tuple[int, ...]] | None = None,
                  seed: int = 0) -> dict[str, LayerWeights]:
    """Weights of every crossbar layer of ``graph`` (loaded from the same ``source``)."""
    model = _with_static_inputs(read_model(source), dict(input_shapes or {}))
    folded = fold(model)
    by_label: dict[str, onnx.NodeProto] = {}
    seen: dict[str, int] = {}
    for index, node in enumerate(folded.nodes):
        label = node.name or (node.output[0] if node.output else f"{node.op_type}_{index}")
        count = seen.get(label, 0)
        seen[label] = count + 1
        by_label[label if count == 0 else f"{label}#{count}"] = node
    rng = np.random.default_rng(seed)
    constants = folded.constants

    def value(name: str, shape: tuple[int, ...]) -> np.ndarray:
        array = constants.get(name)
        if array is None:
            raise InputError(f"tensor {name}: a weight without a constant value")
        array = np.asarray(array, dtype=np.float64)
        if array.size > 1 and array.strides and 0 in array.strides:  # a shape-only weight
            return rng.standard_normal(shape) / np.sqrt(max(1, np.prod(shape[1:])))
        return np.broadcast_to(array, shape).astype(np.float64)

    result = {}
    for layer in graph.crossbar_layers:
        node = by_label[layer.name]
        op = node.op_type
        if op == "Conv":
            w = value(node.input[1], tuple(layer.weight_shape))
            o = w.shape[0]
            b = value(node.input[2], (o,)) if len(node.input) > 2 and node.input[2] else \
                np.zeros(o)
            for fused in layer.fused:
                bn = by_label[fused]
                if bn.op_type != "BatchNormalization":
                    continue
                scale, shift, mean, var = (value(bn.input[k], (o,)) for k in range(1, 5))
                factor = scale / np.sqrt(var + _attr(bn, "epsilon", 1e-5))
                w = w * factor[:, None, None, None]
                b = (b - mean) * factor + shift
            result[layer.name] = LayerWeights(w, b)
        elif op == "Gemm":
            if _attr(node, "transA", 0):
                raise InputError(f"layer {layer.name}: Gemm with transA is not executed")
            w = value(node.input[1], tuple(layer.weight_shape))
            w = w.T if _attr(node, "transB", 0) else w
            n = w.shape[1]
            c = value(node.input[2], (n,)) if len(node.input) > 2 and node.input[2] else \
                np.zeros(n)
            result[layer.name] = LayerWeights(w * _attr(node, "alpha", 1.0),
                                              c * _attr(node, "beta", 1.0))
        elif op == "MatMul" and len(layer.weight_shape) == 2:
            w = value(node.input[1], tuple(layer.weight_shape))
            result[layer.name] = LayerWeights(w, np.zeros(w.shape[1]))
        else:
            raise InputError(f"layer {layer.name}: the functional executor does not take "
                             f"weights of {op} yet")
    return result
