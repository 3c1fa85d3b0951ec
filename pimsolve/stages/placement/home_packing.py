"""Whether an option set's homes can share the cores at all: the configuration LP of their
packing, and the cut it proves for the master.

Every placement puts each replica's home on one core, with the home's buffers
(``replica_bytes``, whatever else the core holds) and the AGs it keeps at least
(``PlacementInstance.home_least`` of them, X_u crossbars each: one; all A_u in core mode;
more with sync links in HT). So the homes of an option set z are items of a
two-dimensional bin packing into K cores of M bytes and C crossbars, and any weights pi on
the home types t = (layer, unfolding) with sum_{t in P} pi_t <= 1 for every pattern P (a
multiset of homes one core can hold) give, for every placement of every option set,

    sum_t pi_t n_t(z) <= K,    n_t(z) = r if z picks (u, r) for t's layer, else 0.

The configuration LP (min the cores, patterns as columns, priced by a bounded knapsack over
memory and crossbars) finds such weights for the master's z* (its duals, scaled by the best
pattern's value, are dual feasible whenever the column generation stops); the types z* does
not use are lifted one by one, so the cut also holds the master away from the sets that
trade a layer's unfolding. Where the LP needs more than K cores, no placement of z* exists
and the cut removes z* and every set it covers. googlenet/Arch-C HT: the master's sets
(340.8 us) need 66.3 cores' worth of patterns; one lifted cut takes the master to 372.8 us.
Written up in ``formulations/placement.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pimsolve.solve.clock import Clock
from pimsolve.solve.covering import CoveringLP
from pimsolve.stages.placement.instance import PlacementInstance

__all__ = ["HomeCut", "home_cut", "CELLS", "REFINE", "COLUMNS"]

CELLS = 256
"""The memory axis of the knapsack: M in at most this many units. Each home's bytes are
rounded down to a unit, so every pattern that fits in bytes fits in units (a relaxation: the
cut stays valid)."""
STEP_CELLS = 7250
"""What a knapsack step costs besides its table's cells, in cells (the numpy calls and, once
per pattern, the LP solve), for the work clock."""
REFINE = 4
"""Where the LP at ``CELLS`` units fits the cores, but within the share most / CELLS of them
(most: the most homes of one type a core holds, each rounded down by less than a unit), the
LP again at ``CELLS * REFINE`` units. googlenet/Arch-C HT, the master's option set at 391.4 us:
63.83 cores of 64 at 256 units, 64.17 at 1024 (64.18 at 4096, 64.19 at 16,384)."""
COLUMNS = 400
"""At most this many patterns priced per LP; where it stops earlier, the duals are still
dual feasible once scaled (the cut is weaker, not wrong)."""


@dataclass(frozen=True)
class HomeCut:
    """sum over layers l of weights[l, u] r_l <= K for every placement (u, r_l: l's option)."""

    weights: dict[tuple[int, int], float]
    cores: float
    """What the option set the cut came from needs: sum of its weights times its r."""


def _types(instance: PlacementInstance, unit: int) -> dict[tuple[int, int], tuple[int, int, int]]:
    """Per home type (layer, unfolding): its memory in units (rounded down), its crossbars
    and the most homes of it one core can hold."""
    cap, C = instance.local_memory_bytes // unit, instance.crossbars_per_core
    out = {}
    for li, layer in enumerate(instance.layers):
        for ui, u in enumerate(layer.choices):
            size = instance.replica_bytes(li, ui) // unit
            bars = u.crossbars_per_ag * instance.home_least(u)
            if bars > C or size > cap:
                continue  # no core holds it (the master's per-layer cuts never pick it)
            most = min(max(layer.replications), cap // size if size else C // bars, C // bars)
            out[li, ui] = (size, bars, most)
    return out


def _add(table: np.ndarray, size: int, bars: int, most: int, value: float,
         trace: list | None = None, item: int = -1) -> np.ndarray:
    """The knapsack table (best value within each memory and crossbar room) with up to
    ``most`` items of (size, bars, value) added, by binary splitting."""
    rows, cols = table.shape
    k, left = 1, most
    while left > 0:
        q = min(k, left)
        left, k = left - q, 2 * k
        s, b = size * q, bars * q
        if s >= rows or b >= cols:  # too many for a core; the last, smaller chunk may fit
            continue
        grown = table.copy()
        candidate = table[:rows - s, :cols - b] + value * q
        better = candidate > table[s:, b:] + 1e-12
        grown[s:, b:] = np.where(better, candidate, table[s:, b:])
        if trace is not None:
            mask = np.zeros(table.shape, dtype=bool)
            mask[s:, b:] = better
            trace.append((item, q, s, b, mask))
        table = grown
    return table


def home_cut(instance: PlacementInstance, choices: Sequence[int], reps: Sequence[int],
             clock: Clock | None = None) -> HomeCut | None:
    """The lifted cut of the option set (``choices``, ``reps``) when its homes need more
    than K cores by the configuration LP; None when they fit
    (fractionally) or the target has no local-memory limit. The LP runs on a memory axis of
    ``CELLS`` units and, where it fits within what rounding the homes down to a unit can
    hide, again on one ``REFINE`` times finer. Charged to ``clock`` by the knapsack cells it
    fills."""
    if instance.local_memory_bytes is None:
        return None
    clock = clock or Clock()
    K = instance.cores
    for cells in (CELLS, CELLS * REFINE):
        unit = max(1, math.ceil(instance.local_memory_bytes / cells))
        types = _types(instance, unit)
        cap = instance.local_memory_bytes // unit
        items = [(li, ui) for li, ui in enumerate(choices) if reps[li] and (li, ui) in types]
        if not items:
            return None
        demand = [reps[li] for li, _ in items]
        weights = _duals(types, items, demand, cap, instance.crossbars_per_core, K, clock)
        if weights is None:
            return None
        needs = float(weights @ demand)
        if needs > K + 1e-6:
            return HomeCut(_lifted(types, items, weights, cap, instance.crossbars_per_core,
                                   clock), needs)
        # a core holds at most ``most`` homes, each rounded down by less than a unit
        if needs <= K * (1 - max(types[key][2] for key in items) / cells):
            return None
    return None


def _duals(types: dict[tuple[int, int], tuple[int, int, int]], items: list[tuple[int, int]],
           demand: list[int], cap: int, C: int, K: int, clock: Clock) -> np.ndarray | None:
    """Weights on ``items`` that no pattern sums above 1 (the configuration LP's duals, scaled
    by the best pattern's value), from column generation until the LP's optimum, until
    they prove more than ``K`` cores, or ``COLUMNS`` patterns; None if the LP fails."""
    lp = CoveringLP(demand)
    for i, key in enumerate(items):  # each home type alone, as many as a core holds
        lp.add_column({i: types[key][2]})
    weights = None
    for _ in range(COLUMNS):
        solved = lp.solve()
        if solved is None:
            return None
        pi = np.array(solved[1])
        trace: list = []
        table = np.zeros((cap + 1, C + 1))
        for i, key in enumerate(items):
            if pi[i] > 1e-12:
                size, bars, most = types[key]
                table = _add(table, size, bars, most, pi[i], trace, i)
        clock.charge(len(trace) * (table.size + STEP_CELLS), "knapsack")
        best = max(1.0, float(table[cap, C]))
        weights = pi / best  # dual feasible: no pattern sums to more than 1
        if float(weights @ demand) > K + 1e-6 or best <= 1.0 + 1e-9:  # proven, or the LP's optimum
            break
        counts, m, b = {}, cap, C
        for i, q, s, bars, mask in reversed(trace):
            if mask[m, b]:
                counts[i] = counts.get(i, 0) + q
                m, b = m - s, b - bars
        lp.add_column(counts)
    return weights


def _lifted(types: dict[tuple[int, int], tuple[int, int, int]], items: list[tuple[int, int]],
            weights: np.ndarray, cap: int, C: int, clock: Clock) -> dict[tuple[int, int], float]:
    """The weights of ``items`` and, lifted one at a time (largest first), of every other home
    type: the most it can weigh with every pattern still summing to at most 1."""
    out = {key: float(w) for key, w in zip(items, weights, strict=True) if w > 1e-12}
    table, steps = np.zeros((cap + 1, C + 1)), []
    for key, w in out.items():
        table = _add(table, *types[key], w, steps)
    for key in sorted(set(types) - set(items), key=lambda k: -types[k][0]):
        size, bars, most = types[key]
        w = min((1.0 - table[cap - q * size, C - q * bars]) / q for q in range(1, most + 1)
                if q * size <= cap and q * bars <= C)
        if w > 1e-9:
            out[key] = w
            table = _add(table, size, bars, most, w, steps)
    clock.charge((len(steps) + len(types)) * (table.size + STEP_CELLS), "knapsack")
    return out
