"""Baseline replication + placement methods, each ``(instance, objective) -> counts``.

They are what the exact engines and the GA are compared with (PIMCOMP Sec. VI, VIII):

* ``balance``: PIMCOMP-NN's ``ReplicationByBalance``: one more replica, again and again, to
  the layer whose time ``ceil(W / r) * t_ag`` is the largest, while crossbars allow;
* ``uniform``: PIMCOMP-NN's ``ReplicateUniformly``: one factor for every layer, the largest
  that packs;
* ``w0h0``: PIMCOMP-NN's ``ReplicationByW0H0``: factors proportional to the layer's output
  width x height (its windows), relative to the second smallest, scaled to fit;
* ``one-layer-per-core``: Polyhedral-like: every core holds array groups (AGs) of one layer
  only; cores go to the slowest layer, which replicates to use them;
* ``no-replication``: one replica per layer, AGs next-fit core after core (``reference.py``).

All use the default unfolding (IK2,O,1 when the layer has it). Replicas are placed by
:func:`pack`; when a replication does not pack, the largest factors are reduced until it does.
The methods ignore the objective (as in PIMCOMP-NN): they only balance the AG time.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np

from pimsolve.errors import InfeasibleError
from pimsolve.solve.clock import Clock
from pimsolve.stages.placement.evaluate import (
    LayerCounts,
    floor_whole,
    memory_per_core,
    per_core,
    predict,
    whole_ns,
)
from pimsolve.stages.placement.instance import PlacementInstance, PlacementLayer

__all__ = ["BASELINES", "DEFAULT_UNFOLDING", "default_choices", "check_counts", "homes",
           "pack", "spread", "even", "even_search", "level", "level_search", "balance", "uniform",
           "w0h0", "one_layer_per_core", "no_replication", "scattered"]

DEFAULT_UNFOLDING = "IK2,O,1"

Baseline = Callable[[PlacementInstance, str], list[LayerCounts]]


def default_choices(instance: PlacementInstance) -> list[int]:
    """Per layer, the index of the default unfolding (IK2,O,1 if present, else the first)."""
    out = []
    for layer in instance.layers:
        names = [c.unfolding for c in layer.choices]
        out.append(names.index(DEFAULT_UNFOLDING) if DEFAULT_UNFOLDING in names else 0)
    return out


def check_counts(instance: PlacementInstance, counts: Sequence[LayerCounts]) -> str | None:
    """Why ``counts`` is not a valid placement of ``instance`` (one line), or None if it is."""
    if len(counts) != len(instance.layers):
        return f"{len(counts)} layer counts for {len(instance.layers)} layers"
    k = instance.cores
    xbars = np.zeros(k, dtype=np.int64)
    layers_on = np.zeros(k, dtype=np.int64)
    for layer, c in zip(instance.layers, counts, strict=True):
        name = layer.name
        if not 0 <= c.choice < len(layer.choices):
            return f"{name}: choice {c.choice} is not one of {len(layer.choices)} unfoldings"
        if c.replication not in layer.replications:
            return f"{name}: replication {c.replication} is not admissible"
        for what in ("y", "rho", "ell"):
            v = np.asarray(getattr(c, what))
            if v.shape != (k,):
                return f"{name}: {what} has shape {v.shape}, expected ({k},)"
            if (v < 0).any():
                return f"{name}: {what} has a negative count"
        y, rho, ell = (np.asarray(v, dtype=np.int64) for v in (c.y, c.rho, c.ell))
        u = layer.choices[c.choice]
        a, r = u.ags, c.replication
        if y.sum() != r * a:
            return f"{name}: {y.sum()} AGs placed, replication {r} x {a} AGs needs {r * a}"
        if rho.sum() != r:
            return f"{name}: {rho.sum()} replica homes for replication {r}"
        for bad, why in ((ell > y, "ell > y"), (ell > a * rho, "ell > A * rho"),
                         (ell < rho, "a homed replica has no AG at home (ell < rho)")):
            if bad.any():
                return f"{name}: core {int(np.argmax(bad))}: {why}"
        if instance.computing_mode == "CM" and ((y != ell) | (ell != a * rho)).any():
            core = int(np.argmax((y != ell) | (ell != a * rho)))
            return f"{name}: core {core}: core mode needs whole replicas on one core"
        xbars += y * u.crossbars_per_ag
        layers_on += y > 0
    over = xbars > instance.crossbars_per_core
    if over.any():
        core = int(np.argmax(over))
        return (f"core {core}: {int(xbars[core])} crossbars used, a core has "
                f"{instance.crossbars_per_core}")
    memory = memory_per_core(instance, counts)
    if instance.local_memory_bytes is not None and (memory > instance.local_memory_bytes).any():
        core = int(np.argmax(memory))
        return (f"core {core}: needs {int(memory[core])} bytes of local memory, a core has "
                f"{instance.local_memory_bytes}")
    cap = instance.max_layers_per_core
    if cap is not None and (layers_on > cap).any():
        core = int(np.argmax(layers_on > cap))
        return f"core {core}: {int(layers_on[core])} layers, at most {cap} allowed"
    return None


def homes(y: np.ndarray, ags: int) -> tuple[np.ndarray, np.ndarray]:
    """``rho`` and ``ell`` of a layer whose AGs sit ``y[k]`` per core, ``ags`` per replica.

    Each core homes ``y[k] // ags`` whole replicas; the left-over pieces, in core order, are
    chained into replicas, each homed on the core holding its largest piece (first on ties).
    """
    y = np.asarray(y, dtype=np.int64)
    rho = y // ags
    ell = rho * ags
    need, pieces = ags, []
    for k in np.flatnonzero(y % ags):
        left = int(y[k] % ags)
        while left:
            take = min(left, need)
            pieces.append((take, k))
            left -= take
            need -= take
            if need == 0:
                n, home = max(pieces, key=lambda p: (p[0], -p[1]))
                rho[home] += 1
                ell[home] += n
                need, pieces = ags, []
    return rho, ell


def _counts(instance: PlacementInstance, choices: Sequence[int],
            y: np.ndarray) -> list[LayerCounts]:
    """Counts from the AGs per layer and core (``y``: layers x cores)."""
    out = []
    for layer, u, row in zip(instance.layers, choices, y, strict=True):
        a = layer.choices[u].ags
        rho, ell = homes(row, a)
        out.append(LayerCounts(u, int(row.sum()) // a, row.copy(), rho, ell))
    return out


def _load_per_ag(instance: PlacementInstance, choices: Sequence[int],
                 reps: Sequence[int]) -> list[tuple[float, float]]:
    """Per layer: per-core time one AG adds, and what a replica's home adds (ns)."""
    out = []
    for layer, u, r in zip(instance.layers, choices, reps, strict=True):
        c = layer.choices[u]
        m = layer.windows_per_replica(r)
        out.append((m * c.issue_ns, m * (c.home_vfu_ns + c.home_local_ns)))
    return out


def pack(instance: PlacementInstance, choices: Sequence[int], reps: Sequence[int], *,
         cores: Sequence[Sequence[int]] | None = None) -> list[LayerCounts] | None:
    """Place ``reps[l]`` replicas of every layer, or None when they do not fit.

    Replicas go largest first; a replica that fits on a core (crossbars and local memory)
    goes whole to the fitting core with the least load (issue and home time), else (not in
    core mode) its AGs spread over consecutive cores, starting at the one with the most room
    (its home). If that balanced placement fails, or overruns a core's local memory, plain
    first-fit is tried. ``cores[l]``, if given, lists the cores layer ``l`` may use.
    """
    for balanced in (True, False):
        y = _place(instance, choices, reps, cores, balanced)
        if y is None:
            continue
        counts = _counts(instance, choices, y)
        top = instance.local_memory_bytes
        if top is None or memory_per_core(instance, counts).max() <= top:
            return counts
    return None


def spread(instance: PlacementInstance, choices: Sequence[int],
           reps: Sequence[int]) -> list[LayerCounts] | None:
    """Place ``reps[l]`` replicas AG by AG, each where the busiest resource of the cores it
    touches grows least (the home first, then each further AG on the home or elsewhere, a
    remote AG charging partial-sum traffic to both ends, and to the off-chip link if on
    another chip); None when they do not fit.

    Unlike :func:`pack` (whole replicas onto the least loaded core) this splits replicas when
    the cores serialize their AGs' MVMs (e.g. PUMA's in-order issue); it is the
    decomposition's second hint. Replicas go largest AG-time first (LPT).
    """
    n, k = len(instance.layers), instance.cores
    cap, most = instance.crossbars_per_core, instance.max_layers_per_core
    link, ht = instance.link_bytes_per_ns, instance.mode == "ht"
    load = _core_loads(instance)
    names = tuple(load)
    free = np.full(k, cap, dtype=np.int64)
    mem = _memory(instance)
    y = np.zeros((n, k), dtype=np.int64)
    rho = np.zeros_like(y)
    ell = np.zeros_like(y)
    chip = np.arange(k) // instance.cores_per_chip
    offlink, offchip = instance.offchip_bytes_per_ns, 0.0  # the link all chips share
    replicas = []
    for i, (layer, ui, r) in enumerate(zip(instance.layers, choices, reps, strict=True)):
        u, m = layer.choices[ui], layer.windows_per_replica(r)
        replicas += [(u.ags * m * u.issue_ns, i)] * r
    replicas.sort(key=lambda x: (-x[0], x[1]))

    def peak(at: np.ndarray | int) -> np.ndarray:
        return _busiest(instance, load)[at]

    for _, i in replicas:
        layer = instance.layers[i]
        u = layer.choices[choices[i]]
        m = layer.windows_per_replica(reps[i])
        x, a = u.crossbars_per_ag, u.ags
        ok = np.ones(k, dtype=bool) if most is None else (y[i] > 0) | (
            (y > 0).sum(axis=0) < most)
        home_add = {"issue": m * u.issue_ns, "vfu": m * u.home_vfu_ns,
                    "local": m * u.home_local_ns}
        if ht:  # a home next to another of the layer's homes shares its loads (Fig. 8c)
            ri = layer.replications.index(reps[i])
            loads = layer.core_load_bytes(ri, rho[i] + 1) - layer.core_load_bytes(ri, rho[i])
            home_add["gport"] = (loads + m * layer.store_bytes) / instance.gm_bytes_per_ns
        else:
            home_add["net_in"] = m * layer.input_bytes / link
            home_add["net_out"] = m * layer.store_bytes / link
        need = a if instance.computing_mode == "CM" else 1
        fits = ok & (free >= need * x) & (mem >= instance.replica_bytes(i, choices[i]))
        if not fits.any():
            return None
        score = np.max([load[name] + home_add.get(name, 0.0) for name in names], axis=0)
        home = int(np.argmin(np.where(fits, score, np.inf)))
        for name, v in home_add.items():
            load[name][home] += np.broadcast_to(v, k)[home]
        _place_on(y, ell, free, i, home, home, x)
        mem[home] -= instance.replica_bytes(i, choices[i])
        rho[i, home] += 1
        send, back = m * u.in_bytes / link, m * u.out_bytes / link
        away = chip != chip[home]
        crossing = m * (u.in_bytes + u.out_bytes) / offlink if offlink else 0.0
        for _ in range(a - 1):
            room = ok & (free >= x) & (mem >= u.remote_bytes)
            room[home] = ok[home] and free[home] >= x
            if instance.computing_mode == "CM":
                room = np.zeros(k, dtype=bool)
                room[home] = True
            if not room.any():
                return None
            there = np.max([load["issue"] + m * u.issue_ns, load["net_in"] + send,
                            load["net_out"] + back, peak(np.arange(k))], axis=0)
            traffic = max(load["net_out"][home] + send, load["net_in"][home] + back)
            serial = load["issue"] + load["net_in"] + load["net_out"]
            if instance.sync:
                there = np.maximum(there, serial + m * u.issue_ns + send + back)
                traffic = max(traffic, serial[home] + send + back)
            there = np.maximum(there, traffic)
            there[home] = max(load["issue"][home] + m * u.issue_ns, peak(home),
                              serial[home] + m * u.issue_ns if instance.sync else 0.0)
            there = np.where(away, np.maximum(there, offchip + crossing), there)
            at = int(np.argmin(np.where(room, there, np.inf)))
            offchip += crossing if away[at] else 0.0
            load["issue"][at] += m * u.issue_ns
            if at != home:
                mem[at] -= u.remote_bytes
                load["net_in"][at] += send
                load["net_out"][at] += back
                load["net_out"][home] += send
                load["net_in"][home] += back
            _place_on(y, ell, free, i, at, home, x)
    return [LayerCounts(ui, r, y[i], rho[i], ell[i])
            for i, (ui, r) in enumerate(zip(choices, reps, strict=True))]


def _even_order(instance: PlacementInstance, choices: Sequence[int],
                reps: Sequence[int]) -> list[int]:
    """:func:`even`'s default order: largest AG first, then most crossbars in all."""
    def size(i: int) -> tuple[int, int, int]:
        u = instance.layers[i].choices[choices[i]]
        return -u.crossbars_per_ag, -u.ags * reps[i] * u.crossbars_per_ag, i
    return sorted(range(len(instance.layers)), key=size)


def even(instance: PlacementInstance, choices: Sequence[int], reps: Sequence[int],
         order: Sequence[int] | None = None, homes_first: bool = False,
         aligned: bool = False) -> list[LayerCounts] | None:
    """LL: every layer's replicas spread over as many cores as they can use, so that no core
    paces a layer (``evaluate.core_floors``) more than it must; None when they do not fit.

    Layers go in ``order`` (default: largest AG first, then most crossbars in all: the
    hardest to pack first). Each replica's home, then each further AG, goes to the fitting
    core where the layer's own busiest resource (their sum with sync communication) grows
    least, then where all the layers' busiest grows least, then where the most crossbars are
    left (so that the small AGs of later layers still find room everywhere); a remote AG
    stays on its home's chip while that has room, and charges its partial-sum traffic to
    both ends. Where :func:`spread` and :func:`level` balance each core's total time, this
    balances each layer's, which is what paces the LL pipeline: on PUMA (in-order issue),
    the restricted diagram's option set for vgg8-28 places at 543.5 us here and at 1200.4 us
    by ``level_search``.

    With ``homes_first``, every replica's home (and the AGs it must keep) is placed before
    any further AG, largest local memory first: where the homes' buffers and the crossbars
    are both nearly full (224x224 inputs on ISAAC: homes of 12 to 36 KB in 60.5 KB cores,
    99.8% of the crossbars), placing homes between the AGs leaves no core with room for
    the last ones.

    With ``aligned`` (several chips), among the cores where the layer's own busiest grows
    least, replica j of r goes nearest chip floor((j + 1/2) chips / r): every layer spreads
    its replicas over the chips in the same order and shares, so that each chip takes the
    windows it makes itself (``evaluate.chip_crossings``: replicas take their window ranges
    in core order) and few cross the off-chip link.
    """
    n, k = len(instance.layers), instance.cores
    most, link = instance.max_layers_per_core, instance.link_bytes_per_ns
    load = _core_loads(instance)
    free = np.full(k, instance.crossbars_per_core, dtype=np.int64)
    mem = _memory(instance)
    y = np.zeros((n, k), dtype=np.int64)
    rho, ell = np.zeros_like(y), np.zeros_like(y)
    chip = np.arange(k) // instance.cores_per_chip
    own = [{name: np.zeros(k) for name in ("issue", "net_in", "net_out")} for _ in range(n)]

    def pick(layer: int, fits: np.ndarray, add: dict[str, np.ndarray], home: int | None = None,
             returns: dict[str, float] | None = None, near: np.ndarray | None = None) -> int:
        """The best fitting core for what ``add`` puts on each core; ``returns``: what the
        ``home`` takes on when the core is another (its partial sums); ``near``: ranks
        cores after the layer's own busiest, before all the layers'."""
        keys = []
        for parts in (load, own[layer]):
            worst = _busiest(instance, {name: v + add[name] if name in add else v
                                        for name, v in parts.items()})
            if home is not None:  # the home's busiest, as a number: this runs per AG
                back = _busiest(instance, {name: float(v[home]) + returns.get(name, 0.0)
                                           for name, v in parts.items()})
                kept_home = worst[home]
                worst = np.maximum(worst, back)
                worst[home] = kept_home
            keys.append(worst)
        if near is not None:
            keys.insert(1, near)
        if most is not None:  # few layers a core: a layer opens a new core only when full
            keys.append(y[layer] == 0)
        ranked = np.lexsort((-free, *keys))
        return int(ranked[np.argmax(fits[ranked])])

    def allowed(i: int) -> np.ndarray:
        return np.ones(k, dtype=bool) if most is None else (y[i] > 0) | (
            (y > 0).sum(axis=0) < most)

    def kept(i: int) -> int:
        """AGs a home keeps at least: all of them in core mode."""
        return instance.layers[i].choices[choices[i]].ags if instance.computing_mode == "CM" \
            else 1

    def place_home(i: int) -> int | None:
        layer = instance.layers[i]
        u, m = layer.choices[choices[i]], layer.windows_per_replica(reps[i])
        home_bytes = instance.replica_bytes(i, choices[i])
        home_add = {"issue": m * u.issue_ns * kept(i),
                    "vfu": m * u.home_vfu_ns, "local": m * u.home_local_ns,
                    "net_in": m * layer.input_bytes / link, "net_out": m * layer.store_bytes / link}
        fits = allowed(i) & (free >= kept(i) * u.crossbars_per_ag) & (mem >= home_bytes)
        if not fits.any():
            return None
        near = None
        if aligned:
            target = (2 * int(rho[i].sum()) + 1) * instance.chips // (2 * reps[i])
            near = np.abs(chip - target)
        home = pick(i, fits, {name: np.full(k, v) for name, v in home_add.items()}, near=near)
        for name, v in home_add.items():
            load[name][home] += v
            if name in own[i]:
                own[i][name][home] += v
        for _ in range(kept(i)):
            _place_on(y, ell, free, i, home, home, u.crossbars_per_ag)
        rho[i, home] += 1
        mem[home] -= home_bytes
        return home

    def place_rest(i: int, home: int) -> bool:
        """The AGs the replica homed on ``home`` does not keep there already (with
        ``homes_first``, at home while it has crossbars: an AG elsewhere takes local memory
        the homes need)."""
        layer = instance.layers[i]
        u, m = layer.choices[choices[i]], layer.windows_per_replica(reps[i])
        x, ok = u.crossbars_per_ag, allowed(i)
        send, back = m * u.in_bytes / link, m * u.out_bytes / link
        away = chip != chip[home]
        for _ in range(u.ags - kept(i)):
            fits = ok & (free >= x) & (mem >= u.remote_bytes)
            fits[home] = ok[home] and free[home] >= x
            if (fits & ~away).any():  # off its chip only when its chip is full
                fits &= ~away
            if homes_first and fits[home]:
                fits[:] = False
                fits[home] = True
            if not fits.any():
                return False
            add = {"issue": np.full(k, m * u.issue_ns), "net_in": np.full(k, send),
                   "net_out": np.full(k, back)}
            add["net_in"][home] = add["net_out"][home] = 0.0
            at = pick(i, fits, add, home, {"net_in": back, "net_out": send})
            if at == home:
                load["issue"][home] += m * u.issue_ns
                own[i]["issue"][home] += m * u.issue_ns
            else:
                for where, what in ((at, {"issue": m * u.issue_ns, "net_in": send,
                                          "net_out": back}),
                                    (home, {"net_in": back, "net_out": send})):
                    for name, v in what.items():
                        load[name][where] += v
                        own[i][name][where] += v
                mem[at] -= u.remote_bytes
            _place_on(y, ell, free, i, at, home, x)
        return True

    layers = list(order if order is not None else _even_order(instance, choices, reps))
    if homes_first:
        rank = {i: j for j, i in enumerate(layers)}
        homes: dict[int, list[int]] = {i: [] for i in layers}
        for i in sorted((i for i in layers for _ in range(reps[i])),
                        key=lambda i: (-instance.replica_bytes(i, choices[i]), rank[i])):
            home = place_home(i)
            if home is None:
                return None
            homes[i].append(home)
        if not all(place_rest(i, home) for i in layers for home in homes[i]):
            return None
    else:
        for i in layers:
            for _ in range(reps[i]):
                home = place_home(i)
                if home is None or not place_rest(i, home):
                    return None
    return [LayerCounts(ui, r, y[i], rho[i], ell[i])
            for i, (ui, r) in enumerate(zip(choices, reps, strict=True))]


EVEN_TRIES = 8
""":func:`even_search`: re-placements at most (each a few tens of ms on resnet18-28)."""


def even_search(instance: PlacementInstance, choices: Sequence[int],
                reps: Sequence[int], clock: Clock | None = None) -> list[LayerCounts] | None:
    """LL: the best (by ``predict``) of :func:`even` placements, homes among the AGs and
    homes first, in each the layer whose D_l (``evaluate.whole_ns``) is furthest above its
    option's floor moved to the front of the order each time (placed first, it takes the
    cores it needs before the others fill them), until that layer is at its floor or in
    front already, or ``EVEN_TRIES`` ends; on several chips, each also ``aligned``.
    vgg8-28 on PUMA, the restricted diagram's option set (floor 488.0 us; 446.8 before
    ``home_floor`` counted the AGs a core holds): 543.5 us in the default order; Conv_1,
    then Conv_3 first, 496.9 us. resnet18-28 on Arch-C (16 chips), its set: 367.4 us,
    aligned 339.5 us, the set's floor. Each :func:`even` is charged to ``clock`` (if given)."""
    clock = clock or Clock()
    n = len(instance.layers)
    floor = [floor_whole(instance, i, choices[i], instance.layers[i].replications.index(r))
             for i, r in enumerate(reps)]
    best, value = None, math.inf
    for homes_first, aligned in itertools.product((False, True), (False, True)):
        if aligned and instance.chips == 1:
            continue
        order = None
        _charge_passes(clock, reps, PASS_COST["even"])
        current = even(instance, choices, reps, homes_first=homes_first, aligned=aligned)
        for attempt in range(EVEN_TRIES + 1):
            if current is None:
                break
            v = predict(instance, current).time_ns
            if v < value:
                best, value = current, v
            whole = whole_ns(instance, current)
            worst = max(range(n), key=lambda i: whole[i] - floor[i])
            if (attempt == EVEN_TRIES or whole[worst] <= floor[worst] * (1 + 1e-9)
                    or order and order[0] == worst):
                break
            order = [worst, *(i for i in (order or _even_order(instance, choices, reps))
                              if i != worst)]
            _charge_passes(clock, reps, PASS_COST["even"])
            current = even(instance, choices, reps, order, homes_first, aligned)
    return best


def scattered(instance: PlacementInstance, counts: Sequence[LayerCounts]) -> bool:
    """Whether some home keeps fewer of its replica's AGs than the formulation allows
    (``PlacementInstance.home_least``: all in core mode, a share with sync links in HT, else
    one).
    Such a home meets each of its AGs elsewhere in a paired transfer every window, and
    in-order cores wait for each other there, which the model does not count:
    resnet34/PUMA HT, :func:`spread`'s placement of the decomposition's master set (763 of
    888 AGs off their homes, 5.7 layers a core) is 3964 us in the model and 7.28 ms
    simulated, balance's 5322 us and 5.43 ms. The decomposition takes no such placement as
    an incumbent (the greedy placements it seeds from may be)."""
    return any((np.asarray(c.ell) < instance.home_least(layer.choices[c.choice])
                * np.asarray(c.rho)).any()
               for layer, c in zip(instance.layers, counts, strict=True))


LEVEL_ORDERS = ("crossbars", "time", "density")
"""Orders :func:`level` places replicas in: largest AG first, busiest AG first, or the most
AG time per crossbar first."""
SHARE_MOST = 3
"""``level`` with ``share`` prefers a core holding fewer homes of the layer than this. The model
sees the loads saved, not the simulator's cost of a core serving many homes' windows:
resnet18-28/isaac HT, CP-SAT's options, simulated 139.8 us without sharing, 138.5 with
pairs, 137.4 with three, 144.2 with four, 154.2 unbounded (11 of Conv_0's 14 homes on one
core), while the model ranks them 111.3, 109.8, 109.8, 109.8, 109.8 us. Three (two until
session 23): resnet34/isaac HT's master options place at 809.8 us instead of 810.5 (gap
1.002% -> 0.92%, simulated 953.5 -> 978.5 us); the 28x28 rows place as before."""


def level(instance: PlacementInstance, choices: Sequence[int], reps: Sequence[int],
          cap: float, order: str = "crossbars", share: bool = False,
          ) -> list[LayerCounts] | None:
    """Place ``reps[l]`` replicas so that no core's busiest resource (``per_core``'s, and
    their sum with sync communication) passes ``cap`` ns; None when the greedy fails.

    Bin packing on two axes, crossbars and time, replicas in ``order`` (``LEVEL_ORDERS``): a
    replica's home is the core that can take the most of its AGs under the cap (the least
    busy of those; with ``share``, in HT, one already home to fewer than ``SHARE_MOST``
    replicas of the layer, whose input loads it shares on the global memory), and its other
    AGs, each charging its input slice and partial sums to both ends, go to the cores taking
    the most of them (the home's chip first). Unlike :func:`pack` it mixes layers on a core,
    so cores of dense AGs (many windows per crossbar, e.g. PUMA's early convolutions) share
    their time with sparse ones.
    ``level_search`` bisects the cap.
    """
    n, k = len(instance.layers), instance.cores
    most, link, ht = instance.max_layers_per_core, instance.link_bytes_per_ns, \
        instance.mode == "ht"
    load = _core_loads(instance)
    names = tuple(load)
    free = np.full(k, instance.crossbars_per_core, dtype=np.int64)
    mem = _memory(instance)
    y, rho, ell = (np.zeros((n, k), dtype=np.int64) for _ in range(3))
    chip = np.arange(k) // instance.cores_per_chip

    def most_under_cap(rates: dict[str, float], fixed: dict[str, np.ndarray | float],
                       upper: np.ndarray) -> np.ndarray:
        """Per core, the largest count n in [1, upper] with every resource, load + fixed +
        n rate, within the cap (0 if none)."""
        if instance.sync:
            rates = {**rates, "serial": rates.get("issue", 0.0) + rates.get("net_in", 0.0)
                     + rates.get("net_out", 0.0)}
            fixed = {**fixed, "serial": fixed.get("issue", 0.0) + fixed.get("net_in", 0.0)
                     + fixed.get("net_out", 0.0)}
        hi, lo = upper.astype(float), np.ones(k)
        for name in (*names, "serial") if instance.sync else names:
            base = (load["issue"] + load["net_in"] + load["net_out"] if name == "serial"
                    else load[name]) + fixed.get(name, 0.0) - cap
            rate = rates.get(name, 0.0)
            if rate > 0:
                hi = np.minimum(hi, np.floor(-base / rate + 1e-9))
            elif rate < 0:
                lo = np.maximum(lo, np.ceil(base / -rate - 1e-9))
            else:
                hi = np.where(base > 1e-9, 0, hi)
        return np.where(hi >= lo, hi, 0).astype(np.int64)

    replicas = []
    for i, (layer, ui, r) in enumerate(zip(instance.layers, choices, reps, strict=True)):
        u, m = layer.choices[ui], layer.windows_per_replica(r)
        key = {"crossbars": (-u.crossbars_per_ag, -m * u.issue_ns),
               "time": (-m * u.issue_ns, -u.crossbars_per_ag),
               "density": (-m * u.issue_ns / u.crossbars_per_ag, -u.crossbars_per_ag)}[order]
        replicas += [(*key, i)] * r
    replicas.sort()
    for *_, i in replicas:
        layer = instance.layers[i]
        u = layer.choices[choices[i]]
        m, x, a = layer.windows_per_replica(reps[i]), u.crossbars_per_ag, u.ags
        ok = np.ones(k, dtype=bool) if most is None else (y[i] > 0) | (
            (y > 0).sum(axis=0) < most)
        slice_in, slice_out = m * u.in_bytes / link, m * u.out_bytes / link
        home = {"vfu": m * u.home_vfu_ns, "local": m * u.home_local_ns,
                "net_out": a * slice_in, "net_in": a * slice_out}
        if ht:
            ri = layer.replications.index(reps[i])
            loads = layer.core_load_bytes(ri, rho[i] + 1) - layer.core_load_bytes(ri, rho[i])
            home["gport"] = (loads + m * layer.store_bytes) / instance.gm_bytes_per_ns
        else:
            home["net_in"] += m * layer.input_bytes / link
            home["net_out"] += m * layer.store_bytes / link
        upper = np.where(ok & (mem >= instance.replica_bytes(i, choices[i])), free // x, 0)
        upper = np.minimum(upper, a)
        rates = {"issue": m * u.issue_ns, "net_out": -slice_in, "net_in": -slice_out}
        take = most_under_cap(rates, home, upper)
        if instance.computing_mode == "CM":
            take = np.where(take == a, a, 0)
        # a home keeps most of what a core can hold (``PlacementInstance.home_share``, on
        # every target: what the formulation asks in HT with sync links, so that level's
        # placements are the model's there too): a replica scattered over many cores
        # makes its home a hub that must meet every one of them, which the model does not
        # count (PUMA HT, sync: -40% instead of -7% prediction error)
        take = np.where(take >= instance.home_share(u), take, 0)
        if not take.any():
            return None
        overlap = ht and layer.overlap(layer.replications.index(reps[i])) > 0
        sharing = ((rho[i] > 0) & (rho[i] < SHARE_MOST) if share and overlap
                   else np.zeros(k, dtype=bool))
        at = int(np.lexsort((_busiest(instance, load), ~sharing, -take))[0])
        count = int(take[at])
        for name, v in home.items():  # gport's differs per core (loads shared by homes)
            load[name][at] += v[at] if np.ndim(v) else v
        load["issue"][at] += count * m * u.issue_ns
        load["net_out"][at] -= count * slice_in
        load["net_in"][at] -= count * slice_out
        mem[at] -= instance.replica_bytes(i, choices[i])
        free[at] -= count * x
        y[i, at] += count
        ell[i, at] += count
        rho[i, at] += 1
        left, home_at = a - count, at
        rates = {"issue": m * u.issue_ns, "net_in": slice_in, "net_out": slice_out}
        while left:
            upper = np.where(ok, np.minimum(free // x, left), 0)
            if u.remote_bytes:
                upper = np.minimum(upper, mem // u.remote_bytes)
            upper[home_at] = 0
            take = most_under_cap(rates, {}, upper)
            if not take.any():
                return None
            # (np.lexsort: the last key first) a core taking some, on the home's chip first
            at = int(np.lexsort((_busiest(instance, load), -take, chip != chip[home_at],
                                 take == 0))[0])
            count = int(take[at])
            for name, v in rates.items():
                load[name][at] += count * v
            mem[at] -= count * u.remote_bytes
            free[at] -= count * x
            y[i, at] += count
            left -= count
    return [LayerCounts(ui, r, y[i], rho[i], ell[i])
            for i, (ui, r) in enumerate(zip(choices, reps, strict=True))]


def level_search(instance: PlacementInstance, choices: Sequence[int], reps: Sequence[int],
                 objective: str, steps: int = 10,
                 clock: Clock | None = None) -> list[LayerCounts] | None:
    """The best (by ``predict``) of :func:`level` placements in every order (in HT, homes
    shared or not), the cap bisected between the cores' mean MVM issue time and the busiest
    core of :func:`pack`'s placement (or all the MVM issue on one core; in HT, its cycle time
    if longer: where the global memory binds, busier cores that share loads pay off);
    :func:`pack`'s placement if none is better. Each pass over the replicas is charged to
    ``clock`` (if given; ``_charge_passes``)."""
    clock = clock or Clock()
    work = sum(layer.choices[ui].ags * r * layer.windows_per_replica(r)
               * layer.choices[ui].issue_ns
               for layer, ui, r in zip(instance.layers, choices, reps, strict=True))
    best = pack(instance, choices, reps)
    _charge_passes(clock, reps, PASS_COST["pack"])
    value = predict(instance, best).objective(objective) if best is not None else math.inf
    top = max(_core_time(instance, best), work / instance.cores) if best is not None else work
    if best is not None and instance.mode == "ht":
        top = max(top, predict(instance, best).time_ns)
    shares = (False, True) if instance.mode == "ht" else (False,)
    for order, share in itertools.product(LEVEL_ORDERS, shares):
        lo, hi = work / instance.cores, top
        _charge_passes(clock, reps, PASS_COST["level"])
        if level(instance, choices, reps, hi, order, share) is None:
            continue  # this order fails even at the loosest cap
        for _ in range(steps):
            cap = (lo + hi) / 2
            _charge_passes(clock, reps, PASS_COST["level"])
            found = level(instance, choices, reps, cap, order, share)
            if found is None:
                lo = cap
                continue
            hi = cap
            v = predict(instance, found).objective(objective)
            if v < value:
                best, value = found, v
    return best


PASS_COST = {"pack": 0.5, "level": 1.0, "even": 2.5, "spread": 3.0, "fill": 0.5}
"""What one pass of each greedy placement costs a replica, in ``clock.WORK_S['replica']``
(measured on seven benchmark option sets: 16 to 73 us a replica for ``pack``, 20 to 113
for ``level``, 88 to 288 for ``even``, 129 to 290 for ``spread``; on the Arch-C 224x224 HT
master sets 14 to 23 for ``fill``; nearly independent of the cores, over which numpy
sums)."""


def _charge_passes(clock: Clock, reps: Sequence[int], cost: float) -> None:
    clock.charge(cost * sum(reps), "replica")


def fill(instance: PlacementInstance, choices: Sequence[int],
         reps: Sequence[int]) -> list[LayerCounts] | None:
    """Place ``reps[l]`` replicas where the crossbars and the local memory are nearly full
    (time is not looked at), or None when they do not fit.

    Replicas go by AG size (crossbars per AG), largest first, then by home memory, largest
    first; each home goes to the fitting core where it keeps the most of its AGs (then the
    one left with the least memory), and each AG it cannot keep, right after it, to the core
    with the most local memory left that has the crossbars. Largest AG first, sizes that
    divide each other (1, 2, 4, 8 crossbars) never leave a core's crossbars too split for the
    next AG: resnet34 on Arch-C (HT), the master's option set, 508 of 512 crossbars and homes
    of 8 to 37 KB on cores of 60.5 KB, which :func:`level`, :func:`pack`, :func:`spread` and
    :func:`even` all fail to place, fits at the set's bound, where CP-SAT's local search
    (``packing.pack_exact``) needed seconds."""
    n, k = len(instance.layers), instance.cores
    cm, most = instance.computing_mode == "CM", instance.max_layers_per_core
    free = np.full(k, instance.crossbars_per_core, dtype=np.int64)
    mem = _memory(instance)
    y, rho, ell = (np.zeros((n, k), dtype=np.int64) for _ in range(3))
    layers_on = np.zeros(k, dtype=np.int64)

    def room(i: int, x: int, nbytes: int) -> np.ndarray:
        ok = (free >= x) & (mem >= nbytes)
        if most is not None:
            ok &= (y[i] > 0) | (layers_on < most)
        return ok

    def put(i: int, at: int, count: int, x: int, nbytes: int) -> None:
        layers_on[at] += y[i, at] == 0
        y[i, at] += count
        free[at] -= count * x
        mem[at] -= nbytes

    order = sorted((-instance.layers[i].choices[ui].crossbars_per_ag,
                    -instance.replica_bytes(i, ui), i)
                   for i, ui in enumerate(choices) for _ in range(reps[i]))
    for _, _, i in order:
        u = instance.layers[i].choices[choices[i]]
        x, a, hb = u.crossbars_per_ag, u.ags, instance.replica_bytes(i, choices[i])
        keep = np.minimum(free // x, a)
        ok = room(i, x, hb) & ((keep == a) if cm else True)
        if not ok.any():
            return None
        at = int(np.lexsort((mem - hb, -keep, ~ok))[0])
        put(i, at, int(keep[at]), x, hb)
        rho[i, at] += 1
        ell[i, at] += keep[at]
        for _ in range(a - int(keep[at])):
            ok = room(i, x, u.remote_bytes)
            ok[at] = False
            if not ok.any():
                return None
            put(i, int(np.lexsort((-mem, ~ok))[0]), 1, x, u.remote_bytes)
    return [LayerCounts(ui, r, y[i], rho[i], ell[i])
            for i, (ui, r) in enumerate(zip(choices, reps, strict=True))]


def _core_loads(instance: PlacementInstance) -> dict[str, np.ndarray]:
    """Per-core busy time (ns) of each resource ``per_core`` counts, before any replica:
    in HT the vector layers' share of every core's vector unit and global port."""
    load = {name: np.zeros(instance.cores)
            for name in ("issue", "vfu", "local", "gport", "net_in", "net_out")}
    if instance.mode == "ht":
        load["vfu"] += instance.vector_core_ns["vfu"]
        load["gport"] += instance.vector_core_ns["gport"]
    return load


def _busiest(instance: PlacementInstance, load: dict[str, np.ndarray]) -> np.ndarray:
    """Per core (or, given numbers, for one), the busiest of the per-core resources in
    ``load`` (issue, vfu, local, gport, net_in, net_out) and, with sync communication, of
    their transfers and MVM issue added up (transfers block their cores)."""
    worst = functools.reduce(np.maximum, load.values())  # not np.max of a list: half the time
    if instance.sync:
        worst = np.maximum(worst, load["issue"] + load["net_in"] + load["net_out"])
    return worst


def _core_time(instance: PlacementInstance, counts: list[LayerCounts]) -> float:
    """The busiest per-core resource of a placement (ns)."""
    return max(float(v.max()) for v in per_core(instance, counts).values())


def _memory(instance: PlacementInstance) -> np.ndarray:
    """Local memory left per core (bytes); unbounded when the instance has no limit."""
    top = instance.local_memory_bytes
    return np.full(instance.cores, np.iinfo(np.int64).max // 4 if top is None else top,
                   dtype=np.int64)


def _place_on(y, ell, free, layer: int, core: int, home: int, crossbars: int) -> None:
    y[layer, core] += 1
    ell[layer, core] += core == home
    free[core] -= crossbars


def _place(instance, choices, reps, cores, balanced: bool) -> np.ndarray | None:
    n, k = len(instance.layers), instance.cores
    cap, most = instance.crossbars_per_core, instance.max_layers_per_core
    free = np.full(k, cap, dtype=np.int64)
    mem = _memory(instance)
    load = np.zeros(k)
    y = np.zeros((n, k), dtype=np.int64)
    nlayers = np.zeros(k, dtype=np.int64)
    loads = _load_per_ag(instance, choices, reps)
    sizes = [(layer.choices[u].ags, layer.choices[u].crossbars_per_ag)
             for layer, u in zip(instance.layers, choices, strict=True)]
    order = sorted(range(n), key=lambda i: (-sizes[i][0] * sizes[i][1], i))
    for i in order:
        a, x = sizes[i]
        allowed = np.zeros(k, dtype=bool)
        if cores is None:
            allowed[:] = True
        else:
            allowed[list(cores[i])] = True
        ring = np.flatnonzero(allowed)
        per_ag, per_home = loads[i]
        for _ in range(reps[i]):
            ok = allowed if most is None else allowed & ((y[i] > 0) | (nlayers < most))
            whole = instance.replica_bytes(i, choices[i])
            fit = ok & (free >= a * x) & (mem >= whole)
            if fit.any():
                at = int(np.argmin(np.where(fit, load, np.inf))) if balanced else int(
                    np.argmax(fit))
                nlayers[at] += y[i, at] == 0
                y[i, at] += a
                free[at] -= a * x
                mem[at] -= whole
                load[at] += a * per_ag + per_home
                continue
            if instance.computing_mode == "CM":
                return None
            slots = np.where(ok, free // x, 0)
            if slots.sum() < a:
                return None
            # on a chip that holds the whole replica if there is one (no off-chip traffic)
            per_chip = slots.reshape(-1, instance.cores_per_chip).sum(axis=1)
            home = int(np.argmax(np.where(np.repeat(per_chip, instance.cores_per_chip) >= a,
                                          slots, -1))) if per_chip.max() >= a else int(
                np.argmax(slots))
            start = int(np.searchsorted(ring, home))
            mine = ring // instance.cores_per_chip == home // instance.cores_per_chip
            rolled = np.roll(ring, -start)
            need = a
            for at in np.concatenate([rolled[np.roll(mine, -start)],
                                      rolled[~np.roll(mine, -start)]]):
                if need == 0:
                    break
                if not ok[at] or slots[at] == 0:
                    continue
                take = int(min(need, slots[at]))
                nlayers[at] += y[i, at] == 0
                y[i, at] += take
                free[at] -= take * x
                load[at] += take * per_ag + (per_home if need == a else 0.0)
                need -= take
                if most is not None:
                    ok = allowed & ((y[i] > 0) | (nlayers < most))
    return y


def _snap(layer: PlacementLayer, r: float) -> int:
    """The largest admissible replication <= r (same windows per replica as r), at least 1."""
    reps = layer.replications
    return reps[max(0, bisect.bisect_right(reps, r) - 1)]


def _step(layer: PlacementLayer, r: int, by: int) -> int | None:
    """The admissible replication ``by`` places after (or before, by < 0) ``r``, or None."""
    j = layer.replications.index(r) + by
    return layer.replications[j] if 0 <= j < len(layer.replications) else None


def _replica_xbars(instance: PlacementInstance, choices: Sequence[int]) -> list[int]:
    return [layer.choices[u].ags * layer.choices[u].crossbars_per_ag
            for layer, u in zip(instance.layers, choices, strict=True)]


def _infeasible(instance: PlacementInstance, method: str) -> InfeasibleError:
    return InfeasibleError(f"{instance.model}: one replica of every layer does not pack onto "
                           f"the {instance.cores} cores of {instance.target} ({method})")


def _fit(instance: PlacementInstance, choices: Sequence[int], reps: Sequence[int], method: str,
         *, cores: Sequence[Sequence[int]] | None = None) -> list[LayerCounts]:
    """Pack ``reps``, reducing the largest factor (lowest layer on ties) until it packs."""
    reps = list(reps)
    while True:
        counts = pack(instance, choices, reps, cores=cores)
        if counts is not None:
            return counts
        movable = [i for i, layer in enumerate(instance.layers)
                   if reps[i] > layer.replications[0]]
        if not movable:
            raise _infeasible(instance, method)
        i = max(movable, key=lambda j: (reps[j], -j))
        reps[i] = _step(instance.layers[i], reps[i], -1)


def _time(layer: PlacementLayer, choice: int, r: int) -> float:
    return layer.windows_per_replica(r) * layer.choices[choice].ag_ns


def balance(instance: PlacementInstance, objective: str = "latency") -> list[LayerCounts]:
    """PIMCOMP-NN balance: replicate the slowest layer while crossbars allow, then pack.

    If the result does not pack, the last replicas given are taken back (binary search over
    the greedy's steps).
    """
    choices = default_choices(instance)
    size = _replica_xbars(instance, choices)
    layers = instance.layers
    reps = [layer.replications[0] for layer in layers]
    used = sum(s * r for s, r in zip(size, reps, strict=True))
    total = instance.cores * instance.crossbars_per_core
    steps = [list(reps)]
    while True:
        i = max(range(len(layers)), key=lambda j: (_time(layers[j], choices[j], reps[j]), -j))
        nxt = _step(layers[i], reps[i], 1)
        if nxt is None or used + (nxt - reps[i]) * size[i] > total:
            break
        used += (nxt - reps[i]) * size[i]
        reps[i] = nxt
        steps.append(list(reps))
    counts = pack(instance, choices, steps[-1])
    if counts is not None:
        return counts
    if pack(instance, choices, steps[0]) is None:
        raise _infeasible(instance, "balance")
    lo, hi = 0, len(steps) - 1  # steps[lo] packs, steps[hi] does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pack(instance, choices, steps[mid]) is None:
            hi = mid
        else:
            lo = mid
    return pack(instance, choices, steps[lo])


def uniform(instance: PlacementInstance, objective: str = "latency") -> list[LayerCounts]:
    """PIMCOMP-NN uniform: the largest factor f, the same for every layer, that packs.

    A layer takes the largest admissible replication <= f (same windows per replica as f).
    """
    choices = default_choices(instance)
    size = _replica_xbars(instance, choices)
    layers = instance.layers

    def reps_of(f: int) -> list[int]:
        return [_snap(layer, f) for layer in layers]

    counts = _largest_packing(instance, choices, size, reps_of, lowest=1)
    if counts is None:
        raise _infeasible(instance, "uniform")
    return counts


def _largest_packing(instance: PlacementInstance, choices: Sequence[int], size: list[int],
                     reps_of: Callable[[int], list[int]], lowest: int,
                     ) -> list[LayerCounts] | None:
    """The placement of the largest scale g >= ``lowest`` whose replications ``reps_of(g)``
    fit the crossbars and pack; None if none does."""
    total = instance.cores * instance.crossbars_per_core
    g = max(layer.replications[-1] for layer in instance.layers)
    while g > 1 and sum(x * r for x, r in zip(size, reps_of(g), strict=True)) > total:
        g -= 1
    tried = None
    for scale in range(g, lowest - 1, -1):
        reps = reps_of(scale)
        if reps == tried:
            continue
        tried = reps
        counts = pack(instance, choices, reps)
        if counts is not None:
            return counts
    return None


def w0h0(instance: PlacementInstance, objective: str = "latency") -> list[LayerCounts]:
    """PIMCOMP-NN W0H0: factor s * ceil(W_l / W_base), W_base the second smallest window count.

    ``s`` is the largest scale whose replicas pack; if s = 1 does not, the largest factors
    are reduced until they do.
    """
    choices = default_choices(instance)
    size = _replica_xbars(instance, choices)
    layers = instance.layers
    distinct = sorted({layer.windows for layer in layers if len(layer.replications) > 1})
    base = distinct[1] if len(distinct) > 1 else (distinct[0] if distinct else 1)
    ratio = [-(-layer.windows // base) for layer in layers]

    def reps_of(s: int) -> list[int]:
        return [_snap(layer, s * q) for layer, q in zip(layers, ratio, strict=True)]

    counts = _largest_packing(instance, choices, size, reps_of, lowest=2)
    return counts if counts is not None else _fit(instance, choices, reps_of(1), "w0h0")


def one_layer_per_core(instance: PlacementInstance,
                       objective: str = "latency") -> list[LayerCounts]:
    """Polyhedral-like: each core holds AGs of one layer; layers replicate into their cores.

    Every layer starts with the cores one replica needs; spare cores go, a few at a time, to
    the slowest layer (as many as its next admissible replication needs); each layer then
    takes the largest replication its cores hold, placed on consecutive cores.
    """
    choices = default_choices(instance)
    layers = instance.layers
    cap = instance.crossbars_per_core

    def cores_for(i: int, r: int) -> int:
        c = layers[i].choices[choices[i]]
        whole = cap // (c.ags * c.crossbars_per_ag)
        if instance.local_memory_bytes is not None:
            whole = min(whole, instance.local_memory_bytes // instance.replica_bytes(
                i, choices[i]))
        if whole or instance.computing_mode == "CM":
            return -(-r // max(whole, 1)) if whole else instance.cores + 1
        return -(-r * c.ags // (cap // c.crossbars_per_ag))

    reps = [layer.replications[0] for layer in layers]
    give = [cores_for(i, r) for i, r in enumerate(reps)]
    spare = instance.cores - sum(give)
    if spare < 0:
        raise InfeasibleError(f"{instance.model}: one layer per core needs {sum(give)} cores, "
                              f"{instance.target} has {instance.cores}")
    while True:
        i = max(range(len(layers)), key=lambda j: (_time(layers[j], choices[j], reps[j]), -j))
        nxt = _step(layers[i], reps[i], 1)
        if nxt is None or cores_for(i, nxt) - give[i] > spare:
            break
        spare -= cores_for(i, nxt) - give[i]
        give[i] = cores_for(i, nxt)
        reps[i] = nxt
    for i, layer in enumerate(layers):  # use every core a layer was given
        while (nxt := _step(layer, reps[i], 1)) is not None and cores_for(i, nxt) <= give[i]:
            reps[i] = nxt
    starts = np.cumsum([0, *give])
    blocks = [range(int(starts[i]), int(starts[i + 1])) for i in range(len(layers))]
    return _fit(instance, choices, reps, "one-layer-per-core", cores=blocks)


def no_replication(instance: PlacementInstance,
                   objective: str = "latency") -> list[LayerCounts]:
    """One replica per layer, AGs next-fit core after core (a whole replica in core mode)."""
    choices = default_choices(instance)
    layers = instance.layers
    cap, most, k = instance.crossbars_per_core, instance.max_layers_per_core, instance.cores
    y = np.zeros((len(layers), k), dtype=np.int64)
    core, used, here = 0, 0, 0
    for i, layer in enumerate(layers):
        c = layer.choices[choices[i]]
        if instance.computing_mode == "CM" and used + c.ags * c.crossbars_per_ag > cap:
            core, used, here = core + 1, 0, 0
        for _ in range(c.ags):
            if used + c.crossbars_per_ag > cap or (
                    y[i, min(core, k - 1)] == 0 and most is not None and here >= most):
                core, used, here = core + 1, 0, 0
            if core >= k:
                return _fit(instance, choices, [1] * len(layers), "no-replication")
            here += y[i, core] == 0
            y[i, core] += 1
            used += c.crossbars_per_ag
    counts = _counts(instance, choices, y)
    top = instance.local_memory_bytes
    if top is not None and memory_per_core(instance, counts).max() > top:
        return _fit(instance, choices, [1] * len(layers), "no-replication")
    return counts


BASELINES: dict[str, Baseline] = {
    "balance": balance,
    "uniform": uniform,
    "w0h0": w0h0,
    "one-layer-per-core": one_layer_per_core,
    "no-replication": no_replication,
}
"""The baseline engines by name."""
