"""Local searches that move single AGs: of the layers furthest above their floor (LL,
``polish``) or off the busiest cores (HT, ``polish_cycle``).

A greedy placement (``baselines.even``) balances each layer's busiest core, one AG at a
time; where the crossbars are nearly full it leaves a few cores that hold one AG too many of
some layer (vgg8-28 on PUMA: four home cores of Conv_1 with two of its AGs, 132.6 us where
the layer's other cores take 96.8). ``polish`` moves such an AG to another core, or swaps it
with an AG of another layer there, and keeps every change that lowers the latency, or keeps
it and lowers the sum of the layers' D_l, or keeps both and lowers how far the layers' cores
are above their floors (squared): the last two let it walk across plateaus where several
cores pace a layer. ``polish_cycle`` does the same for the HT cycle, scoring a change on
the two cores it touches. Every placement they return is valid
(``baselines.check_counts``).
"""

from __future__ import annotations

import time

import numpy as np

from pimsolve.stages.placement.evaluate import (
    LayerCounts,
    chip_crossings,
    core_busy,
    floor_whole,
    layer_per_core,
    memory_per_core,
    per_core,
    predict,
    whole_ns,
)
from pimsolve.stages.placement.instance import PlacementInstance

__all__ = ["polish", "polish_cycle"]

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
           seconds: float) -> list[LayerCounts]:
    """A placement no worse than ``counts`` (by ``predict``'s latency), from first-improving
    moves and swaps of single AGs for at most ``seconds``; ``counts`` is left as it is."""
    search = _Search(instance, counts, time.perf_counter() + seconds)
    if instance.computing_mode != "CM":  # whole replicas on a core: no AG moves alone
        while time.perf_counter() < search.deadline and search.improve():
            pass
    return search.cur


class _Search:
    """The placement being improved, its value and what the moves need."""

    def __init__(self, instance: PlacementInstance, counts: list[LayerCounts],
                 deadline: float) -> None:
        self.instance, self.deadline = instance, deadline
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
                    if time.perf_counter() > self.deadline:
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


def polish_cycle(instance: PlacementInstance, counts: list[LayerCounts],
                 seconds: float) -> list[LayerCounts]:
    """HT: a placement no worse than ``counts`` by ``predict``'s cycle time, from
    first-improving moves and swaps of single AGs off the busiest cores for at most
    ``seconds``; ``counts`` is left as it is.

    A greedy placement balances the cores' totals but keeps a replica's AGs together where
    they fit; with sync links (PUMA) a core then issues all of a replica's AG-windows one
    after another, and moving a few of them away costs less link time than it saves (the
    traffic of an AG off its home is a few bytes a window, its issue slot a whole MVM).
    A change is kept if it lowers the cycle, or keeps it and lowers the number of cores at
    the cycle, or keeps both and lowers the sum of the cores' squared times."""
    search = _CycleSearch(instance, counts, time.perf_counter() + seconds)
    if instance.computing_mode != "CM":
        while time.perf_counter() < search.deadline and search.improve():
            pass
    return search.cur


class _CycleSearch:
    """The HT placement being improved, with each layer's share of every core's resources
    (``layer_per_core``) and its counts as last kept, so that a change is scored on the
    cores it touches."""

    def __init__(self, instance: PlacementInstance, counts: list[LayerCounts],
                 deadline: float) -> None:
        self.instance, self.deadline = instance, deadline
        self.cur = [LayerCounts(c.choice, c.replication, np.array(c.y), np.array(c.rho),
                                np.array(c.ell)) for c in counts]
        cur = self.cur
        self.us = [layer.choices[c.choice] for layer, c in zip(instance.layers, cur, strict=True)]
        self.x = np.array([u.crossbars_per_ag for u in self.us])
        self.home_bytes = [instance.replica_bytes(li, c.choice) for li, c in enumerate(cur)]
        self.kept = [np.stack([c.y, c.rho, c.ell]) for c in cur]
        self.terms = [layer_per_core(instance, li, c) for li, c in enumerate(cur)]
        total = per_core(instance, cur)
        self.names = tuple(total)
        self.gport = self.names.index("gport")
        self.total = np.stack([total[n] for n in self.names])
        self.core = self.total.max(axis=0)
        self.fixed = predict(instance, cur).resources["ag"]
        self.room = instance.crossbars_per_core - sum(
            c.y * xi for c, xi in zip(cur, self.x, strict=True))
        self.memory = memory_per_core(instance, cur)
        self.layers_on = sum((c.y > 0).astype(int) for c in cur)
        self.value = self._key(self.core, self.total[self.gport])

    def _key(self, core: np.ndarray, gport: np.ndarray) -> tuple[float, int, float]:
        """The cycle (the busiest core, the busiest chip's global memory, the longest AG
        and, on several chips, the off-chip link), the cores at the busiest, the sum of
        the cores' squared times."""
        inst = self.instance
        top = float(core.max())
        cycle = max(top, float(gport.reshape(inst.chips, -1).sum(axis=1).max()), self.fixed)
        if inst.offchip_bytes_per_ns:
            crossings = chip_crossings(inst, self.cur)
            cycle = max(cycle, crossings.total_bytes(inst, self.cur) / inst.offchip_bytes_per_ns)
        return (round(cycle, 6), int((core >= top - 1e-6).sum()),
                round(float((core ** 2).sum()), 3))

    def _layer_memory(self, i: int, counts: np.ndarray) -> np.ndarray:
        y, rho, ell = counts
        return self.home_bytes[i] * rho + self.us[i].remote_bytes * (y - ell)

    def _try(self, touched: list[int], at: np.ndarray) -> bool:
        """Keep the change already made to the layers ``touched`` on the cores ``at`` if it
        is valid and better (the caller undoes it otherwise)."""
        inst, cur = self.instance, self.cur
        total, room = self.total[:, at].copy(), self.room[at].copy()
        memory, layers_on = self.memory[at].copy(), self.layers_on[at].copy()
        new = {}
        for i in touched:
            c, u, old = cur[i], self.us[i], self.kept[i][:, at]
            now = np.stack([c.y[at], c.rho[at], c.ell[at]])
            if ((now[2] > u.ags * now[1]) | (now[2] < now[1])).any():
                return False
            new[i] = layer_per_core(inst, i, c, at)
            total += np.stack([new[i][n] - self.terms[i][n][at] for n in self.names])
            room -= self.x[i] * (now[0] - old[0])
            memory += self._layer_memory(i, now) - self._layer_memory(i, old)
            layers_on += (now[0] > 0).astype(int) - (old[0] > 0).astype(int)
        top, most = inst.local_memory_bytes, inst.max_layers_per_core
        if ((room < 0).any() or top is not None and (memory > top).any()
                or most is not None and (layers_on > most).any()):
            return False
        core, gport = self.core.copy(), self.total[self.gport].copy()
        core[at], gport[at] = total.max(axis=0), total[self.gport]
        value = self._key(core, gport)
        if value >= self.value:
            return False
        self.value, self.core = value, core
        self.total[:, at], self.room[at] = total, room
        self.memory[at], self.layers_on[at] = memory, layers_on
        for i in touched:
            c = cur[i]
            self.kept[i][:, at] = np.stack([c.y[at], c.rho[at], c.ell[at]])
            for n in self.names:
                self.terms[i][n][at] = new[i][n]
        return True

    def improve(self) -> bool:
        """One first-improving move or swap of an AG off a busiest core (kept); False if
        none before the deadline."""
        cur, us = self.cur, self.us
        order = np.argsort(self.core, kind="stable")
        for a in np.flatnonzero(self.core >= self.core.max() - 1e-6):
            for i in range(len(cur)):
                c = cur[i]
                if not c.y[a]:
                    continue
                targets = [int(b) for b in order if b != a]  # least busy first
                homes = [int(b) for b in np.flatnonzero(c.ell < us[i].ags * c.rho) if b != a]
                for b, kind in ([(b, "away") for b in targets] + [(b, "kept") for b in homes]
                                + [(b, "home") for b in targets]):
                    if time.perf_counter() > self.deadline:
                        return False
                    taken = _take(c, a, kind == "home")
                    if taken is None:
                        continue
                    put = _put(c, b, kind)
                    at = np.array([a, b])
                    if self._try([i], at) or self.room[b] < self.x[i] and self.swap(i, a, b):
                        return True
                    _undo_put(c, put)
                    _undo_take(c, taken)
        return False

    def swap(self, i: int, a: int, b: int) -> bool:
        """With an AG of layer i moved from core a to b: move one of another layer from b
        to a; True if that is kept."""
        at = np.array([a, b])
        for j, d in enumerate(self.cur):
            if j == i or not d.y[b] or self.room[b] + self.x[j] < self.x[i]:
                continue
            back = _take(d, b, False)
            if back is None:
                continue
            there = _put(d, a, "kept" if d.ell[a] < self.us[j].ags * d.rho[a] else "away")
            if self._try([i, j], at):
                return True
            _undo_put(d, there)
            _undo_take(d, back)
        return False
