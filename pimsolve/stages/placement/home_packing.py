"""Whether an option set's replicas can share the cores at all: the configuration LP of their
homes and AGs, and the cut it proves for the master.

Every placement puts each replica's home on one core, with the home's buffers
(``replica_bytes``) and j of its A_u AGs, least <= j <= A_u (``PlacementInstance.home_least``:
one; all A_u in core mode; more with sync links in HT), X_u crossbars each; its other AGs
sit on other cores, each with mu^r bytes of buffers (``remote_bytes``). So each core's
content is a pattern: homes of each type t = (layer, unfolding), each with the AGs it keeps,
and AGs away from their home, within M bytes and C crossbars. Any weights on homes and AGs
that sum to at most 1 over every pattern give, for every placement of every option set,

    sum_t W_t n_t(z) <= K,    W_t = w_t + A_u v_t,    n_t(z) = r if z picks (u, r), else 0,

w_t a home's weight and v_t an AG's. The configuration LP (min the cores, patterns as
columns, priced by a bounded knapsack over memory and crossbars) finds such weights for the
master's z* (its duals, scaled by the best pattern's value, are dual feasible whenever the
column generation stops); the types z* does not use are lifted one by one, so the cut also
holds the master away from the sets that trade a layer's unfolding. Where the LP needs more
than K cores, no placement of z* exists and the cut removes z* and every set it covers.
googlenet/Arch-C HT: the master's sets (340.8 us) need 66.3 cores' worth of homes; one lifted
cut takes the master to 372.8 us. With the AGs in the LP (where the memory is nearly full,
``AG_MEMORY_SHARE``), its sets at 397.8 us need 64.18 cores, where their homes alone fit.
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

__all__ = ["HomeCut", "home_cut", "CELLS", "REFINE", "LEVELS", "TABLE_CELLS", "COLUMNS",
           "AG_MEMORY_SHARE"]

CELLS = 256
"""The memory axis of the knapsack: M in at most this many units. Each home's bytes (and each
AG's away from home) are rounded down to a unit, so every pattern that fits in bytes fits in
units (a relaxation: the cut stays valid)."""
STEP_CELLS = 7250
"""What a knapsack step costs besides its table's cells, in cells (the numpy calls and, once
per pattern, the LP solve), for the work clock."""
REFINE = 4
"""Where the LP at ``CELLS`` units fits the cores, but within the share most / CELLS of them
(most: the most items a core holds, each rounded down by less than a unit), the LP again at
``CELLS * REFINE`` units, and so on up to ``CELLS * REFINE ** LEVELS``, each seeded with the
patterns of the one before that still fit. googlenet/Arch-C HT, the master's option set at
391.4 us (homes only): 63.83 cores of 64 at 256 units, 64.17 at 1024 (64.18 at 4096, 64.19
at 16,384); two of its sets at 405.8 us (homes and AGs) fit at 1024 units and need 64.01 and
64.08 cores at 4096."""
LEVELS = 2
"""How many times the memory axis is refined at most (``REFINE``)."""
TABLE_CELLS = 40_000
"""A level is refined only while its knapsack table (memory units + 1 by crossbars + 1) stays
within this many cells: Arch-C's 8 crossbars reach 4096 units, ISAAC's 96 and PUMA's 128 stay
at 256, where a pattern can hold so many items that the rounding bound always asks for more
(googlenet/PUMA HT with ``AG_MEMORY_SHARE`` lowered to 0.8, so that its sets, at 0.876, take
the AGs: 134.6 work-s of LP up to 4096 units, 15.5 with this cap; its sets fit)."""
AG_MEMORY_SHARE = 0.9
"""The AGs join the LP (each a knapsack item of its own) only where the homes and the AGs
that cannot sit with them take this share of the memory at least; elsewhere each replica
is its home and the AGs it keeps. googlenet/Arch-C HT's master sets take 0.95 to 1.0
(there the AGs away from home, 1 to 3 KB each, are what does not fit); the PUMA HT rows'
0.29 to 0.88, where the LP with AGs proved no set unplaceable and took 21 work-s on
resnet34 (1.1 without), whose 128 crossbars a core make a home's variants many."""
COLUMNS = 400
"""At most this many patterns priced per LP; where it stops earlier, the duals are still
dual feasible once scaled (the cut is weaker, not wrong)."""


@dataclass(frozen=True)
class HomeCut:
    """sum over layers l of weights[l, u] r_l <= K for every placement (u, r_l: l's option)."""

    weights: dict[tuple[int, int], float]
    cores: float
    """What the option set the cut came from needs: sum of its weights times its r."""


@dataclass(frozen=True)
class _Type:
    """A home type (layer, unfolding) on the knapsack's axes, memory in units (rounded down)."""

    size: int
    """The home's buffers."""
    bars: int
    """Crossbars of one AG."""
    ags: int
    """The AGs a replica brings into the LP: A_u, or only ``least`` where the AGs stay out."""
    least: int
    """The fewest of its AGs a home keeps (``PlacementInstance.home_least``)."""
    remote: int
    """An AG's buffers on a core other than its home's."""
    homes: int
    """The most homes of the type one core holds."""

    def variants(self, crossbars: int) -> list[tuple[int, int, int, int, int]]:
        """What a core can hold of the type, as knapsack items (memory, crossbars, most,
        homes, AGs): a home with the j of its AGs it keeps, least <= j <= min(A_u, C / X_u),
        and, where a home may keep fewer than all, an AG away from its home."""
        out = [(self.size, j * self.bars, min(self.homes, crossbars // (j * self.bars)), 1, j)
               for j in range(self.least, min(self.ags, crossbars // self.bars) + 1)]
        if self.ags > self.least:
            out.append((self.remote, self.bars, crossbars // self.bars, 0, 1))
        return out


def _types(instance: PlacementInstance, unit: int,
           ags: bool = True) -> dict[tuple[int, int], _Type]:
    """Every home type one core can hold, by (layer, unfolding); without ``ags``, each
    replica as its home and the AGs it keeps at least alone."""
    cap, C = instance.local_memory_bytes // unit, instance.crossbars_per_core
    out = {}
    for li, layer in enumerate(instance.layers):
        for ui, u in enumerate(layer.choices):
            size = instance.replica_bytes(li, ui) // unit
            least = instance.home_least(u)
            bars = u.crossbars_per_ag * least
            if bars > C or size > cap:
                continue  # no core holds it (the master's per-layer cuts never pick it)
            most = min(max(layer.replications), cap // size if size else C // bars, C // bars)
            out[li, ui] = _Type(size, u.crossbars_per_ag, u.ags if ags else least, least,
                                u.remote_bytes // unit, most)
    return out


def _add(table: np.ndarray, size: int, bars: int, most: int, value: float,
         trace: list | None = None, item: object = -1) -> np.ndarray:
    """The knapsack table (best value within each memory and crossbar room) with up to
    ``most`` items of (size, bars, value) added, by binary splitting; each step recorded in
    ``trace`` as (``item``, count, size, bars, where it won)."""
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
             clock: Clock | None = None, seconds: float = math.inf) -> HomeCut | None:
    """The lifted cut of the option set (``choices``, ``reps``) when its homes and AGs need
    more than K cores by the configuration LP; None when they fit (fractionally) or the
    target has no local-memory limit. The LP runs on a memory axis of ``CELLS`` units and,
    where it fits within what rounding each item down to a unit can hide, again on one
    ``REFINE`` times finer (up to ``LEVELS`` times). Charged to ``clock`` by the knapsack
    cells it fills; after ``seconds`` of it, the LP stops (its weights still hold, so a cut
    may come, weaker) and so does the lifting (the types not lifted weigh nothing)."""
    if instance.local_memory_bytes is None:
        return None
    clock = clock or Clock()
    deadline = clock.now() + seconds
    K, C = instance.cores, instance.crossbars_per_core
    ags = _memory_share(instance, choices, reps) >= AG_MEMORY_SHARE
    patterns: list[dict[tuple[int, int], int]] = []
    for cells in (CELLS * REFINE ** level for level in range(LEVELS + 1)):
        unit = max(1, math.ceil(instance.local_memory_bytes / cells))
        types = _types(instance, unit, ags)
        cap = instance.local_memory_bytes // unit
        items = [(li, ui) for li, ui in enumerate(choices) if reps[li] and (li, ui) in types]
        if not items:
            return None
        demand = [n for li, ui in items for n in (reps[li], types[li, ui].ags * reps[li])]
        seeds = [p for p in patterns if _fits(types, items, p, cap, C)]
        weights, patterns = _duals(types, items, demand, cap, C, K, clock, deadline, seeds)
        if weights is None:
            return None
        needs = float(weights @ demand)
        if needs > K + 1e-6:
            return HomeCut(_lifted(types, items, weights, cap, C, clock, deadline), needs)
        # a core holds at most this many items, each rounded down by less than a unit
        most = min(C, max(sum(v[2] for v in types[key].variants(C)) for key in items))
        if (needs <= K * (1 - most / cells) or (cells * REFINE + 1) * (C + 1) > TABLE_CELLS
                or clock.now() >= deadline):
            return None
    return None


def _memory_share(instance: PlacementInstance, choices: Sequence[int],
                  reps: Sequence[int]) -> float:
    """The share of the cores' local memory the homes and the AGs that cannot sit with
    them (A_u - C / X_u a replica, mu^r each) take."""
    C, used = instance.crossbars_per_core, 0
    for li, (ui, r) in enumerate(zip(choices, reps, strict=True)):
        u = instance.layers[li].choices[ui]
        away = max(0, u.ags - C // u.crossbars_per_ag)
        used += r * (instance.replica_bytes(li, ui) + away * u.remote_bytes)
    return used / (instance.cores * instance.local_memory_bytes)


def _knapsack(types: dict[tuple[int, int], _Type], items: list[tuple[int, int]],
              weights: np.ndarray, cap: int, C: int, trace: list | None = None) -> np.ndarray:
    """The best value of a core's content within each memory and crossbar room, each home
    worth ``weights[2 i]`` and each AG ``weights[2 i + 1]`` for the i-th of ``items``."""
    table = np.zeros((cap + 1, C + 1))
    for i, key in enumerate(items):
        for v, (size, bars, most, homes, ags) in enumerate(types[key].variants(C)):
            value = weights[2 * i] * homes + weights[2 * i + 1] * ags
            if value > 1e-12:
                table = _add(table, size, bars, most, value, trace, (i, v))
    return table


def _fits(types: dict[tuple[int, int], _Type], items: list[tuple[int, int]],
          pattern: dict[tuple[int, int], int], cap: int, C: int) -> bool:
    """Whether ``pattern`` (count of each (item, variant)) fits a core on ``types``' axis."""
    memory = bars = 0
    for (i, v), q in pattern.items():
        size, x, _, _, _ = types[items[i]].variants(C)[v]
        memory, bars = memory + q * size, bars + q * x
    return memory <= cap and bars <= C


def _column(types: dict[tuple[int, int], _Type], items: list[tuple[int, int]],
            pattern: dict[tuple[int, int], int], C: int) -> dict[int, int]:
    """The LP's column of ``pattern``: its homes and AGs of each item."""
    column: dict[int, int] = {}
    for (i, v), q in pattern.items():
        _, _, _, homes, ags = types[items[i]].variants(C)[v]
        column[2 * i] = column.get(2 * i, 0) + q * homes
        column[2 * i + 1] = column.get(2 * i + 1, 0) + q * ags
    return column


def _duals(types: dict[tuple[int, int], _Type], items: list[tuple[int, int]],
           demand: list[int], cap: int, C: int, K: int, clock: Clock,
           deadline: float = math.inf, seeds: Sequence[dict[tuple[int, int], int]] = ()
           ) -> tuple[np.ndarray | None, list[dict[tuple[int, int], int]]]:
    """Weights on the homes and the AGs of ``items`` (rows 2 i and 2 i + 1) that no pattern
    sums above 1 (the configuration LP's duals, scaled by the best pattern's value), from
    column generation from ``seeds`` until the LP's optimum, until they prove more than
    ``K`` cores, ``COLUMNS`` patterns or ``deadline`` (None if the LP fails); and the
    patterns priced."""
    lp = CoveringLP(demand)
    for i, key in enumerate(items):  # each variant alone, as many as a core holds
        for _, _, most, homes, ags in types[key].variants(C):
            lp.add_column({2 * i: most * homes, 2 * i + 1: most * ags})
    patterns = list(seeds)
    for pattern in patterns:
        lp.add_column(_column(types, items, pattern, C))
    weights = None
    for _ in range(COLUMNS):
        solved = lp.solve()
        if solved is None:
            return None, patterns
        pi = np.array(solved[1])
        trace: list = []
        table = _knapsack(types, items, pi, cap, C, trace)
        clock.charge(len(trace) * (table.size + STEP_CELLS), "knapsack")
        best = max(1.0, float(table[cap, C]))
        weights = pi / best  # dual feasible: no pattern sums to more than 1
        if (float(weights @ demand) > K + 1e-6 or best <= 1.0 + 1e-9  # proven, or the optimum
                or clock.now() >= deadline):
            break
        pattern: dict[tuple[int, int], int] = {}
        m, b = cap, C
        for item, q, s, bars, mask in reversed(trace):
            if mask[m, b]:
                pattern[item] = pattern.get(item, 0) + q
                m, b = m - s, b - bars
        patterns.append(pattern)
        lp.add_column(_column(types, items, pattern, C))
    return weights, patterns


SPLITS = (1.0, 0.5, 0.0)
"""Lifting a type: the shares of a replica's weight its home carries (the rest its AGs, by
count) that are tried; each gives a valid weight, the largest is kept."""


def _lifted(types: dict[tuple[int, int], _Type], items: list[tuple[int, int]],
            weights: np.ndarray, cap: int, C: int, clock: Clock,
            deadline: float = math.inf) -> dict[tuple[int, int], float]:
    """The weight of a replica of each of ``items`` (its home's and its A_u AGs') and, lifted
    one at a time (largest home first), of every other home type: the most a replica can
    weigh, split between its home and its AGs as one of ``SPLITS``, with every pattern
    still summing to at most 1."""
    out = {key: float(weights[2 * i] + weights[2 * i + 1] * types[key].ags)
           for i, key in enumerate(items)}
    out = {key: w for key, w in out.items() if w > 1e-12}
    steps: list = []
    table = _knapsack(types, items, weights, cap, C, steps)
    rest = 1.0 - table[::-1, ::-1]  # rest[m, b]: what a pattern leaves to items within (m, b)
    for key in sorted(set(types) - set(items), key=lambda k: -types[k].size):
        clock.charge((len(steps) + 1) * (table.size + STEP_CELLS), "knapsack")
        steps = []
        if clock.now() >= deadline:
            break
        t = types[key]
        best, share = 0.0, SPLITS[0]
        for split in SPLITS:
            unit = np.zeros((cap + 1, C + 1))  # the most replicas' worth within each room
            for size, bars, most, homes, ags in t.variants(C):
                value = split * homes + (1 - split) * ags / t.ags
                if value > 1e-12:
                    unit = _add(unit, size, bars, most, value, steps)
            held = unit > 1e-12
            w = float((rest[held] / unit[held]).min()) if held.any() else 0.0
            if w > best:
                best, share = w, split
        if best > 1e-9:
            out[key] = best
            for size, bars, most, homes, ags in t.variants(C):
                value = best * (share * homes + (1 - share) * ags / t.ags)
                if value > 1e-12:
                    table = _add(table, size, bars, most, value, steps)
            rest = 1.0 - table[::-1, ::-1]
    clock.charge(len(steps) * (table.size + STEP_CELLS), "knapsack")
    return out
