"""What each layer computes, task by task: PIMCOMP's convolution-operator granularity.

A task produces one output pixel. For a crossbar layer it is one window (sliding-window
computation): its im2col vector, per weight matrix, is a list of *pieces* ``(pixel, first
channel, length)`` of stored input pixels in row order (kernel row, kernel column, channel), with
``pixel = -1`` for zero padding. Vector-unit layers read whole pixels of their inputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pimsolve.codegen.layout import Layout
from pimsolve.errors import InputError
from pimsolve.ir import Layer, LayerKind
from pimsolve.ir.program import VecOp

__all__ = ["LayerTasks", "layer_tasks", "Piece", "slice_pieces", "weight_matrices"]

Piece = tuple[int, int, int]
"""(pixel of the input tensor or -1 for padding, first channel, length)."""

VEC_OPS = {"Relu": VecOp.RELU, "Add": VecOp.ADD, "Sub": VecOp.SUB, "Mul": VecOp.MUL,
           "Max": VecOp.MAX, "Min": VecOp.MIN, "Sum": VecOp.ADD}


@dataclass(frozen=True, eq=False)
class LayerTasks:
    """One compute layer seen task by task."""

    layer: Layer
    kind: str
    """'mvm', 'unary', 'binary', 'pool', 'gpool' or 'concat'."""
    inputs: tuple[str, ...]
    """Stored input tensors."""
    output: str
    tasks: int
    """Output pixels."""
    channels: int
    """Elements of one output pixel."""
    vec: VecOp = VecOp.OTHER
    repeat: int = 1
    """Element operations per output element for 'unary' layers timed as OTHER."""
    activation: VecOp | None = None
    """A crossbar layer's fused activation, applied to each output pixel after the bias."""

    def sources(self, layout: Layout, task: int) -> list[tuple[str, int]]:
        """The stored input pixels task ``task`` reads, without repeats, in reading order."""
        if self.kind == "mvm":
            tensor = self.inputs[0]
            seen = dict.fromkeys(p for pieces in self.pieces(layout, task)
                                 for p, _, _ in pieces if p >= 0)
            return [(tensor, p) for p in seen]
        if self.kind in ("unary", "binary", "concat"):
            return [(t, task) for t in self.inputs]
        return [(self.inputs[0], p) for p in self.pool_pixels(layout, task)]

    def pieces(self, layout: Layout, task: int) -> list[list[Piece]]:
        """Per weight matrix, the im2col vector of window ``task`` as pieces."""
        m = self.layer.mvm
        src = layout.tensors[self.inputs[0]]
        cg = m.in_channels // m.groups
        if self.layer.kind is LayerKind.GEMM:
            # window ``task`` is elements [task * K, (task + 1) * K) of the storage
            k, c = m.in_channels, src.channels
            first, last = task * k, (task + 1) * k
            pieces = []
            q = first // c
            while q * c < last:
                lo, hi = max(first, q * c), min(last, (q + 1) * c)
                pieces.append((q, lo - q * c, hi - lo))
                q += 1
            return [pieces]
        ho, wo = m.output_hw
        hi_, wi = m.input_hw
        n, rest = divmod(task, ho * wo)
        oy, ox = divmod(rest, wo)
        sh, sw = m.strides
        dh, dw = m.dilations
        top, left = m.pads[0], m.pads[1]
        spots = []
        for i in range(m.kernel[0]):
            y = oy * sh - top + i * dh
            for j in range(m.kernel[1]):
                x = ox * sw - left + j * dw
                spots.append(n * hi_ * wi + y * wi + x if 0 <= y < hi_ and 0 <= x < wi else -1)
        return [[(p, g * cg, cg) for p in spots] for g in range(m.groups)]

    def pool_pixels(self, layout: Layout, task: int) -> list[int]:
        """Input pixels of pooling window ``task`` (padding excluded)."""
        src = layout.tensors[self.inputs[0]]
        if self.kind == "gpool":
            hw = src.height * src.width
            return list(range(task * hw, (task + 1) * hw))
        a = self.layer.attributes
        out = layout.tensors[self.output]
        (kh, kw), (sh, sw) = a["kernel_shape"], a["strides"]
        dh, dw = a.get("dilations", [1, 1])
        top, left = a["pads"][0], a["pads"][1]
        n, rest = divmod(task, out.height * out.width)
        oy, ox = divmod(rest, out.width)
        pixels = []
        for i in range(kh):
            y = oy * sh - top + i * dh
            for j in range(kw):
                x = ox * sw - left + j * dw
                if 0 <= y < src.height and 0 <= x < src.width:
                    pixels.append(n * src.height * src.width + y * src.width + x)
        return pixels

    def pool_divisor(self) -> int:
        """AveragePool with count_include_pad: the full kernel size."""
        kh, kw = self.layer.attributes["kernel_shape"]
        return kh * kw


def slice_pieces(pieces: list[Piece], start: int, stop: int) -> list[Piece]:
    """The pieces covering rows ``[start, stop)`` of an im2col vector."""
    out = []
    row = 0
    for pixel, ch, length in pieces:
        lo, hi = max(start, row), min(stop, row + length)
        if lo < hi:
            out.append((pixel, ch + lo - row, hi - lo))
        row += length
        if row >= stop:
            break
    return out


def layer_tasks(layer: Layer, layout: Layout) -> LayerTasks:
    """The tasks of compute layer ``layer``; InputError for what codegen cannot emit yet."""
    inputs = tuple(layout.base[t.name] for t in layer.inputs)
    output = layout.base[layer.outputs[0].name]
    out = layout.tensors[output]
    if layer.is_crossbar:
        m = layer.mvm
        src = layout.tensors[inputs[0]]
        if layer.kind is LayerKind.GEMM and m.groups != 1:
            raise InputError(f"layer {layer.name}: codegen does not emit batched contractions "
                             "(grouped GEMM) yet")
        if layer.kind is LayerKind.CONV and (src.height, src.width) != tuple(m.input_hw):
            raise InputError(f"layer {layer.name}: convolution input is a view with another "
                             "pixel layout")
        return LayerTasks(layer, "mvm", inputs[:1], output, out.pixels, out.channels,
                          activation=VEC_OPS[layer.activation] if layer.activation else None)
    op = layer.op
    if op in ("MaxPool", "AveragePool"):
        vec = VecOp.MAX if op == "MaxPool" else VecOp.ADD
        return LayerTasks(layer, "pool", inputs, output, out.pixels, out.channels, vec)
    if op in ("GlobalAveragePool", "GlobalMaxPool"):
        vec = VecOp.MAX if op == "GlobalMaxPool" else VecOp.ADD
        return LayerTasks(layer, "gpool", inputs, output, out.pixels, out.channels, vec)
    if op == "Concat":
        axis = layer.attributes.get("axis", 1) % len(layer.outputs[0].shape)
        if axis != (1 if len(layer.outputs[0].shape) == 4 else len(layer.outputs[0].shape) - 1):
            raise InputError(f"layer {layer.name}: codegen concatenates along channels only "
                             f"(axis {axis})")
        return LayerTasks(layer, "concat", inputs, output, out.pixels, out.channels)
    if layer.kind is LayerKind.DATA:
        raise InputError(f"layer {layer.name}: codegen does not emit {op} data movement yet")
    same = [layout.tensors[i] for i in inputs]
    if len(inputs) == 2 and all(t.pixels == out.pixels and t.channels == out.channels
                                for t in same):
        return LayerTasks(layer, "binary", inputs, output, out.pixels, out.channels,
                          VEC_OPS.get(op, VecOp.OTHER))
    if len(inputs) == 1 and same[0].pixels == out.pixels and same[0].channels == out.channels:
        vec = VEC_OPS.get(op, VecOp.OTHER)
        if vec not in (VecOp.RELU, VecOp.OTHER):
            vec = VecOp.OTHER  # an op with a constant operand: timed, not modelled
        repeat = max(1, -(-layer.vector_ops // max(1, out.elements)))
        return LayerTasks(layer, "unary", inputs, output, out.pixels, out.channels, vec,
                          1 if vec is VecOp.RELU else repeat)
    raise InputError(f"layer {layer.name}: codegen cannot emit {op} with input shapes "
                     f"{[list(t.shape) for t in same]} and output {list(out.shape)} yet")


def weight_matrices(lt: LayerTasks, layout: Layout, weight: np.ndarray) -> list[np.ndarray]:
    """The P matrices (H x W) of a crossbar layer, rows in this module's im2col order.

    Conv weights (O, I/g, kh, kw) become rows ordered (kernel row, kernel column, channel); a
    GEMM whose input is a flattened NCHW tensor gets its rows permuted from ONNX's (C, H, W)
    order to the (H, W, C) order the pixels are stored in.
    """
    m = lt.layer.mvm
    if lt.layer.kind is LayerKind.CONV:
        o = weight.shape[0]
        og = o // m.groups
        return [weight[g * og:(g + 1) * og].transpose(2, 3, 1, 0).reshape(-1, og)
                for g in range(m.groups)]
    src = layout.tensors[lt.inputs[0]]
    viewed = lt.layer.inputs[0].shape
    k = weight.shape[0]
    if len(src.shape) == 4 and src.height * src.width > 1 and tuple(viewed) != src.shape:
        c, h, w = src.channels, src.height, src.width
        if k != c * h * w:
            raise InputError(f"layer {lt.layer.name}: cannot reorder the weights of a GEMM "
                             f"over a reshaped {list(src.shape)} tensor")
        order = np.arange(k).reshape(c, h, w).transpose(1, 2, 0).reshape(-1)
        return [weight[order]]
    return [weight]
