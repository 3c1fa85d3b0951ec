"""``ir.Graph`` + crossbar target -> ``ir.Workload``."""

from __future__ import annotations

import math

from pimsolve.errors import InputError
from pimsolve.ir import (
    CrossbarGeometry,
    Dependency,
    Graph,
    Layer,
    LayerId,
    MvmLayer,
    VectorLayer,
    Workload,
)
from pimsolve.lowering.unfold import DEFAULT_FORMAT, unfoldings
from pimsolve.lowering.units import partition_units
from pimsolve.target import CrossbarTarget

__all__ = ["lower", "crossbar_geometry"]


def crossbar_geometry(target: CrossbarTarget) -> CrossbarGeometry:
    """The facts of ``target`` that lowering needs."""
    return CrossbarGeometry(
        rows=target.crossbar.rows, cols=target.crossbar.cols,
        cell_bits=target.crossbar.cell_bits, weight_bits=target.numerics.weight_bits,
        activation_bits=target.numerics.activation_bits, column_slices=target.column_slices,
        crossbars_per_core=target.core.crossbars, cores=target.cores)


def lower(graph: Graph, target: CrossbarTarget) -> Workload:
    """Lower every layer of ``graph`` onto ``target``'s crossbars and vector units.

    Raises
    ------
    InputError
        If ``target`` is not a crossbar target, or stores fewer than one weight per row.
    """
    if not isinstance(target, CrossbarTarget):
        raise InputError(f"target '{target.name}' is a {target.kind} target; lowering to array "
                         f"groups needs a crossbar target")
    xbar = crossbar_geometry(target)
    if xbar.weights_per_crossbar_row == 0:
        raise InputError(f"target '{target.name}': a {xbar.cols}-column crossbar cannot hold one "
                         f"{xbar.weight_bits}-bit weight ({xbar.column_slices} columns)")
    act_bytes = xbar.activation_bits / 8
    mvm_layers, vector_layers = [], []
    for layer in graph.layers:
        if layer.is_crossbar:
            mvm_layers.append(_lower_mvm(layer, xbar, act_bytes))
        else:
            vector_layers.append(VectorLayer(
                layer=layer.name, op=layer.op, kind=layer.kind.value, ops=layer.vector_ops,
                input_bytes=sum(_bytes(t.size, act_bytes) for t in layer.inputs),
                output_bytes=sum(_bytes(t.size, act_bytes) for t in layer.outputs)))
    dependencies = tuple(
        Dependency(producer=LayerId(u), consumer=LayerId(v), tensor=data["tensor"],
                   bytes=_bytes(data["elements"], act_bytes))
        for u, v, data in graph.dag.edges(data=True))
    return Workload(model=graph.name, target=target.name, geometry=xbar,
                    mvm_layers=tuple(mvm_layers), vector_layers=tuple(vector_layers),
                    dependencies=dependencies, order=tuple(layer.name for layer in graph.layers))


def _bytes(elements: int, bytes_per_element: float) -> int:
    return math.ceil(elements * bytes_per_element)


def _lower_mvm(layer: Layer, xbar: CrossbarGeometry, act_bytes: float) -> MvmLayer:
    mvm = layer.mvm
    options = unfoldings(mvm, xbar)
    default = next(i for i, u in enumerate(options) if u.name == DEFAULT_FORMAT)
    return MvmLayer(
        layer=layer.name, op=layer.op, weights=mvm.weights, windows=mvm.windows,
        input_bytes_per_window=_bytes(mvm.in_channels * math.prod(mvm.kernel), act_bytes),
        output_bytes_per_window=_bytes(mvm.out_channels, act_bytes),
        unfoldings=options, default_unfolding=default,
        partition_units=partition_units(options[default], xbar.crossbars_per_core))
