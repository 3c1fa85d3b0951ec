"""What the crossbars and global memory hold before a program runs (PIMCOMP's backend)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from pimsolve.codegen.layout import VIEW_OPS, build_layout
from pimsolve.codegen.tasks import layer_tasks, weight_matrices
from pimsolve.ir import Graph, LayerKind
from pimsolve.ir.program import Program

__all__ = ["crossbar_blocks", "global_image", "to_stored", "from_stored"]


def crossbar_blocks(graph: Graph, program: Program,
                    weights: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
    """Per AG slot of ``program``: its rows x cols block of its layer's unfolded matrix."""
    compute = [layer for layer in graph.layers
               if not (layer.kind is LayerKind.DATA and layer.op in VIEW_OPS)]
    layout = build_layout(graph, compute, program.mode == "ht")
    matrices = {}
    for layer in graph.crossbar_layers:
        lt = layer_tasks(layer, layout)
        matrices[layer.name] = weight_matrices(lt, layout, weights[layer.name][0])
    return [matrices[g.layer][g.matrix][g.row_start:g.row_start + g.rows, :g.cols]
            for g in program.array_groups]


def to_stored(array: np.ndarray) -> np.ndarray:
    """An NCHW (or N x F) activation as the flat pixel-major storage of ``layout``."""
    if array.ndim == 4:
        return array.transpose(0, 2, 3, 1).reshape(-1)
    return array.reshape(-1)


def from_stored(flat: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Inverse of ``to_stored`` for a tensor of ONNX ``shape``."""
    if len(shape) == 4:
        n, c, h, w = shape
        return flat.reshape(n, h, w, c).transpose(0, 3, 1, 2)
    return flat.reshape(shape)


def global_image(program: Program, inputs: Mapping[str, np.ndarray],
                 weights: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Global memory at start: graph inputs (stored pixel-major) and every layer's bias."""
    memory = np.zeros(program.global_elements)
    for name, (address, size) in program.tensors.items():
        if name.startswith("bias:"):
            memory[address:address + size] = weights[name[5:]][1]
        elif name in inputs:
            memory[address:address + size] = to_stored(np.asarray(inputs[name]))
    return memory
