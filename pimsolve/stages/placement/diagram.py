"""LL: a lower bound on the latency of every option set, by a relaxed decision diagram.

``evaluate.floor_latency(z)`` is the window pipeline with each layer's D and span at its
option's floor: no placement of the options z is faster. So the least floor over every option set
that fits the crossbars (K C) and the master's local-memory cuts is a lower bound on the LL
optimum, and one that sees what the master cannot: how the replicas of consecutive layers
line up, window by window.

The diagram takes the layers in order (producers first). A node stands for a set of option
prefixes and holds the least crossbars and memory any of them uses, the least latest layer
finish, and, window by window, the least done time of every layer a later layer still reads.
A layer's options turn each node into children (one pipeline step,
``evaluate.replica_done``'s, as ``_Option.done``, for all nodes at once); children that
leave no room for the layers after them are dropped, the rest are merged into groups of
neighbouring crossbar counts (as many as a budget of ``cells`` window times allows), each
keeping the least of every value, and merged nodes that finish no earlier than ``upper`` are
dropped. A window is done no earlier when its producers' windows are done later or its
period is longer (the pipeline is monotone), so a merged node is below every prefix it
stands for and the least finish at the end is below every option set's floor. With no
merging (a budget above every layer's children) it is the exact least floor. ``meet_bound``
merges over fewer layers: a forward diagram to a cut and a backward one from the last layer
(each window's longest path to the end), met over the pairs of nodes that fit together.
Written up in ``formulations/placement.md``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

from pimsolve.solve.clock import WORK_S, Clock
from pimsolve.stages.placement.evaluate import (
    PERIOD_NS,
    floor_latency,
    floor_span,
    floor_whole,
    period_ns,
    replica_bounds,
)
from pimsolve.stages.placement.formulation import option_memory
from pimsolve.stages.placement.instance import PlacementInstance
from pimsolve.stages.placement.search import Picks

__all__ = ["floor_bound", "floor_options", "diagram_bound", "meet_bound", "pruned_bound",
           "LeastFloor",
           "BUDGETS", "KEYS", "PRIMAL_CELLS", "PRIMAL_COUNTED", "PRUNE", "PRICE_SHARES",
           "PRICE_COST", "MIN_NODES",
           "MAX_CELLS"]

BUDGETS = (500_000, 2_000_000, 8_000_000, 32_000_000)
"""Window times a layer's nodes (or their children in the next layer) may hold, tried in
turn by ``diagram_bound`` while its time lasts (each a valid bound). A budget, not a node
count, so that layers with few windows or options keep more nodes for the same work:
resnet18-28/isaac LL, 351.0 us in 1.0 s with 2 M cells, where 256 nodes a layer gave 317.6 us
in 1.1 s and 1024 nodes 343.3 us in 5.1 s (float64 times, before the integer ticks)."""
KEYS = ("middle", "finish")
"""What orders children of equal crossbars into groups, by budget in turn (0.5 M cells by
the middle window's done time, 2 M by the finish, 8 M by the middle, ...): vgg8-28/isaac LL,
by 'finish' 243.4 us at every node count from 1024 to 65,536 a layer; by 'middle' 258.1 us
(the best option set's floor) with 8 M cells. At 8 M cells 'middle' is the better on most
rows (vgg8-28/PUMA LL 471.0 against 452.5 us, resnet18-28/Arch-C 289.9 against 285.5), so
the budgets that usually finish in the decomposition's share, 0.5 and 8 M, take it: 10 s,
gap 4.37% -> 3.48% and 15.9% -> 14.6% there, resnet34/Arch-C 51.7% -> 52.3%, googlenet/Arch-C
78.1% -> 77.9%, the other LL rows as before."""
NEXT_COST = (2, 4)
"""What the next budget's diagrams take, at least and at most, in multiples of this one's
(the budgets grow fourfold; the forward diagram took 0.41, 1.08 and more than 3.8 work-s at
0.5, 2 and 8 M cells on resnet18-28/ISAAC LL, 0.75, 1.03 and about 2.1 on resnet34/Arch-C,
the restricted diagram's, which runs up to ``PRIMAL_CELLS``, counted while the next one
runs it too): ``diagram_bound`` meets the backward diagram rather than risk a budget that
may not finish, and stops where the next one cannot."""
PRIMAL_CELLS = 2_000_000
"""The largest budget of the restricted diagram in ``diagram_bound``."""
PRIMAL_COUNTED = False
"""Whether the restricted diagram ranks option sets by ``home_floor``'s count of the AGs a
core holds too (the bound always does). Not: sets of near-equal floors differ in how well
the greedy placements pack them, and the count's favourites pack worse: resnet18-28/PUMA
LL, 2M cells, the set ranked with the count (floor 657.4 us) places at 810.2, the set
ranked without (floor 658.0 with the count) at 674.5."""
MEET_CELLS = 8_000_000
"""The forward budget after which ``diagram_bound`` meets a backward diagram with the
forward ones (``meet_bound``) at the latest, and the backward diagram's budget (half of it
where the time left is short, ``_meeting``)."""
MEET_NODE_CELLS = 2000
MEET_SPEEDUP = 25
"""``_meet`` charges a forward node this many cells and its sums 1 / MEET_SPEEDUP of a cell
each (one add and max per window, where a diagram cell is a pipeline step): resnet18-28/Arch-C
LL, 12,558 forward nodes, 1.15 s of wall; vgg8-28/PUMA, 241 M sums, 0.23 s."""
BACKWARD_FITS = 0.7
"""Of the backward diagram's children, the share that fits the crossbars, at most (what it
charges over ``_backward_cells``: 0.48 to 0.69 on vgg8-28/PUMA and the resnet18-28 rows, at
4 and 8 M cells, to the first layer or ``_meet_cut``): ``diagram_bound`` runs it where the
time left holds that."""
PRICE_SHARES = (0.4,)
"""Where the next budget would still keep ``MIN_NODES`` on some layer (the 224x224 rows:
the early layers' 3,136 to 12,544 windows and 100 to 400 options a layer), ``diagram_bound``
ends at this budget with its diagram again, the resource its restricted diagram's option
set fills most (the local memory on googlenet, the crossbars on resnet34) priced into the
times (``_lifts``): the room's price at each of these shares of the best floor known, in
turn while the time holds one (``PRICE_COST``). Measured alone at 0.5 M cells, grouped by
the finish alone (the first version), the plain diagram's bound first: resnet34/ISAAC
1509.8 -> 1722.9 us at 0.4 and 1754.3 at 0.6, googlenet/ISAAC 198.4 -> 314.9 and 242.5,
googlenet/Arch-C 476.8 -> 737.4 and 704.9, resnet34/Arch-C 1996.3 -> 2218.7 and 2314.6,
googlenet/PUMA 457.7 -> 709.1 and 584.3, resnet34/PUMA 3410.2 -> 4006.4 and 3840.9; at 0.3
and 0.5: googlenet/Arch-C 714.1 and 726.6 (memory), resnet34/Arch-C 2078.2 and 2263.0
(crossbars). In the plain diagram's groups, as kept: resnet34/ISAAC 1772.4 us at 0.4,
googlenet/ISAAC 310.5. Until session 48 also 0.55 and 0.3 after it, which ran on the Arch-C
rows alone (10 s) and lifted their bounds by 0.5% and 0.9% (googlenet 757.5 -> 761.3 us,
resnet34 2280.3 -> 2301.9) for 2.4 and 1.5 work-s, which now go to
``decompose.WIDE_NODES``' option sets."""
PRICE_COST = 1.0
"""A priced diagram's work in multiples of the plain one's at the same budget (the same
groups: 1.93 against 1.93 work-s on resnet34/ISAAC LL at 0.5 M cells, 1.63 against 1.65 on
googlenet/ISAAC; grouped by the key alone, 2.85 and 1.76, since groups that mix resources
let more children fit the room); ``diagram_bound`` starts one only where the time left
holds that."""
PRUNE = True
"""Whether ``diagram_bound`` keeps its backward diagram's nodes at every cut it passes
(``_completion``) and, from then on, drops the children that cannot beat the best option
set known and guides its restricted diagram by them. resnet18-28 LL, 10 s: ISAAC
364.9 -> 376.3 us (the least floor, found by the guided restricted diagram too), PUMA
640.0 -> 640.6 us, with option sets of 376.3 and 640.7 us where it had 377.9 and 651.9."""

MIN_NODES = 16
"""Nodes a layer keeps whatever the budget (resnet34 at 224x224: 12,544 windows a layer)."""
RANK_MOST = 128
"""``_least_rows`` goes rank by rank where no group has more rows than this (a rank costs
some 30 us of numpy calls, a group taken whole 3 to 4 us)."""
MAX_CELLS = 50_000_000
"""At most this many window times (200 MB in int32 ticks) a layer's nodes or their children
hold."""


@dataclass(frozen=True)
class _Option:
    """One (unfolding, replication) of a layer: its crossbars and per-window periods."""

    choice: int
    replication: int
    """Index into the layer's ``replications``."""
    crossbars: int
    memory: int
    """Local memory its replicas need in all, at least (the master's memory cut)."""
    k: np.ndarray
    w: np.ndarray
    """Per window, its replica's period in ticks of ``PERIOD_NS`` (exact: the periods are
    rounded up to a tick)."""
    replica: np.ndarray
    span: int = 0
    """``evaluate.floor_span`` in ticks: the layer finishes no earlier than its first
    window's ready time plus this."""

    @cached_property
    def _kw(self) -> np.ndarray:
        """k w per window (int64): what the window's place in its replica adds."""
        return (self.k * self.w).astype(np.int64)

    @cached_property
    def _lasts(self) -> np.ndarray:
        """Each replica's last window."""
        return np.flatnonzero(np.append(self.replica[1:] != self.replica[:-1], True))

    def done(self, ready: np.ndarray, spread: int) -> np.ndarray:
        """``evaluate.replica_done`` on every row of ``ready`` (integer ticks, whose values
        lie within ``spread`` of each other), in int64 and three passes over it: with
        replica j offset by j (spread + 1), its first window (k = 0) is above every earlier
        replica's, so the running max starts afresh at each replica. ``replica_done`` finds
        its offset from the range of ready - k w instead, two passes more, and serves the
        float pipeline of ``evaluate``, whose sums this order of operations could round
        differently."""
        offset = self.replica * (spread + 1)
        x = ready + (offset - self._kw)
        np.maximum.accumulate(x, axis=-1, out=x)
        x += self._kw + self.w - offset
        return x

    def last(self, done: np.ndarray) -> np.ndarray:
        """Each row's latest time of ``done``'s result ``done``: the latest of its
        replicas' last windows, since a replica's windows finish in order."""
        return done[:, self._lasts].max(axis=1)


def _options(instance: PlacementInstance, li: int, counted: bool = True) -> list[_Option]:
    """The options of layer ``li`` that some placement can hold (the master's per-layer
    memory cut: the core with the most homes holds ceil(r / K)) and that no other option
    of the same replication beats on crossbars, memory and D at once (same window ranges,
    no longer periods, no more of either resource)."""
    layer = instance.layers[li]
    top = instance.local_memory_bytes
    out = []
    for ri, r in enumerate(layer.replications):
        bounds = replica_bounds(layer.windows, r)
        sizes = np.diff(bounds)
        replica = np.repeat(np.arange(r), sizes)
        k = np.arange(layer.windows) - bounds[replica]
        same_r = []
        for ui, u in enumerate(layer.choices):
            summed, busiest = option_memory(instance, li, ui, ri)
            if top is not None and busiest > top:
                continue
            same_r.append((r * u.ags * u.crossbars_per_ag, summed if top is not None else 0,
                           floor_whole(instance, li, ui, ri, counted),
                           round(floor_span(instance, li, ui, ri) / PERIOD_NS),
                           ui))
        kept: list[tuple[int, int, float, int, int]] = []
        for crossbars, memory, whole, span, ui in sorted(same_r):
            if all(memory < m or whole < w or span < s for _, m, w, s, _ in kept):
                kept.append((crossbars, memory, whole, span, ui))
        for crossbars, memory, whole, span, ui in kept:
            w = np.array([round(period_ns(whole, int(s)) / PERIOD_NS) for s in sizes])[replica]
            out.append(_Option(ui, ri, crossbars, memory, k, w, replica, span))
    return out


def _ready(instance: PlacementInstance, li: int, done: dict[int, np.ndarray],
           nodes: int, dtype: type) -> np.ndarray:
    """ready(a) of every window of layer ``li`` in each node: the latest producer window it
    reads (``Edge.reads``; a Gemm's prefix through its running max, which is the latest
    window of each producer replica when the replicas make theirs in order)."""
    windows = instance.layers[li].windows
    ready = np.zeros((nodes, windows), dtype=dtype)
    for e in instance.edges:
        if e.consumer != li:
            continue
        made = done[e.producer]
        if e.reads is None:
            last = e.prefix_last(windows, made.shape[1])
            ready = np.maximum(ready, np.maximum.accumulate(made, axis=1)[:, last])
            continue
        padded = np.concatenate([made, np.zeros((len(made), 1), dtype=made.dtype)], axis=1)
        for column in e.reads.T:  # -1 (no read) takes the zero column; one gather a column
            np.maximum(ready, padded[:, column], out=ready)
    return ready


def floor_bound(instance: PlacementInstance, cells: int, *, upper: float = math.inf,
                deadline: float | None = None, by: str = "finish",
                clock: Clock | None = None,
                price: tuple[float, float] | None = None) -> float | None:
    """A lower bound (ns) on ``floor_latency`` over every option set that fits, from a
    diagram whose layers hold at most ``cells`` window times (``_nodes``); ``upper`` if no
    option set's floor is below ``upper`` (ns); None if ``clock`` (a new wall clock if None)
    passed ``deadline`` first. Exactly the least floor when the budget holds every layer's
    children. ``by``: what orders children of equal crossbars into groups, their 'finish'
    or the done time of their layer's 'middle' window (groups of like profiles lose less
    when merged; which is better depends on the instance, and either bound is valid).
    With ``price`` (ns a crossbar, ns a byte of local memory), the Lagrangian bound of
    ``_lifts``."""
    if by not in KEYS:
        raise ValueError(f"by: one of {', '.join(KEYS)}, not {by!r}")
    options = _layer_options(instance)
    found = _diagram(instance, options, _nodes(instance, options, cells), upper, deadline,
                     restricted=False, by=by, clock=clock or Clock(), price=price)
    return None if found is None else found[0]


def floor_options(instance: PlacementInstance, cells: int, *,
                  deadline: float | None = None, share: float = 1.0, counted: bool = True,
                  clock: Clock | None = None, least: int | None = None,
                  work: str = "restricted_cell") -> tuple[float, Picks] | None:
    """An option set that fits (in ``share`` of the crossbars and of the local memory) and
    its ``floor_latency`` (ns), from the restricted diagram: of each group of children
    ``floor_bound`` would merge, only the one that finishes first goes on. None if
    ``clock`` (a new wall clock if None) passed ``deadline`` first or no option set fits.
    Without ``counted`` the diagram ranks the sets by the floors without ``home_floor``'s
    count (``PRIMAL_COUNTED``); the floor returned is the set's ``floor_latency`` all the
    same. ``least``: the nodes a layer keeps whatever ``cells`` (``_nodes``; ``MIN_NODES``
    if None). ``work``: the ``clock.WORK_S`` price a window time is charged at."""
    return _restricted(instance, _layer_options(instance, counted), cells, deadline, share,
                       counted, clock or Clock(), least=least, work=work)


def _restricted(instance: PlacementInstance, options: list[list[_Option]], cells: int,
                deadline: float | None, share: float, counted: bool, clock: Clock,
                completion: dict[int, _Completion] | None = None, upper: float = math.inf,
                least: int | None = None, work: str = "restricted_cell",
                ) -> tuple[float, Picks] | None:
    """``floor_options`` on ``options`` (ranked ``counted`` or not): the option set and its
    ``floor_latency``; None if the deadline passed or no set fits. With ``completion``,
    guided by it, without the prefixes whose bound is no less than ``upper`` (ns); the set's
    floor may still be above ``upper``."""
    found = _diagram(instance, options, _nodes(instance, options, cells, least), upper,
                     deadline, restricted=True, share=share, clock=clock, completion=completion,
                     work=work)
    if found is None or found[1] is None:
        return None
    picks = found[1]
    if counted:
        return found[0], picks
    return floor_latency(instance, [ui for ui, _ in picks],
                         [layer.replications[ri] for layer, (_, ri) in zip(instance.layers, picks,
                                                                            strict=True)]), picks


def _diagram(instance: PlacementInstance, options: list[list[_Option]], nodes: list[int],
             upper: float, deadline: float | None, restricted: bool, clock: Clock,
             by: str = "finish", share: float = 1.0, stop: int | None = None,
             cut: int | None = None, completion: dict[int, _Completion] | None = None,
             price: tuple[float, float] | None = None,
             work: str | None = None) -> _Found | _Frontier | None:
    """The least finish (ns) over the last layer's nodes (at most ``nodes[l]`` kept after
    layer l), and (restricted) its option set; the option sets use at most ``share`` of
    the crossbars and of the local memory. Times are integer ticks of ``PERIOD_NS``
    (every period is a whole number of them, so the sums and maxima are exact), in int32
    where the longest pipeline fits: ``_merge``'s reductions, most of the time, take a third
    to a quarter of float64's, the whole diagram two thirds. None if ``clock`` passed
    ``deadline`` (its time) first; every window time computed is charged to it. With
    ``stop`` (relaxed only), the merged nodes after layer ``stop`` instead (``_Frontier``;
    ``upper`` and None as before); with ``cut`` (relaxed only), those after layer ``cut``
    besides (``_Found.front``, for ``_meet``). With ``completion``, the children whose
    ``_completed`` bound is no less than ``upper`` are dropped: no option set they stand
    for has a floor below it, and the merged groups of the rest lose less; the restricted
    diagram then orders the rest by crossbars and that bound and keeps each group's child
    of the least bound (where the bound is tight, its option set has the least floor).
    With ``price`` (relaxed, without ``completion``, ``stop`` or ``cut``: ns a crossbar and
    ns a byte of local memory), the resources are priced into the times (``_lifts``).
    ``work``: the ``clock.WORK_S`` price of a window time ('restricted_cell' or 'cell' if
    None)."""
    if price is not None and (restricted or completion is not None
                              or stop is not None or cut is not None):
        raise ValueError("price: the relaxed diagram alone, without completion or frontiers")
    layers = instance.layers
    room = _room(instance, share)
    work = work or ("restricted_cell" if restricted else "cell")
    if not all(options):
        return _Found(upper, None)
    after = np.cumsum([[0, 0], *_least(options)[::-1]], axis=0)[::-1][1:]  # of the layers after
    last_read: dict[int, int] = {}  # the last layer that reads each producer
    for e in instance.edges:
        last_read[e.producer] = max(last_read.get(e.producer, -1), e.consumer)
    dtype = _tick_dtype(options) if price is None else np.int64
    lifts, cap = _lifts(options, room, price)
    below = upper / PERIOD_NS  # upper in ticks
    front = None
    lifted = np.zeros(1, dtype=np.int64)  # per node: the most lift of a prefix it stands for
    # per node: crossbars and memory used (the least of its prefixes), the latest finish
    resources, finish = np.zeros((1, 2), dtype=np.int64), np.zeros(1, dtype=dtype)
    picked = np.zeros((1, 0), dtype=np.int64)  # restricted: each node's option per layer
    done: dict[int, np.ndarray] = {}
    for li, layer in enumerate(layers):
        ready = _ready(instance, li, done, len(finish), dtype)
        spread = int(ready.max()) - int(ready.min())
        read_later = last_read.get(li, -1) > li  # its done times, for a later layer
        kids = []
        for oi, o in enumerate(options[li]):
            if deadline is not None and clock.now() > deadline:
                return None
            used = resources + (o.crossbars, o.memory)
            fits = np.flatnonzero((used + after[li] <= room).all(axis=1))
            clock.charge(fits.size * layer.windows, work)
            if fits.size:
                lift = int(lifts[li][oi])  # 0 unpriced
                times = o.done(ready if fits.size == len(ready) else ready[fits], spread)
                if lift:
                    times += lift
                end = np.maximum(finish[fits] + lift, o.last(times)).astype(dtype)
                if o.span:  # F_l >= ready(0) + its span
                    end = np.maximum(end, ready[fits, 0] + o.span + lift)
                key = end if by == "finish" else times[:, layer.windows // 2].astype(dtype)
                times = times.astype(dtype) if read_later else None
                kids.append((used[fits], end, fits, times, np.full(fits.size, oi), key,
                             np.full(fits.size, lift), lifted[fits] + lift))
        if not kids:
            return _Found(upper, None)
        used, end, parent, option, key, lift, lifted = (np.concatenate([k[i] for k in kids])
                                                        for i in (0, 1, 2, 4, 5, 6, 7))
        made = np.concatenate([k[3] for k in kids]) if read_later else None
        inherited = {p: a for p, a in done.items() if last_read[p] > li}
        del kids, ready
        rank = end  # restricted: each group's child of the least rank goes on
        if completion is not None and li in completion:
            clock.charge(len(end) * completion[li].width, "completion_cell")
            completed = _completed(completion[li], used, end, parent, inherited, made, li,
                                   room)
            keep = np.flatnonzero(completed < min(below, _NO_FIT))
            if not keep.size:
                return _Found(upper, None)
            used, end, parent, option = used[keep], end[keep], parent[keep], option[keep]
            lift, lifted = lift[keep], lifted[keep]
            made = None if made is None else made[keep]
            if restricted:
                key = rank = completed[keep]
            else:
                key = key[keep]
        if restricted:
            keep = _representatives(used, rank, key, nodes[li], option)
            picked = np.column_stack([picked[parent[keep]], option[keep]])
            resources, finish, lifted = used[keep], end[keep], lifted[keep]
            done = {p: a[parent[keep]] for p, a in inherited.items()}
            if made is not None:
                done[li] = made[keep]
            continue
        # merged, then the nodes that finish no earlier than upper dropped
        used, end, done, lifted = _merge(used, end, key, parent, inherited,
                                         {} if made is None else {li: made}, nodes[li],
                                         None if price is None else (lift, lifted), option)
        keep = np.flatnonzero(end - np.minimum(lifted, cap) < below)
        if not keep.size:
            return _Found(upper, None)
        resources, finish, lifted = used[keep], end[keep], lifted[keep]
        done = {p: a[keep] for p, a in done.items()}
        if li in (stop, cut):
            front = _Frontier(resources, finish, done)
            if li == stop:
                return front
    finish = finish - np.minimum(lifted, cap)  # unpriced, the lifts are 0
    best = int(np.argmin(finish))
    picks = tuple((options[li][oi].choice, options[li][oi].replication)
                  for li, oi in enumerate(picked[best])) if restricted else None
    return _Found(float(finish[best]) * PERIOD_NS, picks, front)


class _Found(NamedTuple):
    """What ``_diagram`` found: the least finish (ns), the restricted diagram's option set,
    and the merged nodes after its ``cut``."""

    ns: float
    picks: Picks | None
    front: _Frontier | None = None


@dataclass(frozen=True)
class _Frontier:
    """Merged nodes at a cut: per node its crossbars and memory (the least of its
    prefixes or suffixes), its latest finish (forward; 0 backward) and, per layer on the
    cut's producer side, its window vectors: forward, the done times; backward, ``out``,
    the longest path from each window to the end through the layers after the cut."""

    resources: np.ndarray
    finish: np.ndarray
    vectors: dict[int, np.ndarray]


@dataclass(frozen=True)
class _Completion:
    """The backward diagram at a cut, for the forward diagram's children there: its nodes
    in order of crossbars and, per producer crossing the cut, row i the least out_p of
    nodes 0..i (a running minimum), so that one row holds the least over every node that
    fits beside a child's crossbars."""

    crossbars: np.ndarray
    out: dict[int, np.ndarray]

    @property
    def width(self) -> int:
        """Window times per child (``_completed``)."""
        return sum(a.shape[1] for a in self.out.values())


def _completion(back: _Frontier, clock: Clock) -> _Completion:
    """``back`` by crossbars, each vector the least of its node's and those before."""
    order = np.argsort(back.resources[:, 0], kind="stable")
    completion = _Completion(back.resources[order, 0], {
        p: np.minimum.accumulate(a[order].astype(np.int64), axis=0)
        for p, a in back.vectors.items()})
    clock.charge(len(order) * completion.width, "completion_cell")
    return completion


def _completions(instance: PlacementInstance, options: list[list[_Option]], cells: int,
                 deadline: float | None, clock: Clock) -> dict[int, _Completion]:
    """The backward diagram (``cells``) to the first layer, a ``_completion`` at every cut
    (those it passed where ``clock`` passed ``deadline``)."""
    return {c: _completion(back, clock) for c, back in _backwards(
        instance, options, cells, tuple(range(len(instance.layers) - 1)), deadline, clock,
        "middle")}


_CHUNK = 4096  # children at a time in ``_completed`` (bounds its temporary arrays)
_NO_FIT = np.iinfo(np.int64).max


def _completed(completion: _Completion, used: np.ndarray, end: np.ndarray,
               parent: np.ndarray, inherited: dict[int, np.ndarray],
               made: np.ndarray | None, li: int, room: np.ndarray) -> np.ndarray:
    """Per child of layer ``li`` (ticks): max(its finish, max over the producers p crossing
    the cut and windows a of done_p(a) + out_p(a)), out_p the least over the backward nodes
    whose crossbars fit beside the child's. Every option set the child stands for is in
    such a node (its suffix takes no fewer crossbars than the node, its prefix no fewer
    than the child), and done and out are each below the set's, so this is below the set's
    floor (``_meet`` for one child, every fitting node at once). A child no node fits
    beside stands for no option set: ``_NO_FIT``."""
    at = np.searchsorted(completion.crossbars, room[0] - used[:, 0], side="right") - 1
    value = end.astype(np.int64)
    value[at < 0] = _NO_FIT
    for lo in range(0, len(end), _CHUNK):
        rows = slice(lo, lo + _CHUNK)
        fit = np.flatnonzero(at[rows] >= 0) + lo
        for p, least in completion.out.items():
            done = made[fit] if p == li else inherited[p][parent[fit]]
            value[fit] = np.maximum(value[fit],
                                    (done.astype(np.int64) + least[at[fit]]).max(axis=1))
    return value


def meet_bound(instance: PlacementInstance, cells: int, cut: int, *, upper: float = math.inf,
               deadline: float | None = None, by: str = "middle",
               clock: Clock | None = None) -> float | None:
    """A lower bound (ns) on ``floor_latency`` over every option set that fits, from the
    merged diagram forward to layer ``cut`` and a merged diagram backward from the last
    layer to ``cut`` + 1, met at the cut: every path of the window pipeline crosses it
    through an edge (p, l), p <= cut < l, so the latency is at least done_p(a) + out_p(a)
    for every window a, out_p(a) the longest path from a's end through the layers after the
    cut (the consumers' windows that read a, their replicas' later windows, and so on to
    the end). A pair of nodes whose crossbars or memory do not fit together stands for no
    option set; the least over the other pairs of the largest such sum (and the forward
    finish) is below every option set's floor, and each side merges over half the layers
    only. ``upper`` if no set's floor is below it; None if ``clock`` passed ``deadline``."""
    clock = clock or Clock()
    options = _layer_options(instance)
    front = _diagram(instance, options, _nodes(instance, options, cells), upper, deadline,
                     restricted=False, clock=clock, by=by, stop=cut)
    if not isinstance(front, _Frontier):
        return None if front is None else front.ns
    back = _backward(instance, options, cells, cut, deadline, clock, by)
    met = None if back is None else _meet(instance, front, back, deadline, clock)
    return None if met is None else min(upper, met)


def pruned_bound(instance: PlacementInstance, cells: int, back_cells: int, *,
                 upper: float = math.inf, deadline: float | None = None, by: str = "finish",
                 clock: Clock | None = None) -> float | None:
    """A lower bound (ns) on ``floor_latency`` over every option set that fits: the backward
    diagram (``back_cells``) to the first layer, its nodes at every cut a completion
    (``_completion``), then the forward diagram (``cells``) dropping at each cut the
    children whose ``_completed`` bound is no less than ``upper``. ``upper`` if no set's
    floor is below it; None if ``clock`` passed ``deadline`` first."""
    clock = clock or Clock()
    options = _layer_options(instance)
    completion = _completions(instance, options, back_cells, deadline, clock)
    if deadline is not None and clock.now() > deadline:
        return None
    found = _diagram(instance, options, _nodes(instance, options, cells), upper, deadline,
                     restricted=False, clock=clock, by=by, completion=completion)
    return None if found is None else found.ns


def _meet_cut(instance: PlacementInstance) -> int:
    """Where ``diagram_bound`` meets its forward diagrams (and, on the way to the first
    layer, its backward diagram): after the last layer of the first resolution (the most
    windows), whose many options and windows the forward diagram merges hardest (vgg8-28:
    Conv_1; resnet18-28: layer1's last conv)."""
    windows = [layer.windows for layer in instance.layers]
    return max(i for i, w in enumerate(windows) if w == max(windows))


def _backward(instance: PlacementInstance, options: list[list[_Option]], cells: int, cut: int,
              deadline: float | None, clock: Clock, by: str) -> _Frontier | None:
    """The backward diagram to ``cut`` (``_backwards``); None if ``clock`` passed
    ``deadline``."""
    found = [back for _, back in _backwards(instance, options, cells, (cut,), deadline,
                                            clock, by)]
    return found[-1] if found else None


def _backwards(instance: PlacementInstance, options: list[list[_Option]], cells: int,
               cuts: tuple[int, ...], deadline: float | None, clock: Clock, by: str,
               ) -> Iterator[tuple[int, _Frontier]]:
    """The backward diagram, layers last to min(``cuts``) + 1, and its nodes as it passes
    each of the ``cuts`` (after layer cut + 1), latest first: a node holds, per producer
    whose consumers it has taken, out_p(a) = the largest over consumer windows b reading a
    of w(b) + L(b), L(b) = the largest over b' from b on in its replica of (b' - b) w +
    out(b'), and for the first window no less than the layer's span (max-plus, monotone:
    merged nodes keep the least of everything). Stops where
    ``clock`` passes ``deadline``."""
    layers = instance.layers
    room = _room(instance)
    before = np.cumsum([[0, 0], *_least(options)], axis=0)  # least of the layers before each
    dtype = _tick_dtype(options)
    into = _into(instance)
    resources = np.zeros((1, 2), dtype=np.int64)
    out: dict[int, np.ndarray] = {}
    if len(layers) - 1 in cuts:  # no layer after it
        yield len(layers) - 1, _Frontier(resources, np.zeros(1, dtype=dtype), {})
    for c in range(len(layers) - 1, min(cuts), -1):
        windows = layers[c].windows
        tail = out.pop(c, None)
        touched = {e.producer for e, _ in into[c]}
        reach = _reach(layers[c], into[c])
        kids = []
        most = len(resources) * len(options[c])  # the children, written in place
        made = {p: np.empty((most, layers[p].windows), dtype=dtype) for p in touched}
        at = 0
        for o in options[c]:
            if deadline is not None and clock.now() > deadline:
                return
            used = resources + (o.crossbars, o.memory)
            fits = np.flatnonzero((used + before[c] <= room).all(axis=1))
            clock.charge(fits.size * reach, "cell")
            if not fits.size:
                continue
            after = (np.zeros((fits.size, windows), dtype=dtype) if tail is None
                     else tail[fits])
            value = o.w + _rest(after, o.k, o.w, o.replica)  # w(b) + L(b)
            if o.span:  # and from ready(0), the layer's span
                np.maximum(value[:, 0], o.span, out=value[:, 0])
            rows = slice(at, at + fits.size)
            first = set(touched)
            gathered: dict[int, np.ndarray] = {}  # edges that share their readers share it
            for e, readers in into[c]:
                if id(readers) not in gathered:
                    gathered[id(readers)] = _reached(readers, value,
                                                     layers[e.producer].windows)
                reached, p = gathered[id(readers)], e.producer
                if p in first and p not in out:
                    made[p][rows] = reached
                else:
                    np.maximum(made[p][rows] if p not in first else out[p][fits], reached,
                               out=made[p][rows])
                first.discard(p)
            kids.append((used[fits], fits))
            at += fits.size
        if not kids:  # no option set fits: no node at any cut from here
            empty = _Frontier(np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=dtype), {})
            yield from ((cut, empty) for cut in sorted(cuts, reverse=True) if cut < c)
            return
        used = np.concatenate([k[0] for k in kids])
        parent = np.concatenate([k[1] for k in kids])
        made = {p: a[:at] for p, a in made.items()}
        inherited = {p: a for p, a in out.items() if p not in touched}
        key = _back_key(made, by, len(used))
        width = max(1, sum(layers[p].windows for p in (*inherited, *made))
                    * len(options[c - 1]))
        nodes = max(MIN_NODES, min(cells, MAX_CELLS) // width)
        resources, _, out, _ = _merge(used, np.zeros(len(used), dtype=dtype), key, parent,
                                   inherited, made, nodes)
        if c - 1 in cuts:
            yield c - 1, _Frontier(resources, np.zeros(len(resources), dtype=dtype), dict(out))


def _meeting(instance: PlacementInstance, options: list[list[_Option]], cut: int,
             left: float) -> tuple[int, tuple[int, ...]] | tuple[()]:
    """The budget and cuts of ``diagram_bound``'s backward diagram in ``left`` seconds:
    ``MEET_CELLS`` to the first layer, else half that, meeting at ``cut`` on the way, else
    ``MEET_CELLS`` to ``cut`` only (what the time left holds: ``BACKWARD_FITS`` of
    ``_backward_cells``); () if none fits. To the first layer the backward diagram does
    most (resnet18-28/PUMA LL, 8 M cells: 640.0 us met at the first layer, 607.2 at
    layer1's last conv, where the forward diagram gives 604.6 at 2 M), but it charges
    about twice as much (resnet18-28/ISAAC: 2.26 s against 1.23)."""
    for cells, to in ((MEET_CELLS, 0), (MEET_CELLS // 2, 0), (MEET_CELLS, cut)):
        if BACKWARD_FITS * _backward_cells(instance, options, cells, to) * WORK_S["cell"] <= left:
            return cells, tuple(sorted({cut, to}, reverse=True))
    return ()


def _first(instance: PlacementInstance, options: list[list[_Option]], upper: float,
           deadline: float | None, clock: Clock) -> _Frontier | None:
    """The first layer's options as nodes, unmerged (a forward diagram stopped there)."""
    nodes = [len(options[0])] * len(options)
    front = _diagram(instance, options, nodes, upper, deadline, restricted=False, clock=clock,
                     stop=0)
    return front if isinstance(front, _Frontier) else None


def _backward_cells(instance: PlacementInstance, options: list[list[_Option]], cells: int,
                    cut: int) -> int:
    """What ``_backward`` charges at most: every child fitting, each layer's nodes as many
    as ``cells`` allow (the vectors held followed without their values)."""
    layers = instance.layers
    into = _into(instance)
    held: set[int] = set()
    nodes, total = 1, 0
    for c in range(len(layers) - 1, cut, -1):
        reach = _reach(layers[c], into[c])
        kids = nodes * len(options[c])
        total += kids * reach
        held = (held - {c}) | {e.producer for e, _ in into[c]}
        width = max(1, sum(layers[p].windows for p in held) * len(options[c - 1]))
        nodes = min(kids, max(MIN_NODES, min(cells, MAX_CELLS) // width))
    return total


def _back_key(made: dict[int, np.ndarray], by: str, n: int) -> np.ndarray:
    """What orders a backward layer's children of equal crossbars: the longest path from
    the vectors the layer made ('finish') or the middle window's of the earliest of them
    ('middle')."""
    if not made:
        return np.zeros(n, dtype=np.int64)
    if by == "finish":
        return np.max([a.max(axis=1) for a in made.values()], axis=0)
    first = made[min(made)]
    return first[:, first.shape[1] // 2]


def _rest(after: np.ndarray, k: np.ndarray, w: np.ndarray, replica: np.ndarray) -> np.ndarray:
    """L(b) = max over b' >= b in b's replica of (b' - b) w + after(b'), per row: the mirror
    of ``evaluate.replica_done`` (a running max from the end, an offset per replica)."""
    x = after + k * w
    step = x.max() - x.min() + 1 if x.size else 1
    shifted = (x - replica * step)[..., ::-1]
    return np.maximum.accumulate(shifted, axis=-1)[..., ::-1] + replica * step - k * w


def _readers(e, windows: int, made: int) -> tuple:
    """Edge ``e``'s consumer windows grouped by the producer window they read, for
    ``_reached``: a prefix edge's last window per consumer window and, per producer window,
    the first consumer window whose prefix holds it; else the readers sorted by the window
    they read, where each run starts, and that window."""
    if e.reads is None:  # consumer window b reads the prefix up to last(b), which grows
        last = e.prefix_last(windows, made)
        return ("prefix", np.searchsorted(last, np.arange(made), side="left"), windows)
    rows, cols = np.nonzero(e.reads >= 0)
    reads = e.reads[rows, cols]
    order = np.argsort(reads, kind="stable")
    reads, rows = reads[order], rows[order]
    firsts = np.flatnonzero(np.r_[True, reads[1:] != reads[:-1]])
    return ("reads", rows, firsts, reads[firsts])


def _into(instance: PlacementInstance) -> dict[int, list[tuple]]:
    """Per layer, its (edge, ``_readers``) pairs as it consumes them, equal readers shared."""
    layers = instance.layers
    return {li: _shared([(e, _readers(e, layers[li].windows, layers[e.producer].windows))
                         for e in instance.edges if e.consumer == li])
            for li in range(len(layers))}


def _shared(edges: list[tuple]) -> list[tuple]:
    """One consumer's (edge, readers) pairs, those with equal readers holding one object: a
    residual block's convs read the producers of its Add with one pattern (resnet18-28: up to
    three edges), so ``_backward`` gathers once for them all."""
    out: list[tuple] = []
    for e, readers in edges:
        same = next((r for _, r in out if len(r) == len(readers) and all(
            np.array_equal(a, b) for a, b in zip(r, readers, strict=True))), readers)
        out.append((e, same))
    return out


def _reach(layer, into: list[tuple]) -> int:
    """What the backward diagram charges a child of ``layer``: its windows and the reads of
    its edges' readers, each shared reader once (``_into``)."""
    return layer.windows + sum(_read_cells(readers) for readers in
                               {id(r): r for _, r in into}.values())


def _read_cells(readers: tuple) -> int:
    """What ``_reached`` goes through per node, in cells: a gathered window time is a
    quarter of one (with the children written in place; fitted on the backward diagrams of
    vgg8-28/PUMA and resnet18-28 LL at 2, 4 and 8 M cells, to the first layer and to
    ``_meet_cut``: at 8 M cells to the first layer resnet18-28/ISAAC charges 2.26 s, where
    a dozen runs took 1.6 to 3.4 s of wall, vgg8-28/PUMA 2.45 for 2.3 to 2.6; to
    ``_meet_cut`` 1.02 to 1.80 s for 1.6 to 2.7, 12 to 50% under the wall, the merges
    weighing more there)."""
    return int(readers[2]) if readers[0] == "prefix" else len(readers[1]) // 4


def _reached(readers: tuple, value: np.ndarray, made: int) -> np.ndarray:
    """Per producer window, the largest ``value`` (one row per node, one column per consumer
    window) over the consumer windows that read it (0 where none does)."""
    if readers[0] == "prefix":
        _, first, windows = readers
        suffix = np.maximum.accumulate(value[:, ::-1], axis=1)[:, ::-1]
        return np.where(first < windows, suffix[:, np.minimum(first, windows - 1)], 0)
    _, rows, firsts, targets = readers
    out = np.zeros((len(value), made), dtype=value.dtype)
    out[:, targets] = np.maximum.reduceat(value[:, rows], firsts, axis=1)
    return out


def _meet(instance: PlacementInstance, front: _Frontier, back: _Frontier,
          deadline: float | None, clock: Clock) -> float | None:
    """The least over the pairs of nodes that fit together of max(forward finish, max over
    the cut's producers p and windows a of done_p(a) + out_p(a)), in ns (inf: no pair);
    None if ``clock`` passed ``deadline``."""
    room = _room(instance)
    crossing = [p for p in back.vectors if p in front.vectors]
    width = sum(front.vectors[p].shape[1] for p in crossing)
    best = math.inf
    for i in range(len(front.finish)):
        fits = np.flatnonzero(((front.resources[i] + back.resources) <= room).all(axis=1))
        clock.charge(MEET_NODE_CELLS + fits.size * width / MEET_SPEEDUP, "cell")
        if not fits.size:
            continue
        if deadline is not None and clock.now() > deadline:
            return None
        value = np.full(fits.size, int(front.finish[i]), dtype=np.int64)
        for p in crossing:
            np.maximum(value, (front.vectors[p][i].astype(np.int64)[None, :]
                               + back.vectors[p][fits]).max(axis=1), out=value)
        best = min(best, float(value.min()))
    return best * PERIOD_NS


def _room(instance: PlacementInstance, share: float = 1.0) -> np.ndarray:
    """The crossbars and local memory of all the cores (0 bytes without a memory limit),
    held to ``share``."""
    room = np.array([instance.cores * instance.crossbars_per_core,
                     instance.cores * (instance.local_memory_bytes or 0)])
    return (room * share).astype(np.int64)


def _lifts(options: list[list[_Option]], room: np.ndarray,
           price: tuple[float, float] | None) -> tuple[list[np.ndarray], int]:
    """Per layer and option, its resources at ``price`` (ns a crossbar, ns a byte of local
    memory) in ticks, rounded down, and what the room costs at that price, its cap: the
    Lagrangian relaxation of the room. A node's times carry the lifts of its prefix; each
    option set that fits the room takes no more than the cap in all, so its floor is at
    least its node's finish less the node's most lift and less the cap. Zeros unpriced."""
    if price is None:
        return [np.zeros(len(opts), dtype=np.int64) for opts in options], 0
    return ([np.array([math.floor((price[0] * o.crossbars + price[1] * o.memory) / PERIOD_NS)
                       for o in opts], dtype=np.int64) for opts in options],
            math.floor((price[0] * int(room[0]) + price[1] * int(room[1])) / PERIOD_NS))


def _least(options: list[list[_Option]]) -> np.ndarray:
    """Per layer, the least crossbars and memory any of its options takes."""
    return np.array([[min(o.crossbars for o in opts), min(o.memory for o in opts)]
                     for opts in options])


def _tick_dtype(options: list[list[_Option]]) -> type:
    """int32 where the longest pipeline (every layer's slowest replica in turn, in ticks)
    fits it, else int64."""
    longest = sum(max(int(o.w.max()) * (int(o.k.max()) + 1) + o.span for o in opts)
                  for opts in options)
    return np.int32 if longest < np.iinfo(np.int32).max else np.int64


def _layer_options(instance: PlacementInstance, counted: bool = True) -> list[list[_Option]]:
    return [_options(instance, li, counted) for li in range(len(instance.layers))]


def _nodes(instance: PlacementInstance, options: list[list[_Option]], cells: int,
           least: int | None = None) -> list[int]:
    """How many nodes each layer keeps: as many as ``cells`` window times hold, counting a
    node's own windows and its children in the next layer (options times windows), but no
    fewer than ``least`` (``MIN_NODES`` if None) and no more than ``MAX_CELLS`` hold."""
    least = MIN_NODES if least is None else least
    layers = instance.layers
    out = []
    for li, layer in enumerate(layers):
        per_node = max(1, layer.windows, len(options[li + 1]) * layers[li + 1].windows
                       if li + 1 < len(layers) else 0)
        out.append(max(1, min(max(least, cells // per_node), MAX_CELLS // per_node)))
    return out


def _groups(used: np.ndarray, key: np.ndarray, nodes: int,
            option: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The children in order of crossbars (then of the ``option`` of their layer they took,
    if given, then ``key``), and where each of ``nodes`` groups of equal size starts in that
    order. Children of one option share its replicas' boundaries and periods, so their
    window times rise and fall alike and their least loses less than that of another
    option's: resnet18-28/Arch-C LL's forward diagram at 8 M cells 289.9 -> 294.7 us."""
    order = (np.lexsort((key, used[:, 0])) if option is None
             else np.lexsort((key, option, used[:, 0])))
    return order, np.arange(nodes) * len(order) // nodes


def _merge(used: np.ndarray, finish: np.ndarray, key: np.ndarray, parent: np.ndarray,
           inherited: dict[int, np.ndarray], made: dict[int, np.ndarray], nodes: int,
           priced: tuple[np.ndarray, np.ndarray] | None = None,
           option: np.ndarray | None = None,
           ) -> tuple[np.ndarray, np.ndarray, dict[int, np.ndarray], np.ndarray]:
    """At most ``nodes`` nodes, each group of ``_groups`` keeping the least resources and
    finish of its children, the least vectors their parents pass on (``inherited``, one
    row per parent: taken once per group and parent) and the least of their own (``made``,
    one row per child). ``priced``: each child's own lift and the most lift of its prefixes
    (``_lifts``); a parent's vectors are then passed on with the least lift its children in
    the group took, and each node keeps the most lift of its children (returned last;
    zeros unpriced). ``option``: each child's option of its layer, for ``_groups``."""
    lift, lifted = priced if priced is not None else (None, np.zeros(len(finish), np.int64))
    if len(finish) <= nodes:
        done = {p: a[parent] if lift is None else a[parent] + lift[:, None]
                for p, a in inherited.items()}
        done.update(made)
        return used, finish, done, lifted
    order, starts = _groups(used, key, nodes, option)
    group = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(order))))
    parents = max((len(a) for a in inherited.values()), default=1)
    codes = group * parents + parent[order]  # by group, then parent
    pairs = np.unique(codes)
    firsts = np.searchsorted(pairs // parents, np.arange(len(starts)))
    rows = pairs % parents
    if lift is None:
        done = {p: _least_rows(a, rows, firsts) for p, a in inherited.items()}
    else:
        pair = np.searchsorted(pairs, codes)
        least = np.full(len(pairs), np.iinfo(np.int64).max)
        np.minimum.at(least, pair, lift[order])
        done = {p: _least_rows(a, rows, firsts, least) for p, a in inherited.items()}
    done.update({p: _least_rows(a, order, starts) for p, a in made.items()})
    return (np.minimum.reduceat(used[order], starts, axis=0),
            np.minimum.reduceat(finish[order], starts), done,
            np.maximum.reduceat(lifted[order], starts))


def _least_rows(a: np.ndarray, rows: np.ndarray, starts: np.ndarray,
                lift: np.ndarray | None = None) -> np.ndarray:
    """Per group of ``rows`` (group i from ``starts[i]`` to the next start, none empty),
    the least of those rows of ``a`` (each plus its ``lift``), window by window:
    ``np.minimum.reduceat`` of ``a[rows]`` along the first axis, which takes 3 to 10 times
    as long on the diagram's shapes (2,000 to 131,000 rows of 49 to 3,136 windows, in 98 to
    83,000 groups).
    Small groups (at most ``RANK_MOST`` rows) go rank by rank: every group's first row, then
    the second row of those that have one, and so on; larger ones a group at a time."""
    def picked(index: np.ndarray) -> np.ndarray:
        return a[rows[index]] if lift is None else a[rows[index]] + lift[index, None]

    sizes = np.diff(np.append(starts, len(rows)))
    most = int(sizes.max(initial=0))
    if most <= RANK_MOST:
        out = picked(starts)
        for rank in range(1, most):
            live = np.flatnonzero(sizes > rank)
            out[live] = np.minimum(out[live], picked(starts[live] + rank))
        return out
    out = np.empty((len(starts), a.shape[1]),
                   dtype=a.dtype if lift is None else np.result_type(a, lift))
    for i, (start, size) in enumerate(zip(starts, sizes, strict=True)):
        np.minimum.reduce(picked(np.arange(start, start + size)), axis=0, out=out[i])
    return out


def _representatives(used: np.ndarray, finish: np.ndarray, key: np.ndarray,
                     nodes: int, option: np.ndarray | None = None) -> np.ndarray:
    """Of each group of ``_groups``, the child that finishes first (all when few)."""
    if len(finish) <= nodes:
        return np.arange(len(finish))
    order, starts = _groups(used, key, nodes, option)
    ends = np.append(starts[1:], len(order))
    return np.array([order[a + int(np.argmin(finish[order[a:b]]))]
                     for a, b in zip(starts, ends, strict=True)])


@dataclass(frozen=True)
class LeastFloor:
    """What ``diagram_bound`` found."""

    bound_ns: float
    """No option set that fits the crossbars has a floor below this (0: none finished)."""
    cells: int
    """The largest budget that finished (0: none)."""
    picks: Picks | None
    """The restricted diagram's option set (None if it did not finish)."""
    picks_ns: float
    """Its ``floor_latency`` (inf without one)."""
    starved: bool = False
    """Whether it stopped where the next budget would still keep ``MIN_NODES`` on some
    layer: more cells buy no nodes there, only more nodes a layer (``floor_options``'
    ``least``) would."""


def diagram_bound(instance: PlacementInstance, seconds: float, *,
                  upper: float = math.inf, clock: Clock | None = None) -> LeastFloor:
    """For each of the ``BUDGETS`` in turn while ``seconds`` last (skipping one that keeps
    no more nodes than the one before): the restricted diagram (up to ``PRIMAL_CELLS``, or
    until it has found one: an option set with a low floor, which lowers ``upper``), then
    ``floor_bound`` below the better of ``upper`` (ns) and that set's floor, grouping by the
    ``KEYS`` in turn; the best bound of those that finished. A budget is not tried when
    the least of ``NEXT_COST`` times what the one before took is more than the time left.
    At ``MEET_CELLS``, or at the budget after which the next may not finish (the most of
    ``NEXT_COST``), one backward diagram as the time left allows (``_meeting``), met on its
    way with the forward diagram's nodes after ``_meet_cut`` and with the first layer's
    options (``meet_bound``), and kept at ``_meet_cut`` to meet each later forward diagram;
    with ``PRUNE`` its nodes at every cut it passed then guide the restricted diagram and
    prune the forward one (``_completed``), at that budget again and at every later one.
    Where the next budget would still keep ``MIN_NODES`` on some layer (``starved``), the
    last budget: the next one's restricted diagram if it is within ``PRIMAL_CELLS`` and
    the time holds it and a priced diagram, then the priced diagrams at this one while the
    time holds them (``_priced``, ``PRICE_SHARES``), and no meeting (the backward diagram
    does not finish there). ``seconds`` of ``clock`` (a new wall clock if None)."""
    clock = clock or Clock()
    deadline = clock.now() + seconds
    options = _layer_options(instance)
    primal = options if PRIMAL_COUNTED else _layer_options(instance, counted=False)
    cut = _meet_cut(instance)
    best, largest, runs = 0.0, 0, 0
    picks, picks_ns, starved = None, math.inf, False
    before: list[int] = []
    tried: tuple | None = None  # the backward diagram's budget and cuts, once planned
    back = None  # its nodes at ``cut``, to meet each later forward diagram
    completion: dict[int, _Completion] = {}  # its nodes at every cut it passed, to prune
    for i, cells in enumerate(BUDGETS):
        nodes = _nodes(instance, options, cells)
        if nodes == before:
            continue
        before = nodes
        t = clock.now()
        if cells <= PRIMAL_CELLS or picks is None:
            found = _restricted(instance, primal, cells, deadline, 1.0, PRIMAL_COUNTED, clock,
                                completion or None, picks_ns)
            if found is None and clock.now() > deadline:
                break
            if found is not None and found[0] < picks_ns:
                picks_ns, picks = found
        target = min(upper, picks_ns)
        f = clock.now()
        bound = _diagram(instance, options, nodes, target, deadline, restricted=False,
                         clock=clock, by=KEYS[runs % len(KEYS)], cut=cut,
                         completion=completion or None)
        if bound is None:
            break
        best, largest, runs = max(best, bound.ns), cells, runs + 1
        now = clock.now()
        final = i == len(BUDGETS) - 1
        # what the next budget repeats: its forward diagram, and its restricted one if it
        # runs that too
        again = not final and BUDGETS[i + 1] <= PRIMAL_CELLS or picks is None
        spent = now - (t if again else f)
        last = NEXT_COST[1] * spent > deadline - now or final
        starved = not final and min(_nodes(instance, options, BUDGETS[i + 1])) <= MIN_NODES
        if starved and PRICE_SHARES and picks is not None and best < target:
            priced = PRICE_COST * (now - f)  # what a priced diagram at this budget takes
            if (BUDGETS[i + 1] <= PRIMAL_CELLS
                    and NEXT_COST[0] * (f - t) + priced <= deadline - now):
                found = _restricted(instance, primal, BUDGETS[i + 1], deadline, 1.0,
                                    PRIMAL_COUNTED, clock, None, picks_ns)
                if found is not None and found[0] < picks_ns:
                    picks_ns, picks = found
                target = min(upper, picks_ns)
            best = max(best, _priced(instance, options, nodes, primal, picks, target,
                                     deadline, clock, priced))
            break
        if (tried is None and (last or cells >= MEET_CELLS) and best < target
                and bound.front is not None):
            tried = _meeting(instance, options, cut, deadline - now)
            if tried:
                back_cells, cuts = tried
                every = (tuple(range(min(cuts), len(instance.layers) - 1)) if PRUNE
                         else cuts)
                for c, nodes_at in _backwards(instance, options, back_cells, every, deadline,
                                              clock, "middle"):
                    if PRUNE:
                        completion[c] = _completion(nodes_at, clock)
                    if c not in cuts:
                        continue
                    back = nodes_at if c == cut else back
                    front = bound.front if c == cut else _first(instance, options, target,
                                                                deadline, clock)
                    met = (None if front is None
                           else _meet(instance, front, nodes_at, deadline, clock))
                    best = best if met is None else max(best, min(target, met))
            if completion:  # this budget again, guided and pruned
                found = _restricted(instance, primal, cells, deadline, 1.0, PRIMAL_COUNTED,
                                    clock, completion, picks_ns)
                if found is not None and found[0] < picks_ns:
                    picks_ns, picks = found
                target = min(upper, picks_ns)
                pruned = None if best >= target else _diagram(
                    instance, options, nodes, target, deadline, restricted=False,
                    clock=clock, by=KEYS[runs % len(KEYS)], completion=completion)
                if pruned is not None:
                    best, runs = max(best, pruned.ns), runs + 1
        elif back is not None and bound.front is not None and best < target:
            met = _meet(instance, bound.front, back, deadline, clock)
            best = best if met is None else max(best, min(target, met))
        now = clock.now()
        if best >= target or NEXT_COST[0] * spent > deadline - now:
            break
    return LeastFloor(best, largest, picks, picks_ns, starved)


def _priced(instance: PlacementInstance, options: list[list[_Option]], nodes: list[int],
            picked_from: list[list[_Option]], picks: Picks, target: float, deadline: float,
            clock: Clock, cost: float) -> float:
    """The best bound (ns; 0 if none ran) of the priced diagrams at ``nodes``, the resource
    ``picks`` (options of ``picked_from``) fills the larger share of priced at each of
    ``PRICE_SHARES`` of ``target`` (ns) for all its room, in turn while the time left holds
    ``cost`` (what one takes)."""
    room = _room(instance)
    used = np.sum([(o.crossbars, o.memory) for opts, pick in zip(picked_from, picks, strict=True)
                   for o in opts if (o.choice, o.replication) == pick], axis=0)
    memory = room[1] > 0 and used[1] / room[1] > used[0] / room[0]
    best = 0.0
    for share in PRICE_SHARES:
        if deadline - clock.now() < cost:
            break
        each = share * target / room[int(memory)]
        found = _diagram(instance, options, nodes, target, deadline, restricted=False,
                         clock=clock, by="finish",
                         price=(0.0, each) if memory else (each, 0.0))
        if found is None:
            break
        best = max(best, found.ns)
    return best
