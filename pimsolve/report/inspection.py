"""The ``inspect`` report as plain data: one row per layer, and totals (schema_version 1)."""

from __future__ import annotations

from typing import Any

from pimsolve.ir import Graph, Workload
from pimsolve.target import CrossbarTarget, DramPimTarget

__all__ = ["INSPECT_SCHEMA_VERSION", "inspection_report", "target_summary"]

INSPECT_SCHEMA_VERSION = 1


def inspection_report(graph: Graph, workload: Workload | None,
                      target_summary: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON document of ``pimsolve inspect --json``.

    ``layers[*]`` carry the op, shapes and, for crossbar layers, the default unfolding
    (``H x W x P``), windows, array groups and crossbars per replica; with a target, every
    valid unfolding too. ``totals`` compare the crossbars one replica of every layer needs with
    what the target has.
    """
    mvm = {m.layer: m for m in workload.mvm_layers} if workload else {}
    rows = []
    for layer in graph.layers:
        row: dict[str, Any] = {
            "name": layer.name, "op": layer.op, "kind": layer.kind.value,
            "input_shapes": [list(t.shape) for t in layer.inputs],
            "output_shapes": [list(t.shape) for t in layer.outputs],
            "weight_shape": list(layer.weight_shape) if layer.weight_shape else None,
            "weights": layer.weights, "vector_ops": layer.vector_ops,
        }
        if layer.mvm is not None:
            row["windows"] = layer.mvm.windows
            row["groups"] = layer.mvm.groups
        if layer.name in mvm:
            m = mvm[layer.name]
            u = m.unfolding
            row.update({
                "unfolding": u.name, "matrix": [u.height, u.width, u.parallel],
                "array_groups": u.array_groups, "crossbars_per_ag": u.crossbars_per_ag,
                "crossbars": u.crossbars, "partition_units": len(m.partition_units),
                "unfoldings": [
                    {"name": x.name, "matrix": [x.height, x.width, x.parallel],
                     "array_groups": x.array_groups, "crossbars": x.crossbars,
                     "cycles": x.cycles, "load_elements": x.load_elements,
                     "extra_memory_elements": x.extra_memory_elements}
                    for x in m.unfoldings],
            })
        rows.append(row)
    totals: dict[str, Any] = {
        "layers": len(graph.layers), "crossbar_layers": len(graph.crossbar_layers),
        "weights": graph.weights,
        "vector_ops": sum(layer.vector_ops for layer in graph.layers),
    }
    if workload is not None:
        totals.update({
            "weight_bytes": graph.weights * workload.geometry.weight_bits // 8,
            "crossbars_needed": workload.crossbars_needed,
            "crossbars_available": workload.crossbars_available,
            "fits": workload.fits,
            "verdict": "fits on chip" if workload.fits else
            "needs partitioning (weights exceed the crossbars: reload between partitions)",
        })
    return {"schema_version": INSPECT_SCHEMA_VERSION, "model": graph.name,
            "target": target_summary, "inputs": [
                {"name": t.name, "shape": list(t.shape)} for t in graph.inputs],
            "layers": rows, "totals": totals}


def target_summary(target: CrossbarTarget | DramPimTarget) -> dict[str, Any]:
    """Name, kind, computing mode (or PIM unit), capacity in words, and description."""
    if isinstance(target, CrossbarTarget):
        weight_mib = target.weight_capacity * target.numerics.weight_bits / 8 / 2**20
        capacity = (f"{target.crossbars:,} crossbars, {weight_mib:.3g} MiB of "
                    f"{target.numerics.weight_bits}-bit weights")
        mode = target.computing_mode
    else:
        org = target.organization
        capacity = f"{org.banks:,} banks, {org.banks // target.pim.banks_per_pim_core:,} PIM cores"
        mode = target.pim.unit
    return {"name": target.name, "kind": target.kind, "mode": mode, "capacity": capacity,
            "description": target.description}
