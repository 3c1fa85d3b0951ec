"""The placement cost model: what a placement predicts, per core and per resource.

This is the formulation's objective evaluated on a concrete placement (same symbols as
``formulations/placement.md``), so the exact engines, the brute force, the baselines and the
GA all score placements with one function. A placement is held as counts per layer and core:

* ``y[k]``: AGs of the layer on core k;
* ``rho[k]``: replicas whose home (first AG) is core k;
* ``ell[k]``: AGs on core k of replicas homed on k (the rest travel: partial-sum traffic).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from pimsolve.errors import InputError
from pimsolve.ir.mapping import LayerPlacement, Mapping, Partition
from pimsolve.stages.placement.instance import Choice, PlacementInstance

__all__ = ["LayerCounts", "Prediction", "predict", "counts_of", "decode", "RESOURCES",
           "CHAIN_GM_SHARE", "CHAIN_TAIL_SHARE", "per_core",
           "window_ns", "pipeline", "window_ready", "whole_ns", "replica_bounds", "core_floors",
           "core_busy", "core_inbound", "span_floors", "offchip_floors", "home_floor",
           "floor_latency", "floor_whole", "floor_span", "PERIOD_NS", "period_ns", "replica_done",
           "memory_per_core", "ChipCrossings", "chip_crossings"]

RESOURCES = ("ag", "issue", "vfu", "local", "gport", "net_out", "net_in", "serial", "gm",
             "chain", "offchip", "path")
"""What can bound the cycle (HT) or the latency (LL)."""
CHAIN_GM_SHARE = 0.3
"""HT, resource ``chain``: the share beta of the global memory's busy time that an AG chain
waits for its inputs, T >= t^ag m + beta G, G the chips' mean (a chip's memory serves one
transfer at a time, in order of request, and a core asks for one at a time, so where the
memory is busy a chain's loads queue behind the other cores'). Fitted to the simulator on
56 HT placements (``formulations/placement.md``, fidelity)."""
CHAIN_TAIL_SHARE = 0.1
"""HT, resource ``gm`` too: T >= G + gamma t^ag m, the chips' mean global memory and this
share gamma of the longest AG chain: where the memory binds, the simulator's cycle grows
with the chain the memory waits on at the cycle's end (googlenet/ISAAC HT, six placements
the model valued within 2.3% of each other: 1.04 G with a 156.8 us chain, 1.30 G with a
744 us one). On 48 HT placements of ISAAC and Arch-C (``formulations/placement.md``,
fidelity) 0.1 takes the median error 5.6% -> 4.0% and 0.2 to 2.8%, neither over-predicting
any by more than 1.8%; but with 0.2 the optimum of resnet18-28/ISAAC HT is a placement the
simulator runs 18% slower (under the grant order), with 0.1 CP-SAT's three ISAAC HT rows
simulate as fast as before or faster (resnet18-28 7852 against 7853 /s, resnet34 1158
against 1115, googlenet 868.2 against 813.5)."""


@dataclass(frozen=True)
class LayerCounts:
    """One layer's decisions: unfolding choice, replication, and per-core counts."""

    choice: int
    replication: int
    y: np.ndarray
    rho: np.ndarray
    ell: np.ndarray


@dataclass(frozen=True)
class Prediction:
    """The model's values for one placement (ns, pJ)."""

    time_ns: float
    """HT: cycle time; LL: latency."""
    resources: dict[str, float]
    """The largest value of each resource (see ``RESOURCES``)."""
    energy_pj: float
    depth: int
    layer_finish_ns: dict[str, float] = field(default_factory=dict)
    """LL: when each crossbar layer's last window is done (``pipeline``'s F_l, the layer's
    off-chip floor included), by layer name; HT: empty."""

    @property
    def bottleneck(self) -> str:
        return max(self.resources, key=self.resources.__getitem__)

    @property
    def latency_ns(self) -> float:
        return self.time_ns * self.depth if self.depth > 1 else self.time_ns

    @property
    def throughput_per_s(self) -> float:
        return 1e9 / self.time_ns if self.time_ns > 0 else float("inf")

    def objective(self, name: str) -> float:
        """The value of objective ``name`` (latency, throughput, energy, edp), to minimize."""
        if name == "energy":
            return self.energy_pj
        if name == "edp":
            return self.energy_pj * self.time_ns
        return self.time_ns


def per_core(instance: PlacementInstance, counts: list[LayerCounts]) -> dict[str, np.ndarray]:
    """Busy time (ns) of every per-core resource, per core."""
    k = instance.cores
    out = {name: np.zeros(k) for name in ("issue", "vfu", "local", "gport", "net_out",
                                          "net_in")}
    out["vfu"] += instance.vector_core_ns["vfu"] if instance.mode == "ht" else 0.0
    out["gport"] += instance.vector_core_ns["gport"] if instance.mode == "ht" else 0.0
    link = instance.link_bytes_per_ns
    for layer, c in zip(instance.layers, counts, strict=True):
        u = layer.choices[c.choice]
        m = layer.windows_per_replica(c.replication)
        py, prho, pell = c.y * m, c.rho * m, c.ell * m
        out_ags = u.ags * prho - pell  # AG-windows of home replicas run elsewhere
        in_ags = py - pell  # AG-windows run here for replicas homed elsewhere
        out["issue"] += u.issue_ns * py
        out["vfu"] += u.home_vfu_ns * prho
        out["local"] += u.home_local_ns * prho
        if instance.mode == "ht":
            loads = layer.core_load_bytes(layer.replications.index(c.replication), c.rho)
            out["gport"] += (loads + prho * layer.store_bytes) / instance.gm_bytes_per_ns
        else:
            out["net_in"] += prho * layer.input_bytes / link
            out["net_out"] += prho * layer.store_bytes / link
        out["net_out"] += (u.in_bytes * out_ags + u.out_bytes * in_ags) / link
        out["net_in"] += (u.out_bytes * out_ags + u.in_bytes * in_ags) / link
    if instance.sync:
        out["serial"] = out["issue"] + out["net_in"] + out["net_out"]
    return out


def memory_per_core(instance: PlacementInstance, counts: list[LayerCounts]) -> np.ndarray:
    """Local memory (bytes) each core needs: sum of mu^h + A mu^a per home replica and mu^r
    per AG off its home."""
    out = np.zeros(instance.cores, dtype=np.int64)
    for li, (layer, c) in enumerate(zip(instance.layers, counts, strict=True)):
        u = layer.choices[c.choice]
        out += instance.replica_bytes(li, c.choice) * np.asarray(c.rho) + u.remote_bytes * (
            np.asarray(c.y) - np.asarray(c.ell))
    return out


@dataclass(frozen=True)
class ChipCrossings:
    """What a placement sends over the off-chip link per inference."""

    ag_windows: dict[tuple[int, int], int]
    """o[l, c]: AG-windows run on chip c for replicas of layer l homed on another chip
    (max(0, sum_k in c of y m - A_u rho m)); each sends its input slice and partial sums."""
    edge_overlap: dict[tuple[int, int], int]
    """v[e, c] (LL): of edge e's data, what chip c both makes and takes, in 1/den_e bytes: the
    overlap of c's producer and consumer window ranges (replicas take ranges in core order)."""
    edge_bytes: dict[int, int]
    """x[e] (LL): bytes of edge e that cross chips, ceil(phi (B_e - sum_c v[e, c] / den_e)):
    what no chip makes for itself, times the fan-out of the n cores homing the consumer."""

    def total_bytes(self, instance: PlacementInstance, counts: list[LayerCounts]) -> int:
        ags = sum(n * (instance.layers[li].choices[counts[li].choice].in_bytes
                       + instance.layers[li].choices[counts[li].choice].out_bytes)
                  for (li, _), n in self.ag_windows.items())
        return ags + sum(self.edge_bytes.values())

    def sent_bytes(self, instance: PlacementInstance) -> list[int]:
        """LL, per layer: the bytes of its direct output edges that cross chips, which it
        sends (through a join, the join's output travels, from next to one producer)."""
        out = [0] * len(instance.layers)
        for ei, nbytes in self.edge_bytes.items():
            if instance.edges[ei].direct:
                out[instance.edges[ei].producer] += nbytes
        return out


def chip_crossings(instance: PlacementInstance, counts: list[LayerCounts]) -> ChipCrossings:
    """The off-chip traffic the model counts (empty on one chip)."""
    if instance.offchip_bytes_per_ns is None:
        return ChipCrossings({}, {}, {})
    chips = instance.chips
    homed = []
    ags = {}
    for li, (layer, c) in enumerate(zip(instance.layers, counts, strict=True)):
        u = layer.choices[c.choice]
        m = layer.windows_per_replica(c.replication)
        y = np.asarray(c.y).reshape(chips, -1).sum(axis=1) * m
        h = np.asarray(c.rho).reshape(chips, -1).sum(axis=1) * m
        homed.append([int(x) for x in h])
        for chip in range(chips):
            ags[li, chip] = max(0, int(y[chip] - u.ags * h[chip]))
    overlap, edges = {}, {}
    if instance.mode == "ll":
        for ei, e in enumerate(instance.edges):
            a, b, den = instance.edge_rates(e)
            made = [a * x for x in homed[e.producer]]
            taken = [b * x for x in homed[e.consumer]]
            for chip in range(chips):
                overlap[ei, chip] = max(0, min(
                    made[chip], taken[chip], sum(made[:chip + 1]) - sum(taken[:chip]),
                    sum(taken[:chip + 1]) - sum(made[:chip])))
            phi = instance.fanout(e.consumer,
                                  max(1, int(np.count_nonzero(counts[e.consumer].rho))))
            away = e.nbytes * den - sum(overlap[ei, c] for c in range(chips))
            edges[ei] = max(0, math.ceil(phi * away / den))
    return ChipCrossings(ags, overlap, edges)


def predict(instance: PlacementInstance, counts: list[LayerCounts]) -> Prediction:
    """The model's cycle time (HT) or latency (LL), its resources, and the energy."""
    cores = per_core(instance, counts)
    res = {name: float(v.max()) for name, v in cores.items()}
    res["ag"] = max((layer.choices[c.choice].ag_ns * layer.windows_per_replica(c.replication)
                     for layer, c in zip(instance.layers, counts, strict=True)), default=0.0)
    if instance.mode == "ht":
        chips = instance.cores // instance.cores_per_chip
        per_chip = cores["gport"].reshape(chips, -1).sum(axis=1)
        mean = float(per_chip.mean())
        res["gm"] = max(float(per_chip.max()), mean + CHAIN_TAIL_SHARE * res["ag"])
        res["chain"] = res["ag"] + CHAIN_GM_SHARE * mean
        res["path"] = 0.0
    else:
        res["gm"] = 0.0
    crossings = chip_crossings(instance, counts)
    finish: list[float] = []
    if instance.mode == "ll":
        finish = layer_finish(instance, counts, crossings)
        res["path"] = max(finish, default=0.0)
    offchip = crossings.total_bytes(instance, counts)
    res["offchip"] = (offchip / instance.offchip_bytes_per_ns
                      if instance.offchip_bytes_per_ns else 0.0)
    energy = instance.constant_energy_pj + offchip * (
        instance.offchip_pj_per_byte - instance.net_pj_per_byte_hop)
    for layer, c in zip(instance.layers, counts, strict=True):
        u = layer.choices[c.choice]
        m = layer.windows_per_replica(c.replication)
        energy += u.window_energy_pj * layer.windows
        travel = (u.ags * c.rho - c.ell).sum() * m * (u.in_bytes + u.out_bytes)
        energy += travel * instance.net_pj_per_byte_hop
        if instance.mode == "ht":
            loads = layer.core_load_bytes(layer.replications.index(c.replication), c.rho)
            energy += (loads.sum() + layer.store_bytes * layer.windows) * (
                instance.gm_pj_per_byte)
        else:
            energy += (layer.input_bytes + layer.store_bytes) * layer.windows * (
                instance.net_pj_per_byte_hop)
    return Prediction(max(res.values()), res, energy,
                      instance.depth if instance.mode == "ht" else 1,
                      dict(zip((layer.name for layer in instance.layers), finish, strict=True))
                      if finish else {})


def window_ns(instance: PlacementInstance, layer_index: int, choice: int) -> float:
    """LL: time between two windows of one replica (its slowest per-window resource)."""
    layer = instance.layers[layer_index]
    u = layer.choices[choice]
    link = instance.link_bytes_per_ns
    return max(u.ag_ns, u.home_vfu_ns, u.home_local_ns, layer.input_bytes / link,
               layer.store_bytes / link)


PERIOD_NS = 0.01
"""LL: a replica's window period is rounded up to this (the model's tick, 1 / TICKS_PER_NS),
so that the model's integer periods are the same numbers."""


def layer_finish(instance: PlacementInstance, counts: list[LayerCounts],
                 crossings: ChipCrossings | None = None) -> list[float]:
    """LL: each layer's finish F_l of ``pipeline`` (ns), its periods D_l / s and its span
    (``span_floors``) rounded up to ``PERIOD_NS`` as the latency has them; the latency is
    the largest."""
    whole = whole_ns(instance, counts)
    spans = [math.ceil(span / PERIOD_NS - 1e-9) * PERIOD_NS  # as the model's integral P_l
             for span in span_floors(instance, counts, crossings=crossings)]
    _, finish = pipeline(instance, [c.replication for c in counts],
                         lambda i, size: period_ns(whole[i], size), spans)
    return finish


def period_ns(whole: float, size: int) -> float:
    """LL: the period of a replica of ``size`` windows whose D_l is ``whole`` ns, rounded up
    to ``PERIOD_NS``."""
    return math.ceil(whole / PERIOD_NS / size - 1e-9) * PERIOD_NS


def whole_ns(instance: PlacementInstance, counts: list[LayerCounts]) -> list[float]:
    """LL: D_l per layer, the time every replica of l takes for its range of windows: at least
    its m windows one after another, and no less than its busiest core's work for it
    (``core_floors``)."""
    floors = core_floors(instance, counts)
    return [max(window_ns(instance, i, c.choice) * instance.layers[i].windows_per_replica(
        c.replication), floors[i]) for i, c in enumerate(counts)]


def floor_latency(instance: PlacementInstance, choices: Sequence[int],
                  reps: Sequence[int]) -> float:
    """LL: the latency of ``pipeline`` with each layer's D_l at its option's floor, the larger
    of its m windows one after another and ``home_floor``, its span at ``floor_span``, and no
    off-chip time: no placement of these options is faster (``whole_ns`` is at least that,
    ``core_floors`` at least ``home_floor``, ``span_floors`` at least ``floor_span``)."""
    picked = [(i, ui, layer.replications.index(r))
              for i, (layer, ui, r) in enumerate(zip(instance.layers, choices, reps,
                                                     strict=True))]
    whole = [floor_whole(instance, *key) for key in picked]
    _, finish = pipeline(instance, reps, lambda i, size: period_ns(whole[i], size),
                         [floor_span(instance, *key) for key in picked])
    return max(finish, default=0.0)


def floor_span(instance: PlacementInstance, li: int, ui: int, ri: int) -> float:
    """The least span (``span_floors``, ns) any placement of option (u, r) of layer ``li``
    gives, off-chip time aside: with ``inputs_ahead``, a home's inbound link takes its m
    windows' input pixels and the partial sums of the AGs beyond the min(A, C / X) it
    keeps (rounded down to ``PERIOD_NS``, the diagram's tick); else 0."""
    if not instance.inputs_ahead:
        return 0.0
    layer = instance.layers[li]
    u, m = layer.choices[ui], layer.windows_per_replica(layer.replications[ri])
    away = u.ags - min(u.ags, instance.crossbars_per_core // u.crossbars_per_ag)
    span = (u.out_bytes * away + layer.input_bytes) * m / instance.link_bytes_per_ns
    return math.floor(span / PERIOD_NS + 1e-9) * PERIOD_NS


def floor_whole(instance: PlacementInstance, li: int, ui: int, ri: int,
                counted: bool = True) -> float:
    """LL: the least D_l (ns) of layer ``li`` under option (u, r) that any placement gives:
    its m windows one after another, and no less than ``home_floor`` (``counted``: with
    its count of the AGs a core holds)."""
    layer = instance.layers[li]
    return max(window_ns(instance, li, ui) * layer.windows_per_replica(layer.replications[ri]),
               home_floor(instance, li, ui, ri, counted=counted))


def replica_bounds(windows: int, replication: int) -> np.ndarray:
    """b_{l,j} = floor(j W / r), j = 0..r: replica j makes windows [b_j, b_{j+1}) in order."""
    return np.arange(replication + 1) * windows // replication


def pipeline(instance: PlacementInstance, reps: Sequence[int],
             period: Callable[[int, int], float],
             spans: list[float] | None = None) -> tuple[list[np.ndarray], list[float]]:
    """LL, window by window: when each window of each layer is done, and when each layer is,
    with ``reps[l]`` replicas of layer l.

    Replica j of layer l makes its windows a = b_j .. b_{j+1} - 1 in order, each taking the
    period w_{l,j} = ``period(l, s_j)`` (s_j = b_{j+1} - b_j; the replica's D_l spread over its
    windows); a window starts once the previous one is done and every producer window it reads
    (``Edge.needs``) is done:

        done(a) = max(done(a - 1), ready(a)) + w_{l,j},  ready(a) = max_e max_{q in N_e(a)}
        done_p(q).

    A layer is done at F_l = max(max_a done(a), ready(0) + ``spans[l]``), what it does from
    its first input on (``span_floors``: its output's time on the off-chip link all chips
    share; with ``inputs_ahead``, its busiest inbound link with the homes' input pixels)."""
    done: list[np.ndarray] = []
    finish: list[float] = []
    for i, (layer, r) in enumerate(zip(instance.layers, reps, strict=True)):
        ready = window_ready(instance, reps, done, i)
        bounds = replica_bounds(layer.windows, r)
        sizes = np.diff(bounds)
        replica = np.repeat(np.arange(r), sizes)
        k = np.arange(layer.windows) - bounds[replica]  # a's place in its replica
        w = np.array([period(i, int(size)) for size in sizes])[replica]
        out = replica_done(ready, k, w, replica)
        done.append(out)
        end = float(out.max())
        if spans is not None and spans[i]:
            end = max(end, float(ready[0]) + spans[i])
        finish.append(end)
    return done, finish


def replica_done(ready: np.ndarray, k: np.ndarray, w: np.ndarray,
                 replica: np.ndarray) -> np.ndarray:
    """done(a) = max(done(a - 1), ready(a)) + w for the windows a of each replica in order
    (``k``: a's place in its replica, ``w``: its period), over the last axis of ``ready`` (one
    row per pipeline when it has two). Unrolled: (k + 1) w + the running max of ready - k w
    within each replica (an offset per replica keeps the running max from crossing)."""
    x = ready - k * w
    step = x.max() - x.min() + 1 if x.size else 1  # integer for integer times (exact)
    return (k + 1) * w + np.maximum.accumulate(x + replica * step, axis=-1) - replica * step


def window_ready(instance: PlacementInstance, reps: Sequence[int],
                 done: list[np.ndarray], layer: int) -> np.ndarray:
    """ready(a) of ``pipeline``: per window of ``layer``, when the last producer window it
    reads is done (``done`` per producer layer; 0 without producers)."""
    ready = np.zeros(instance.layers[layer].windows)
    for e in instance.edges:
        if e.consumer != layer:
            continue
        made = done[e.producer]
        bounds = replica_bounds(len(made), reps[e.producer])
        need = e.needs(len(ready), len(made), bounds)
        ready = np.maximum(ready, np.where(need >= 0, made[np.maximum(need, 0)],
                                           0.0).max(axis=1, initial=0.0))
    return ready


def core_floors(instance: PlacementInstance, counts: list[LayerCounts],
                issue: Callable[[Choice], float] | None = None,
                link: Callable[[float], float] | None = None) -> list[float]:
    """LL: per layer, the longest any core is busy with that layer's own work, F^c_l
    (``core_busy``'s most). These pace the replicas' windows (``whole_ns``); with
    ``inputs_ahead`` without the homes' input pixels, which ``span_floors`` counts."""
    return [core_busy(instance, li, c, issue, link).max(initial=0)
            for li, c in enumerate(counts)]


def span_floors(instance: PlacementInstance, counts: list[LayerCounts],
                link: Callable[[float], float] | None = None,
                offlink: Callable[[float], float] | None = None,
                crossings: ChipCrossings | None = None) -> list[float]:
    """LL: per layer, how long after its first input (ready(0)) it finishes at the least:
    its output's time on the off-chip link (``offchip_floors``) and, with
    ``inputs_ahead``, its busiest core's inbound link with the homes' input pixels."""
    spans = offchip_floors(instance, counts, offlink, crossings)
    if instance.inputs_ahead:
        spans = [max(span, float(core_inbound(instance, li, c, link).max(initial=0)))
                 for span, (li, c) in zip(spans, enumerate(counts), strict=True)]
    return spans


def core_inbound(instance: PlacementInstance, li: int, c: LayerCounts,
                 link: Callable[[float], float] | None = None,
                 inputs: bool = True) -> np.ndarray:
    """LL: per core, its inbound link's time for layer ``li``: the partial sums of its homes'
    AGs elsewhere, the slices of AGs it holds for other homes and (``inputs``) its homes'
    input pixels; a core's inbound link carries one transfer at a time."""
    link = link or (lambda nbytes: nbytes / instance.link_bytes_per_ns)
    layer = instance.layers[li]
    u, m = layer.choices[c.choice], layer.windows_per_replica(c.replication)
    busy = link(u.out_bytes) * (u.ags * c.rho - c.ell) * m + link(u.in_bytes) * (c.y - c.ell) * m
    return busy + link(layer.input_bytes) * c.rho * m if inputs else busy


def core_busy(instance: PlacementInstance, li: int, c: LayerCounts,
              issue: Callable[[Choice], float] | None = None,
              link: Callable[[float], float] | None = None) -> np.ndarray:
    """LL: per core, its busiest resource for layer ``li``'s own work: issuing its MVMs
    (t^is P^y: the replicas of a layer on one core share its issue slots; on PUMA, where the
    interval is the whole MVM, two replicas on one core take twice as long), taking in its
    pixels (the inputs of its homes, the partial sums of their AGs elsewhere, the slices of
    AGs it holds for other homes: a core's inbound link carries one transfer at a time),
    sending them out, and, with sync communication, all of that in series. ``issue(u)`` is
    t^is per AG-window, ``link(bytes)`` a transfer's time (default ns; the hint passes the
    model's ticks)."""
    issue = issue or (lambda u: u.issue_ns)
    link = link or (lambda nbytes: nbytes / instance.link_bytes_per_ns)
    layer = instance.layers[li]
    u, m = layer.choices[c.choice], layer.windows_per_replica(c.replication)
    away, came, homes = (u.ags * c.rho - c.ell) * m, (c.y - c.ell) * m, c.rho * m
    busy = [issue(u) * c.y * m,
            core_inbound(instance, li, c, link, inputs=not instance.inputs_ahead),
            link(u.in_bytes) * away + link(u.out_bytes) * came + link(layer.store_bytes) * homes]
    if instance.sync:
        busy.append(busy[0] + busy[1] + busy[2])
    return np.max(busy, axis=0)


def offchip_floors(instance: PlacementInstance, counts: list[LayerCounts],
                   offlink: Callable[[float], float] | None = None,
                   crossings: ChipCrossings | None = None) -> list[float]:
    """LL on several chips: per layer, O_l = the time its direct output edges' crossing bytes
    x_e take on the one off-chip link all chips share (0 on one chip); the layer cannot finish
    before its first input arrived plus O_l. ``offlink(bytes)`` as ``core_floors``' link;
    ``crossings``: the placement's ``chip_crossings``, if known."""
    if instance.offchip_bytes_per_ns is None:
        return [0.0] * len(instance.layers)
    offlink = offlink or (lambda nbytes: nbytes / instance.offchip_bytes_per_ns)
    crossings = crossings or chip_crossings(instance, counts)
    return [offlink(nbytes) for nbytes in crossings.sent_bytes(instance)]


def home_floor(instance: PlacementInstance, li: int, ui: int, ri: int,
               issue: Callable[[Choice], float] | None = None,
               link: Callable[[float], float] | None = None, *, counted: bool = True) -> float:
    """A lower bound on ``core_floors`` of layer ``li`` under option (u, r) that needs no
    placement, for the decomposition's master: the home core of a replica runs its m
    windows' inputs in and outputs out (LL; HT loads and stores them through the global
    memory port, not the link), and between q_u (``home_least``: 1, A in core mode, more
    with sync links in HT) and min(A, C / X) of its AGs, the others' slices out and partial
    sums in; the least over that number of the busiest resource (the sum, sync). And no
    less than the issue of the core holding the most of the layer's A r AGs,
    ceil(A r / K) at least (A ceil(r / K) in core mode), nor, with sync communication,
    than the layer's serial work on all cores
    (each AG off its home sends and takes a slice and partial sums at both ends) over K.
    ``counted``: and no less than ``_counted_floor``, which counts the AGs a core can hold
    (with no more replicas than cores). In HT a core's time is the sum over the layers it
    holds, so the layer alone bounds the cycle time too."""
    issue = issue or (lambda u: u.issue_ns)
    link = link or (lambda nbytes: nbytes / instance.link_bytes_per_ns)
    layer = instance.layers[li]
    u, m = layer.choices[ui], layer.windows_per_replica(layer.replications[ri])
    most = min(u.ags, instance.crossbars_per_core // u.crossbars_per_ag)
    least = instance.home_least(u)
    t_issue, t_out, t_in = issue(u), link(u.out_bytes), link(u.in_bytes)
    t_load, t_store = _home_io(instance, layer, link)

    def busiest(kept: int) -> float:
        busy = [t_issue * kept, t_out * (u.ags - kept) + t_load,
                t_in * (u.ags - kept) + t_store]
        return max(*busy, sum(busy)) if instance.sync else max(busy)

    # a maximum of lines in ``kept``, so convex: bisect for its least value
    lo, hi = least, max(least, most)
    while lo < hi:
        mid = (lo + hi) // 2
        if busiest(mid + 1) >= busiest(mid):
            hi = mid
        else:
            lo = mid + 1
    best = busiest(lo)
    r, cores = layer.replications[ri], instance.cores
    # some core holds ceil(A r / K) of the layer's AGs (whole replicas in core mode)
    crowded = u.ags * -(-r // cores) if instance.computing_mode == "CM" else -(-u.ags * r // cores)
    best = max(best, issue(u) * crowded)
    if instance.sync:  # all the cores' serial work for the layer, K cores sharing it at best
        away = r * (u.ags - most)  # AGs off their home, at least
        best = max(best, (issue(u) * u.ags * r + 2 * (link(u.in_bytes) + link(u.out_bytes)) * away
                          + (t_load + t_store) * r) / cores)
    if counted:
        best = _counted_floor(instance, li, ui, r, best, issue, link)
    return best * m


def _home_io(instance: PlacementInstance, layer, link: Callable[[float], float]) -> tuple:
    """A home's link time per window for its replica's input and output, as they pace its
    windows: LL moves them over the network (the input not, with ``inputs_ahead``); HT
    through the global memory port (no link time)."""
    if instance.mode == "ht":
        return 0, 0
    return (0 if instance.inputs_ahead else link(layer.input_bytes)), link(layer.store_bytes)


def _largest(lines: list[tuple[float, float]], t: float, lo: int, hi: int) -> int:
    """The largest integer n in [lo, hi] with k n + c <= t for every (k, c) (-1: none);
    rounded towards more n (a capacity too large only weakens the floor)."""
    for k, c in lines:
        if k > 0:
            hi = min(hi, math.floor((t - c) / k + 1e-9))
        elif k < 0:
            lo = max(lo, math.ceil((t - c) / k - 1e-9))
        elif c > t + 1e-9:
            return -1
    return hi if hi >= lo else -1


COUNTED_STEPS = 20
"""``_counted_floor``: bisection steps (the bound is the last busy time found too short)."""


def _counted_floor(instance: PlacementInstance, li: int, ui: int, r: int, floor: float,
                   issue: Callable[[Choice], float], link: Callable[[float], float]) -> float:
    """The least busiest-core time per window T (at least ``floor``) at which the K cores
    can hold the layer's A r AGs and r homes at all, the layer alone: a core with h homes
    holds at most n_h(T) AGs (its busiest resource within T, as ``core_floors`` counts it,
    with as many AGs at home as it can keep, which only lowers the link time; its crossbars
    and local memory), so some split of the r homes over the cores must give
    sum_k n_{h_k}(T) >= A r (a knapsack over h, K n_0 + max sum_j (n_{h_j} - n_0) with
    sum_j h_j = r): a relaxation, since a core that holds fewer than n_h keeps fewer at
    home and its links may then take longer; on the tests' small instances it equals the
    least floor by brute force. Integral, so it sees what the sums cannot: vgg8-28's Conv_1 on PUMA
    (252 AGs on 138 cores, sync) needs two AGs on its four home cores, or three on another
    core. With more replicas than cores, ``floor``."""
    layer = instance.layers[li]
    u = layer.choices[ui]
    K, a = instance.cores, u.ags
    if r > K:
        return floor
    cm = instance.computing_mode == "CM"
    u_least = instance.home_least(u)
    # in floats (the model's ticks are Fractions), the result lowered by a hair below
    iss, si, so = float(issue(u)), float(link(u.in_bytes)), float(link(u.out_bytes))
    inp, st = (float(t) for t in _home_io(instance, layer, link))
    cap = instance.crossbars_per_core // u.crossbars_per_ag
    top, hb, rb = instance.local_memory_bytes, instance.replica_bytes(li, ui), u.remote_bytes
    homes_most = min(r, cap if not cm else cap // a)
    if top is not None and hb:
        homes_most = min(homes_most, top // hb)
    if homes_most < 1:  # no core holds a home: no placement, which the cuts find out
        return floor

    def most(h: int, t: float) -> int:
        """n_h(t): the most AGs a core with h homes holds within t (-1: none). Up to a h
        AGs (all at home) each adds its issue and takes a slice and partial sum off the
        links; beyond, each adds its issue, a slice in and a partial sum out."""
        hi = min(cap, a * h) if cm else cap
        if top is not None and rb and not cm:
            hi = min(hi, a * h + (top - h * hb) // rb)
        slow = si + so
        home = inp + st if instance.sync else 0.0
        # n >= a h: n <= (t - c) / k for each resource (k n + c)
        beyond = [(iss, 0.0), (si, inp * h - si * a * h), (so, st * h - so * a * h)]
        if instance.sync:
            beyond.append((iss + slow, home * h - slow * a * h))
        n = _largest(beyond, t, a * h, hi)
        if n >= 0:
            return n
        # h <= n <= a h: the link times fall as n grows (fewer AGs away)
        within = [(iss, 0.0), (-so, so * a * h + inp * h), (-si, si * a * h + st * h)]
        if instance.sync:
            within.append((iss - slow, slow * a * h + home * h))
        return _largest(within, t, u_least * h, min(hi, a * h))

    def fits(t: float) -> bool:
        n0 = most(0, t) if not cm else 0
        held = [most(h, t) for h in range(homes_most + 1)]
        gain = [n - n0 if n >= 0 else -math.inf for n in held]
        need = a * r - K * n0
        if r * gain[1] >= need:  # one home a core already holds them
            return True
        if r * max(g / h for h, g in enumerate(gain) if h) < need:  # no split can
            return False
        best = [0.0] + [-math.inf] * r  # the most sum of (n_h - n_0) over splits of j homes
        for j in range(1, r + 1):
            best[j] = max(best[j - h] + gain[h] for h in range(1, min(j, homes_most) + 1))
        return best[r] >= need

    if fits(float(floor)):
        return floor
    lo, hi = float(floor), max(float(floor), 1e-9) * 2
    while not fits(hi):
        lo, hi = hi, hi * 2
        if hi > 1e18:
            return floor
    for _ in range(COUNTED_STEPS):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return max(floor, lo * (1 - 1e-9))


def counts_of(instance: PlacementInstance, mapping: Mapping) -> list[LayerCounts]:
    """The counts of a Mapping (the home of a replica is the core of its first AG)."""
    by_name = {p.layer: p for p in mapping.layers}
    out = []
    for layer in instance.layers:
        p = by_name.get(layer.name)
        if p is None:
            raise InputError(f"mapping places no array group of layer {layer.name}")
        names = [c.unfolding for c in layer.choices]
        if p.unfolding not in names:
            raise InputError(f"layer {layer.name}: unfolding {p.unfolding} is not a choice "
                             f"({', '.join(names)})")
        y = np.zeros(instance.cores, dtype=np.int64)
        rho = np.zeros_like(y)
        ell = np.zeros_like(y)
        for cores in p.cores:
            home = cores[0]
            rho[home] += 1
            for core in cores:
                y[core] += 1
                ell[core] += core == home
        out.append(LayerCounts(names.index(p.unfolding), p.replication, y, rho, ell))
    return out


def decode(instance: PlacementInstance, counts: list[LayerCounts], *, engine: str,
           model: str | None = None, layer_order: tuple[str, ...] = ()) -> Mapping:
    """A Mapping with exactly these counts: every (layer, replica, AG) on a core.

    Each core's home replicas take ``ell`` of its AGs (at least their first); their other
    AGs go to the cores with AGs to spare: first on the home's chip, then on any chip
    (nearest core number first), so no more AGs leave their chip than ``chip_crossings``
    counts.
    """
    per_chip = instance.cores_per_chip
    layers = []
    for layer, c in zip(instance.layers, counts, strict=True):
        u = layer.choices[c.choice]
        spare = {k: int(c.y[k] - c.ell[k]) for k in range(instance.cores) if c.y[k] > c.ell[k]}
        replicas: list[list[int]] = []
        for k in range(instance.cores):
            homes = int(c.rho[k])
            local = [int(c.ell[k]) // homes + (j < int(c.ell[k]) % homes) for j in range(homes)]
            replicas += [[k] * n for n in local]
        for same_chip in (True, False):
            for cores in replicas:
                k = cores[0]
                while len(cores) < u.ags:
                    near = [x for x in spare if not same_chip or x // per_chip == k // per_chip]
                    if not near:
                        break
                    x = min(near, key=lambda x: (abs(x - k), x))
                    take = min(spare[x], u.ags - len(cores))
                    cores += [x] * take
                    spare[x] -= take
                    if spare[x] == 0:
                        del spare[x]
        replicas = [tuple(cores) for cores in replicas]
        layers.append(LayerPlacement(layer.name, u.unfolding, c.replication, tuple(replicas)))
    return Mapping(model or instance.model, instance.target, instance.mode, engine,
                   (Partition(layer_order or tuple(x.name for x in instance.layers)),),
                   tuple(layers))
