"""Local searches that improve a greedy placement of fixed options.

LL, ``polish``: moves single AGs of the layers furthest above their floor.
A greedy placement (``baselines.even``) balances each layer's busiest core, one AG at a
time; where the crossbars are nearly full it leaves a few cores that hold one AG too many of
some layer (vgg8-28 on PUMA: four home cores of Conv_1 with two of its AGs, 132.6 us where
the layer's other cores take 96.8). ``polish`` moves such an AG to another core, or swaps it
with an AG of another layer there, and keeps every change that lowers the latency, or keeps
it and lowers the sum of the layers' D_l, or keeps both and lowers how far the layers' cores
are above their floors (squared): the last two let it walk across plateaus where several
cores pace a layer.

HT, ``gather``: moves all the homes a core holds of one layer onto another core homing that
layer, so that their input loads, which overlap, are fetched once (the shared global
memory's bytes fall by delta_l for every core that no longer homes layer l).

Every placement either returns is valid (``baselines.check_counts``).
"""

from __future__ import annotations

import numpy as np

from pimsolve.solve.clock import Clock
from pimsolve.stages.placement.baselines import check_counts
from pimsolve.stages.placement.evaluate import (
    LayerCounts,
    core_busy,
    floor_whole,
    memory_per_core,
    predict,
    whole_ns,
)
from pimsolve.stages.placement.instance import PlacementInstance

__all__ = ["polish", "gather", "GATHER_MOST"]

TARGETS = 40
"""Cores a moved AG may go to: the layer's least busy ones (and cores homing a replica of
the layer that can keep one more at home)."""


def _take(c: LayerCounts, core: int, home: bool) -> tuple[str, int] | None:
    """Take one AG of ``c`` off ``core``: one off its home, else one its home keeps beyond
    the one it must, or (``home``) a home with the one AG it must keep (the AGs it keeps
    beyond must then fit the homes left: ``_Search.valid``); None if it has none."""
    if home:
        if c.rho[core]:
            c.y[core] -= 1
            c.ell[core] -= 1
            c.rho[core] -= 1
            return "home", core
        return None
    if c.y[core] > c.ell[core]:
        c.y[core] -= 1
        return "away", core
    if c.ell[core] > c.rho[core]:
        c.y[core] -= 1
        c.ell[core] -= 1
        return "kept", core
    return None


def _put(c: LayerCounts, core: int, kind: str) -> tuple[str, int]:
    c.y[core] += 1
    c.ell[core] += kind != "away"
    c.rho[core] += kind == "home"
    return kind, core


def _undo_take(c: LayerCounts, taken: tuple[str, int]) -> None:
    kind, core = taken
    c.y[core] += 1
    c.ell[core] += kind != "away"
    c.rho[core] += kind == "home"


def _undo_put(c: LayerCounts, put: tuple[str, int]) -> None:
    kind, core = put
    c.y[core] -= 1
    c.ell[core] -= kind != "away"
    c.rho[core] -= kind == "home"


def polish(instance: PlacementInstance, counts: list[LayerCounts],
           seconds: float, *, clock: Clock | None = None) -> list[LayerCounts]:
    """A placement no worse than ``counts`` (by ``predict``'s latency), from first-improving
    moves and swaps of single AGs for at most ``seconds`` of ``clock`` (a new wall clock if
    None; each placement valued is charged to it); ``counts`` is left as it is."""
    clock = clock or Clock()
    search = _Search(instance, counts, clock, clock.now() + seconds)
    if instance.computing_mode != "CM":  # whole replicas on a core: no AG moves alone
        while clock.now() < search.deadline and search.improve():
            pass
    return search.cur


class _Search:
    """The placement being improved, its value and what the moves need."""

    def __init__(self, instance: PlacementInstance, counts: list[LayerCounts], clock: Clock,
                 deadline: float) -> None:
        self.instance, self.clock, self.deadline = instance, clock, deadline
        self.windows = sum(layer.windows for layer in instance.layers)  # what key() goes through
        self.cur = [LayerCounts(c.choice, c.replication, np.array(c.y), np.array(c.rho),
                                np.array(c.ell)) for c in counts]
        layers = instance.layers
        self.us = [layer.choices[c.choice] for layer, c in zip(layers, self.cur, strict=True)]
        self.x = np.array([u.crossbars_per_ag for u in self.us])
        self.floor = [floor_whole(instance, i, c.choice, layer.replications.index(c.replication))
                      for i, (layer, c) in enumerate(zip(layers, self.cur, strict=True))]
        self.value = self.key()

    def valid(self) -> bool:
        inst, cur = self.instance, self.cur
        if (sum(c.y * xi for c, xi in zip(cur, self.x, strict=True))
                > inst.crossbars_per_core).any():
            return False
        top, most = inst.local_memory_bytes, inst.max_layers_per_core
        if top is not None and (memory_per_core(inst, cur) > top).any():
            return False
        if most is not None and (sum((c.y > 0).astype(int) for c in cur) > most).any():
            return False
        return all(not ((c.ell > u.ags * c.rho).any() or (c.ell < c.rho).any())
                   for c, u in zip(cur, self.us, strict=True))

    def key(self) -> tuple[float, float, float]:
        """Latency, then the sum of the D_l, then the squared excess of every layer's cores
        over its floor."""
        self.clock.charge(len(self.cur) * self.instance.cores, "core_layer")
        self.clock.charge(self.windows, "window")
        excess = sum(float((np.maximum(core_busy(self.instance, i, c) - self.floor[i], 0.0)
                            ** 2).sum()) for i, c in enumerate(self.cur))
        return (round(predict(self.instance, self.cur).time_ns, 6),
                round(sum(whole_ns(self.instance, self.cur)), 6), excess)

    def accept(self) -> bool:
        """Keep the current change if it is valid and better."""
        if not self.valid():
            return False
        value = self.key()
        if value < self.value:
            self.value = value
            return True
        return False

    def improve(self) -> bool:
        """One first-improving move or swap (kept); False if none before the deadline."""
        cur, us, x = self.cur, self.us, self.x
        whole = whole_ns(self.instance, cur)
        room = self.instance.crossbars_per_core - sum(
            c.y * xi for c, xi in zip(cur, x, strict=True))
        for i in sorted(range(len(cur)), key=lambda i: self.floor[i] - whole[i]):
            if whole[i] <= self.floor[i] * (1 + 1e-9):
                break
            c = cur[i]
            busy = core_busy(self.instance, i, c)
            for a in np.flatnonzero(busy >= busy.max() - 1e-9):
                targets = [int(b) for b in np.argsort(busy, kind="stable") if b != a][:TARGETS]
                homes = [int(b) for b in np.flatnonzero(c.ell < us[i].ags * c.rho) if b != a]
                for b, kind in ([(b, "away") for b in targets] + [(b, "kept") for b in homes]
                                + [(b, "home") for b in targets]):
                    if self.clock.now() > self.deadline:
                        return False
                    taken = _take(c, a, kind == "home")
                    if taken is None:
                        continue
                    put = _put(c, b, kind)
                    if room[b] >= x[i]:
                        if self.accept():
                            return True
                    elif self.swap(i, a, b, room):
                        return True
                    _undo_put(c, put)
                    _undo_take(c, taken)
        return False

    def swap(self, i: int, a: int, b: int, room: np.ndarray) -> bool:
        """With an AG of layer i moved from core a to b: move one of another layer from b
        to a, where both fit; True if one is kept."""
        x, us = self.x, self.us
        for j, d in enumerate(self.cur):
            if j == i or not d.y[b] or room[b] + x[j] < x[i] or room[a] + x[i] < x[j]:
                continue
            back = _take(d, b, False)
            if back is None:
                continue
            there = _put(d, a, "kept" if d.ell[a] < us[j].ags * d.rho[a] else "away")
            if self.accept():
                return True
            _undo_put(d, there)
            _undo_take(d, back)
        return False


GATHER_MOST = 4
"""``gather`` moves homes of a layer only onto a core where, with them, at most this many
are. The model counts the loads saved; the simulator also charges a core serving many homes'
windows: resnet18-28/ISAAC HT, ``level``'s placements of two option sets the master finds
optimal (105.6 and 108.2 us in the model, 139.7 and 142.8 us simulated), gathered with at
most 3 homes a core: 104.0 / 133.4 us and 103.2 / 140.3; with 4: 102.3 / 130.9 and 102.3 /
145.5; with no limit 102.3 / 139.4 (all 14 of Conv_0's homes on one core)."""


def gather(instance: PlacementInstance, counts: list[LayerCounts], seconds: float, *,
           clock: Clock | None = None) -> list[LayerCounts]:
    """HT: a placement no worse than ``counts`` (by ``predict``'s cycle time): while the
    shared global memory binds, the homes a core holds of a layer whose windows share input
    rows move, all together, to another core homing that layer (at most ``GATHER_MOST``
    there), their AGs at home with them where the crossbars allow and else left behind as
    AGs off their home; the first move that lowers the cycle time is kept, until none does
    or ``seconds`` of ``clock`` (a new wall clock if None) pass (each placement valued is
    charged to it). ``counts`` is left as it is."""
    clock = clock or Clock()
    deadline = clock.now() + seconds
    cur = [LayerCounts(c.choice, c.replication, np.array(c.y), np.array(c.rho),
                       np.array(c.ell)) for c in counts]
    layers = instance.layers
    us = [layer.choices[c.choice] for layer, c in zip(layers, cur, strict=True)]
    shared = [i for i, (layer, c) in enumerate(zip(layers, cur, strict=True))
              if c.replication > 1 and instance.computing_mode != "CM"
              and layer.overlap(layer.replications.index(c.replication)) > 0]
    shared.sort(key=lambda i: -layers[i].overlap(layers[i].replications.index(
        cur[i].replication)))
    # what a move changes is checked on its two cores only: their crossbars and memory
    room = instance.crossbars_per_core - sum(c.y * u.crossbars_per_ag
                                             for c, u in zip(cur, us, strict=True))
    memory = memory_per_core(instance, cur)
    top = instance.local_memory_bytes
    best = predict(instance, cur)

    def layer_memory(i: int, cores: list[int]) -> np.ndarray:
        c = cur[i]
        return (instance.replica_bytes(i, c.choice) * c.rho[cores]
                + us[i].remote_bytes * (c.y[cores] - c.ell[cores]))

    def moved(i: int, a: int, b: int) -> bool:
        """Move core a's homes of layer i to core b (their AGs with them where they fit);
        keep it if valid and faster, else undo it."""
        nonlocal best
        c, u, pair = cur[i], us[i], [a, b]
        before = c.y.copy(), c.rho.copy(), c.ell.copy()
        old = layer_memory(i, pair)
        for ags in dict.fromkeys((min(int(c.ell[a]), int(room[b]) // u.crossbars_per_ag), 0)):
            c.y[:], c.rho[:], c.ell[:] = before
            c.rho[b] += c.rho[a]
            c.rho[a] = 0
            c.y[a] -= ags
            c.y[b] += ags
            c.ell[pair] = np.maximum(c.rho[pair], np.minimum(c.y[pair], u.ags * c.rho[pair]))
            new = memory[pair] - old + layer_memory(i, pair)
            if c.y[b] < c.rho[b] or top is not None and (new > top).any():
                continue  # a home without an AG, or past the local memory
            clock.charge(len(cur) * instance.cores, "core_layer")
            value = predict(instance, cur)
            if value.time_ns < best.time_ns * (1 - 1e-9):
                best = value
                memory[pair] = new
                room[pair] += np.array([ags, -ags]) * u.crossbars_per_ag
                return True
        c.y[:], c.rho[:], c.ell[:] = before
        return False

    def improve() -> bool:
        if best.bottleneck not in ("gm", "chain"):  # nothing else falls when homes gather
            return False
        for i in shared:
            c = cur[i]
            homes = np.flatnonzero(c.rho)
            for a in sorted(homes, key=lambda k: (c.rho[k], c.y[k])):
                for b in sorted(homes, key=lambda k: -c.rho[k]):
                    if clock.now() > deadline:
                        return False
                    if a != b and c.rho[a] + c.rho[b] <= GATHER_MOST and moved(i, a, b):
                        return True
        return False

    while improve():
        pass
    if (why := check_counts(instance, cur)) is not None:  # cannot happen: moves keep it valid
        raise AssertionError(why)
    return cur
