"""COMPASS partition units (Sec. III-B): the smallest slices of a layer that fit one core."""

from __future__ import annotations

import math

from pimsolve.ir import PartitionUnit, Unfolding

__all__ = ["partition_units"]


def partition_units(unfolding: Unfolding, crossbars_per_core: int) -> tuple[PartitionUnit, ...]:
    """Cut a layer's array-group grid into units of at most ``crossbars_per_core`` crossbars.

    The grid has ``array_groups`` rows (row blocks) and ``crossbars_per_ag`` crossbar columns.
    Units take whole columns (all row blocks: no partial sums cross units) as many as fit;
    a column taller than a core is cut into row chunks of ``crossbars_per_core``.
    """
    rows, cols = unfolding.array_groups, unfolding.crossbars_per_ag
    if rows <= crossbars_per_core:
        width = crossbars_per_core // rows
        return tuple(PartitionUnit(0, rows, c, min(c + width, cols))
                     for c in range(0, cols, width))
    chunks = math.ceil(rows / crossbars_per_core)
    return tuple(PartitionUnit(r * crossbars_per_core, min((r + 1) * crossbars_per_core, rows),
                               c, c + 1)
                 for c in range(cols) for r in range(chunks))
