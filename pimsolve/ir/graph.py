"""The frontend's output: a DAG of layers with static shapes, ready for lowering.

A crossbar layer (``LayerKind.CONV`` or ``LayerKind.GEMM``) multiplies activations by a constant
weight matrix; its geometry is one ``MvmGeometry``, in which a GEMM is a 1x1 convolution over
``M`` "pixels" and a batched contraction is a grouped convolution (one weight matrix per group).
Everything else runs on the vector units (``VECTOR``) or only moves data (``DATA``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any

import networkx as nx

from pimsolve.ir.ids import LayerId, TensorName

__all__ = ["LayerKind", "Tensor", "MvmGeometry", "Layer", "Graph", "DTYPE_BYTES"]

DTYPE_BYTES = {"float32": 4, "float16": 2, "float64": 8, "int64": 8, "int32": 4, "int8": 1,
               "uint8": 1, "bool": 1, "bfloat16": 2}


class LayerKind(StrEnum):
    """What kind of hardware a layer needs."""

    CONV = "conv"
    """Convolution with constant weights: crossbars, via im2col (OCC Sec. IV)."""
    GEMM = "gemm"
    """Gemm, or MatMul / Einsum with one constant operand: crossbars, via TTGT (OCC Sec. IV)."""
    VECTOR = "vector"
    """Arithmetic on the vector units (activations, pooling, products of two activations...)."""
    DATA = "data"
    """Pure data movement or a view (Reshape, Concat, Transpose...): no arithmetic."""


VIEW_OPS = frozenset({"Flatten", "Reshape", "Dropout", "Identity", "Squeeze", "Unsqueeze"})
"""Data layers that move nothing: their output is their input's storage, seen anew."""


def pixel_elements(shape: tuple[int, ...]) -> int:
    """Elements of one stored pixel: activations are stored pixel-major, a pixel being the
    channels of an NCHW tensor and the last axis otherwise."""
    return shape[1] if len(shape) == 4 else shape[-1] if shape else 1


@dataclass(frozen=True)
class Tensor:
    """A named tensor with a static shape."""

    name: TensorName
    shape: tuple[int, ...]
    dtype: str = "float32"

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)


@dataclass(frozen=True)
class MvmGeometry:
    """The matrix-vector view of a crossbar layer, with convolution names.

    A convolution with ``groups`` groups multiplies ``output_hw`` windows, each an im2col vector
    of ``in_channels / groups * kernel[0] * kernel[1]`` elements per group, by one
    ``(in_channels / groups * kh * kw) x (out_channels / groups)`` matrix per group. A GEMM is the
    case ``kernel = (1, 1)``, ``input_hw = output_hw = (M, 1)``.
    """

    in_channels: int
    out_channels: int
    kernel: tuple[int, int] = (1, 1)
    strides: tuple[int, int] = (1, 1)
    dilations: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    """Top, left, bottom, right."""
    groups: int = 1
    input_hw: tuple[int, int] = (1, 1)
    output_hw: tuple[int, int] = (1, 1)
    batch: int = 1
    """Samples in one inference (the ONNX batch dimension)."""

    @property
    def windows(self) -> int:
        """Output pixels (sliding windows) of all samples: input vectors per inference."""
        return self.batch * self.output_hw[0] * self.output_hw[1]

    @property
    def weights(self) -> int:
        """Number of weight elements."""
        return self.out_channels * (self.in_channels // self.groups) * math.prod(self.kernel)


@dataclass(frozen=True)
class Layer:
    """One node of the Graph: an ONNX node, or a few fused into one (Conv+BatchNormalization)."""

    name: LayerId
    op: str
    """ONNX op type; fused ops are joined with '+', e.g. 'Conv+BatchNormalization'."""
    kind: LayerKind
    inputs: tuple[Tensor, ...]
    """Activation inputs, in ONNX order; constant operands are not listed."""
    outputs: tuple[Tensor, ...]
    weight_shape: tuple[int, ...] | None = None
    """Shape of the constant operand of a crossbar layer, as in the ONNX file."""
    mvm: MvmGeometry | None = None
    vector_ops: int = 0
    """Arithmetic operations per inference on the vector unit (a multiply-add counts 2)."""
    attributes: dict[str, Any] = field(default_factory=dict, compare=False)
    """ONNX attributes and lowering notes (e.g. the TTGT recipe), JSON-safe."""
    fused: tuple[str, ...] = ()
    """Names of the ONNX nodes folded into this layer besides its own."""
    activation: str | None = None
    """ONNX op of an activation fused into a crossbar layer (``'Relu'``): its vector unit
    applies it to each output pixel before the pixel leaves the core (PIMCOMP Sec. VII-A)."""

    @property
    def is_crossbar(self) -> bool:
        """True for layers whose weights sit in crossbars."""
        return self.kind in (LayerKind.CONV, LayerKind.GEMM)

    @property
    def weights(self) -> int:
        """Number of weight elements held in crossbars (0 for vector and data layers)."""
        return self.mvm.weights if self.mvm is not None else 0


@dataclass(frozen=True)
class Graph:
    """A model as a DAG of layers in topological order, with static shapes."""

    name: str
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    layers: tuple[Layer, ...]

    def layer(self, name: str) -> Layer:
        """The layer called ``name``."""
        return self._by_name[name]

    @cached_property
    def _by_name(self) -> dict[str, Layer]:
        return {layer.name: layer for layer in self.layers}

    @property
    def crossbar_layers(self) -> tuple[Layer, ...]:
        """The layers whose weights sit in crossbars, in topological order."""
        return tuple(layer for layer in self.layers if layer.is_crossbar)

    @property
    def weights(self) -> int:
        """Total crossbar weight elements."""
        return sum(layer.weights for layer in self.layers)

    @cached_property
    def dag(self) -> nx.DiGraph:
        """Layers as nodes; an edge producer -> consumer per tensor (``tensor``, ``elements``,
        ``bytes`` as stored in the ONNX dtype)."""
        dag = nx.DiGraph()
        producer: dict[str, str] = {}
        for layer in self.layers:
            dag.add_node(layer.name, layer=layer)
            for t in layer.outputs:
                producer[t.name] = layer.name
        for layer in self.layers:
            for t in layer.inputs:
                if t.name in producer:
                    dag.add_edge(producer[t.name], layer.name, tensor=t.name,
                                 elements=t.size, bytes=t.size * DTYPE_BYTES.get(t.dtype, 4))
        return dag
