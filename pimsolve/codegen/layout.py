"""How activations are laid out: pixels, views and the global-memory address map.

Every activation tensor is stored pixel-major (NHWC): a *pixel* is the channel vector at one
(sample, row, column), and PIMCOMP's pixel is also the unit of transmission and local-memory
allocation in the low-latency mode (Sec. VII-B). A 2-D tensor (N, F) has one pixel of F elements
per sample; a 3-D tensor (N, S, F) has S pixels of F. Views (Flatten, Reshape, Dropout, Identity,
Squeeze, Unsqueeze) move no data: their output is the same storage as their input, so a layer
reading a view reads the pixels of the tensor underneath (its *base*).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pimsolve.errors import InputError
from pimsolve.ir import VIEW_OPS, Graph, Layer, LayerKind, pixel_elements

__all__ = ["TensorLayout", "Layout", "build_layout", "VIEW_OPS"]


@dataclass(frozen=True)
class TensorLayout:
    """One stored tensor: ``samples * pixels`` pixels of ``channels`` elements."""

    name: str
    shape: tuple[int, ...]
    samples: int
    height: int
    width: int
    channels: int

    @property
    def pixels(self) -> int:
        """Pixels over all samples."""
        return self.samples * self.height * self.width

    @property
    def elements(self) -> int:
        """Elements in the tensor."""
        return self.pixels * self.channels


def _tensor_layout(name: str, shape: tuple[int, ...]) -> TensorLayout:
    if not 1 <= len(shape) <= 4:
        raise InputError(f"tensor {name}: codegen supports tensors of rank 1 to 4, not "
                         f"shape {list(shape)}")
    n, h, w = {4: (shape[0], *shape[2:]), 3: (shape[0], shape[1], 1),
               2: (shape[0], 1, 1), 1: (1, 1, 1)}[len(shape)]
    return TensorLayout(name, shape, n, h, w, pixel_elements(shape))


@dataclass(frozen=True)
class Layout:
    """Base tensors, views onto them, and where each tensor lives in global memory."""

    tensors: dict[str, TensorLayout]
    """Stored (base) tensors by name."""
    base: dict[str, str]
    """Every tensor name -> the stored tensor it is (itself, or what a view shows)."""
    producer: dict[str, str]
    """Stored tensor -> the layer that writes it (graph inputs are absent)."""
    global_address: dict[str, int]
    """Stored tensor (or 'bias:<layer>') -> first global-memory element."""
    global_elements: int
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    """Graph outputs, as stored tensor names."""

    def stored(self, name: str) -> TensorLayout:
        """The stored tensor behind ``name``."""
        return self.tensors[self.base[name]]

    def pixel_address(self, name: str, pixel: int) -> int:
        """Global address of pixel ``pixel`` of stored tensor ``name``."""
        return self.global_address[name] + pixel * self.tensors[name].channels


def build_layout(graph: Graph, compute_layers: list[Layer], all_in_global: bool) -> Layout:
    """Resolve views and assign global addresses: graph inputs and outputs and the biases of
    crossbar layers always; every other stored tensor too when ``all_in_global`` (HT mode)."""
    tensors: dict[str, TensorLayout] = {}
    base: dict[str, str] = {}
    producer: dict[str, str] = {}
    for t in graph.inputs:
        tensors[t.name] = _tensor_layout(t.name, t.shape)
        base[t.name] = t.name
    for layer in graph.layers:
        if layer.kind is LayerKind.DATA and layer.op in VIEW_OPS:
            source = base[layer.inputs[0].name]
            for out in layer.outputs:
                if math.prod(out.shape) != tensors[source].elements:
                    raise InputError(f"layer {layer.name}: view changes the element count")
                base[out.name] = source
            continue
        for out in layer.outputs:
            tensors[out.name] = _tensor_layout(out.name, out.shape)
            base[out.name] = out.name
            producer[out.name] = layer.name
    address: dict[str, int] = {}
    top = 0
    outputs = tuple(base[t.name] for t in graph.outputs)
    wanted = [base[t.name] for t in graph.inputs] + list(outputs)
    if all_in_global:
        wanted += list(tensors)
    for name in wanted:
        if name not in address:
            address[name] = top
            top += tensors[name].elements
    for layer in compute_layers:
        if layer.is_crossbar:
            address[f"bias:{layer.name}"] = top
            top += layer.mvm.out_channels
    return Layout(tensors, base, producer, address, top,
                  tuple(base[t.name] for t in graph.inputs), outputs)
