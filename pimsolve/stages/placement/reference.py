"""The reference mapping: no replication, array groups placed greedily core after core.

It is what PUMA / SongC-like compilers do without replication (PIMCOMP Sec. VIII baselines), and
what ``pimsolve map --engine none`` scores: every crossbar layer gets one replica, and its array
groups fill the cores in topological order, next-fit. In core mode (CIM-MLC CM) a whole replica
must sit on one core, so a replica starts on a fresh core when it does not fit the current one.
"""

from __future__ import annotations

from pimsolve.errors import InfeasibleError
from pimsolve.ir import Workload
from pimsolve.ir.mapping import LayerPlacement, Mapping, Partition
from pimsolve.target import CrossbarTarget

__all__ = ["reference_mapping"]


def reference_mapping(workload: Workload, target: CrossbarTarget, mode: str) -> Mapping:
    """One replica per layer, default unfolding, next-fit placement of array groups."""
    per_core, cores = target.core.crossbars, target.cores
    if not workload.fits:
        raise InfeasibleError(
            f"{workload.model} needs {workload.crossbars_needed} crossbars, {target.name} has "
            f"{workload.crossbars_available}: the model must be partitioned (not built yet)")
    core, used = 0, 0
    layers = []
    for m in workload.mvm_layers:
        u = m.unfolding
        if u.crossbars_per_ag > per_core:
            raise InfeasibleError(f"layer {m.layer}: one array group needs {u.crossbars_per_ag} "
                                  f"crossbars, a core of {target.name} has {per_core}")
        if target.computing_mode == "CM":
            if u.crossbars > per_core:
                raise InfeasibleError(f"layer {m.layer}: core mode puts a whole layer on one "
                                      f"core; it needs {u.crossbars} crossbars, a core has "
                                      f"{per_core}")
            if used + u.crossbars > per_core:
                core, used = core + 1, 0
        placed = []
        for _ in range(u.array_groups):
            if used + u.crossbars_per_ag > per_core:
                core, used = core + 1, 0
            if core >= cores:
                raise InfeasibleError(f"{workload.model}: array groups do not pack onto the "
                                      f"{cores} cores of {target.name} (ran out at layer "
                                      f"{m.layer})")
            placed.append(core)
            used += u.crossbars_per_ag
        layers.append(LayerPlacement(m.layer, u.name, 1, (tuple(placed),)))
    return Mapping(workload.model, target.name, mode, "none",
                   (Partition(tuple(workload.order)),), tuple(layers))
