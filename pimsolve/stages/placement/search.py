"""LL: a primal heuristic over the options alone, guided by the pipeline's floor.

``evaluate.floor_latency`` scores options z (an unfolding and a replication per layer) in a
few milliseconds: the window pipeline with every layer's D at its option's floor, which no
placement of z beats and, on ISAAC and Arch-C, the greedy placements mostly reach. The
decomposition's master cannot see how the replicas of consecutive layers line up (which
replica of a layer waits for the end of which of its producer's), so the option sets it
ranks first can be far from the best; simulated annealing on the floor finds better ones,
which the decomposition places (``decompose._seed``) as incumbents.
"""

from __future__ import annotations

import math
import random

from pimsolve.solve.clock import Clock
from pimsolve.stages.placement.evaluate import floor_latency
from pimsolve.stages.placement.instance import PlacementInstance

__all__ = ["search_options", "Picks"]

Picks = tuple[tuple[int, int], ...]
"""Per layer: (unfolding index, replication index)."""

STEPS = (-3, -2, -1, 1, 2, 3)
"""A move shifts a layer's replication by this many admissible values."""
UNFOLD_MOVE = 0.2
"""Of a move's layer changes, the share that also draw a new unfolding."""
START_TEMPERATURE = 0.05
"""Of the start's floor: a move that much worse is taken with probability 1/e at first."""
STALE = 500
"""Moves in a row that reach nothing new (scored already, or too many crossbars) end the
search: on a small instance the option sets near the walk are all scored."""


def search_options(instance: PlacementInstance, start: Picks, *, seconds: float, seed: int = 0,
                   max_evaluations: int = 100_000, keep: int = 3,
                   clock: Clock | None = None) -> list[Picks]:
    """The ``keep`` best option sets by ``floor_latency`` found by simulated annealing from
    ``start`` in ``seconds`` (or ``max_evaluations`` scores, or ``STALE`` moves in a row
    that reach nothing new), best first; all but ``start`` fit the crossbars (K C in all).
    A move changes 1 to 3 layers' replication (and 1 in 5 of those its unfolding); the
    temperature falls linearly to 0. ``seconds`` of ``clock`` (a new wall clock if None; each
    score is charged to it)."""
    layers = instance.layers
    room = instance.cores * instance.crossbars_per_core
    size = [[[r * u.ags * u.crossbars_per_ag for r in layer.replications] for u in layer.choices]
            for layer in layers]
    movable = [li for li, layer in enumerate(layers)
               if len(layer.replications) > 1 or len(layer.choices) > 1]
    rng = random.Random(seed)

    clock = clock or Clock()
    windows = sum(layer.windows for layer in layers)

    def score(picks: Picks) -> float:
        clock.charge(windows, "window")
        return floor_latency(instance, [ui for ui, _ in picks],
                             [layers[li].replications[ri] for li, (_, ri) in enumerate(picks)])

    def fits(picks: Picks) -> bool:
        return sum(size[li][ui][ri] for li, (ui, ri) in enumerate(picks)) <= room

    current = tuple(start)
    value = score(current)
    found = {current: value}
    temperature = START_TEMPERATURE * value
    began = clock.now()
    stale = 0
    while len(found) < max_evaluations and stale < STALE and movable:
        spent = (clock.now() - began) / seconds if seconds > 0 else 1.0
        if spent >= 1:
            break
        candidate = list(current)
        for _ in range(rng.choice((1, 1, 2, 3))):
            li = rng.choice(movable)
            ui, ri = candidate[li]
            if rng.random() < UNFOLD_MOVE:
                ui = rng.randrange(len(layers[li].choices))
            ri = min(max(ri + rng.choice(STEPS), 0), len(layers[li].replications) - 1)
            candidate[li] = (ui, ri)
        candidate = tuple(candidate)
        v = found.get(candidate)
        if v is None and fits(candidate):
            v = found[candidate] = score(candidate)
            stale = 0
        else:
            stale += 1
            if v is None or candidate == current:
                continue
        heat = temperature * (1 - spent)
        if v <= value or heat > 0 and rng.random() < math.exp((value - v) / heat):
            current, value = candidate, v
    return sorted(found, key=found.__getitem__)[:keep]
