"""The placement instance: what replication and placement decide, and what each choice costs.

Built from the Graph, its Workload and the target, once per map. Costs are per window (one
input vector) and come from what the reference codegen emits for a replica (see
``codegen/generate.py``): every array group (AG) runs ``steps`` MVMs per window; the replica's
home core (the core of its first AG) loads the window's new input pixels from global memory
(HT) or receives them (LL), copies the im2col slices that span several pixels, sends each AG
that sits on another core its input slice and receives its partial sums, adds the partial sums
and the bias on its vector unit, applies a fused activation (Relu), and stores or sends the
output pixel. Symbols follow
``formulations/placement.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from fractions import Fraction

import networkx as nx
import numpy as np

from pimsolve.errors import InfeasibleError
from pimsolve.ir import VIEW_OPS, Graph, LayerKind, MvmGeometry, Workload, pixel_elements
from pimsolve.lowering.unfold import EMITTED_FORMATS, ag_rows
from pimsolve.target import CrossbarTarget

__all__ = ["Choice", "PlacementLayer", "Edge", "PlacementInstance", "build_instance",
           "SYNC_HOME_SHARE"]

SYNC_HOME_SHARE = 0.75
"""HT with sync communication: a replica's home keeps at least this share of the AGs one core
can hold (``PlacementInstance.home_least``)."""


@dataclass(frozen=True)
class Choice:
    """One unfolding u of a layer: its AGs and its per-window costs (ns, bytes, pJ)."""

    unfolding: str
    ags: int
    """A_u: AGs per replica."""
    crossbars_per_ag: int
    """X_u."""
    ag_ns: float
    """t^ag_u: busy time of one AG per window (steps x mvm latency)."""
    issue_ns: float
    """t^is_u: issue slots one AG takes per window on its core (steps x issue interval)."""
    home_vfu_ns: float
    """t^v_u: home vector unit per window (partial-sum and bias adds, a fused activation)."""
    home_local_ns: float
    """t^c_u: home local-memory port per window (im2col copies)."""
    in_bytes: int
    """b^in_u: input slice an AG receives per window when it sits off its home core."""
    out_bytes: int
    """b^out_u: partial sums such an AG sends back per window."""
    window_energy_pj: float
    """e_u: crossbar, ADC, DAC, vector and local-memory energy of one replica-window."""
    home_ag_bytes: int = 0
    """mu^a_u: local memory a replica's home keeps per AG (its im2col input slice)."""
    remote_bytes: int = 0
    """mu^r_u: local memory of an AG off its home (input slice and partial sums)."""


@dataclass(frozen=True)
class PlacementLayer:
    """A crossbar layer: its windows, unfolding choices and admissible replications."""

    name: str
    windows: int
    """W_l."""
    choices: tuple[Choice, ...]
    replications: tuple[int, ...]
    """R_l: admissible replication factors (each gives a smaller ceil(W_l / r))."""
    load_bytes: tuple[int, ...]
    """lam_{l,r}, per r in R_l: HT global-memory loads of one replica on average (its windows'
    distinct input pixels, PIMCOMP's input reuse inside a replica)."""
    store_bytes: float
    """Output bytes per window (stored in HT, sent on in LL)."""
    input_bytes: float
    """Input pixel bytes per window in LL (received from the producer's core)."""
    home_bytes: int = 0
    """mu^h_l: local memory of a replica's home apart from its AGs: the input rows its
    windows slide over (line buffer), its output (double-buffered) and the bias."""
    overlap_bytes: tuple[int, ...] = ()
    """delta_{l,r}, per r in R_l: loads a replica saves when it shares its home core with
    another replica of the layer (PIMCOMP Fig. 8c): co-located replicas take adjacent window
    ranges and load their common input pixels once. The average overlap of two adjacent
    ranges, so that h = r replicas on one core load the layer's input exactly once."""

    spread_bytes: tuple[int, ...] = ()
    """s_{l,n}, per n = 1, 2, ..., min(r_max, K) (LL on several chips, else empty): the input
    bytes n contiguous window ranges read in all (the rows neighbouring ranges share counted
    for each); what n cores homing l's replicas receive, since codegen sends a pixel once to
    a core however many replicas it homes."""

    def overlap(self, ri: int) -> int:
        """delta_{l,r} for r = R_l[ri] (0 where the layer's windows share no input)."""
        return self.overlap_bytes[ri] if self.overlap_bytes else 0

    def core_load_bytes(self, ri: int, homes):
        """HT loads of a core holding ``homes`` replicas (R_l[ri]):
        lam h - delta (h - 1) for h >= 1, else 0 (``homes`` may be an array)."""
        lam, delta = self.load_bytes[ri], self.overlap(ri)
        h = np.asarray(homes)
        return np.where(h > 0, (lam - delta) * h + delta, 0)

    def windows_per_replica(self, r: int) -> int:
        """m_{l,r} = ceil(W_l / r)."""
        return -(-self.windows // r)


@dataclass(frozen=True)
class Edge:
    """LL: layer ``consumer`` reads what layer ``producer`` makes, window by window."""

    producer: int
    consumer: int
    fraction: float
    """Of the producer's windows, the share the consumer's first window needs (its kernel's
    rows); where ``reads`` is None, consumer window a needs the producer's first
    ceil((a / W_l + fraction) W_p) windows."""
    reads: np.ndarray | None = field(default=None, compare=False, repr=False)
    """N_e: per consumer window (row), the producer windows its input pixels come from (-1:
    padding); None where the shapes do not map pixel to pixel (a Gemm reads every window)."""
    nbytes: int = 0
    """B_e: the edge's data per inference, the smaller of the producer's output and the
    consumer's input (lam_{l,1}; a pool between them shrinks it)."""
    direct: bool = True
    """The producer's data reaches the consumer through single-input layers (or a Concat)
    only, so the producer's cores send it; through a join (an Add of two branches) what
    travels is the join's output, made next to one of its producers."""

    def needs(self, consumer_windows: int, producer_windows: int,
              bounds: np.ndarray) -> np.ndarray:
        """N_e: per consumer window (row), the producer windows it waits for (-1: none): the
        ``reads``, or for a prefix the latest window in each producer replica over the
        window ranges ``bounds`` [b_i, b_{i+1}) (a replica makes its windows in order)."""
        if self.reads is not None:
            return self.reads
        last = self.prefix_last(consumer_windows, producer_windows)
        lo, hi = bounds[:-1][None, :], bounds[1:][None, :] - 1
        return np.where(lo <= last[:, None], np.minimum(last[:, None], hi), -1)

    def prefix_last(self, consumer_windows: int, producer_windows: int) -> np.ndarray:
        """Without ``reads``: per consumer window a, the last producer window of the prefix it
        waits for, ceil((a / W_l + fraction) W_p) - 1 (at least window 0, at most W_p - 1)."""
        a = np.arange(consumer_windows)
        return np.clip(np.ceil(a * producer_windows / consumer_windows + self.fraction
                               * producer_windows - 1e-9).astype(np.int64), 1,
                       producer_windows) - 1

    def first_waiting_for(self, consumer_windows: int, producer_windows: int,
                          q: int) -> int | None:
        """The first consumer window that waits for producer window q (None: none does)."""
        if self.reads is not None:
            hit = np.flatnonzero((self.reads == q).any(axis=1))
        else:
            hit = np.flatnonzero(self.prefix_last(consumer_windows, producer_windows) >= q)
        return int(hit[0]) if len(hit) else None


@dataclass(frozen=True)
class PlacementInstance:
    """Everything the placement formulations, baselines and GA need."""

    model: str
    target: str
    mode: str
    cores: int
    cores_per_chip: int
    crossbars_per_core: int
    computing_mode: str
    layers: tuple[PlacementLayer, ...]
    edges: tuple[Edge, ...]
    depth: int
    """HT pipeline depth (compute layers on the longest path)."""
    vector_core_ns: dict[str, float]
    """Per core, vector-layer time spread over all cores (HT) by resource."""
    vector_gm_bytes: float
    """HT: global-memory bytes of vector layers per inference (all cores)."""
    gm_bytes_per_ns: float
    link_bytes_per_ns: float
    hop_ns: float
    gm_latency_ns: float
    gm_pj_per_byte: float
    net_pj_per_byte_hop: float
    constant_energy_pj: float
    """Energy every mapping spends (vector layers, graph input and output)."""
    max_layers_per_core: int | None = None
    local_memory_bytes: int | None = None
    """M - mu^v: local memory per core left to crossbar layers (None: not constrained)."""
    vector_reserve_bytes: int = 0
    """mu^v: local memory every core keeps for its vector-layer tasks."""
    sync: bool = False
    """Sync communication: a send and its recv block both cores until the data has arrived,
    so a core's transfers and its MVM issue slots add up (resource ``serial``)."""
    offchip_bytes_per_ns: float | None = None
    """The off-chip link all chips share (None on one chip): resource ``offchip``."""
    offchip_pj_per_byte: float = 0.0

    @property
    def chips(self) -> int:
        return self.cores // self.cores_per_chip

    @property
    def inputs_ahead(self) -> bool:
        """LL with async links on one chip: a home takes its replica's input pixels as the
        producers make them, ahead of its windows, so they bound the layer's span (F_l >=
        R_l + its busiest inbound link with them) and not each window's period. Across chips
        they queue on the one off-chip link; with sync links the in-order core takes each in
        its turn: there they stay in the period."""
        return self.mode == "ll" and not self.sync and self.chips == 1

    def edge_rates(self, edge: Edge) -> tuple[int, int, int]:
        """(a_e, b_e, den_e): B_e per producer and per consumer window in 1/den_e bytes
        (rounded to 1/64 byte). Replicas take window ranges in core order, so chip c makes the
        edge's data in the range a_e times the producer replica-windows on chips before it up
        to those on c, and takes it in the like range of the consumer's."""
        a, b = (Fraction(edge.nbytes, self.layers[i].windows).limit_denominator(64)
                for i in (edge.producer, edge.consumer))
        den = math.lcm(a.denominator, b.denominator)
        return int(a * den), int(b * den), den

    def fanout(self, layer: int, n: int) -> Fraction:
        """phi_{l,n}: s_{l,n} / s_{l,1} (to 1/16), how many times over the n cores homing
        layer l's replicas receive its input in all: the rows neighbouring ranges share go
        to each."""
        spread = self.layers[layer].spread_bytes
        return Fraction(spread[n - 1], spread[0]).limit_denominator(16)

    def replica_bytes(self, layer: int, choice: int) -> int:
        """mu^h_l + A_u mu^a_u: local memory of one replica whose AGs all sit at home."""
        lay = self.layers[layer]
        u = lay.choices[choice]
        return lay.home_bytes + u.ags * u.home_ag_bytes

    def home_least(self, u: Choice) -> int:
        """The fewest of a replica's AGs (unfolding ``u``) its home core keeps: all A_u in core
        mode; in HT with sync communication ``SYNC_HOME_SHARE`` of those one core can hold,
        rounded up, since a home that keeps fewer meets each AG elsewhere in a paired
        transfer every window and in-order cores then wait for each other, which the model
        does not count (resnet34/PUMA HT: a placement with 763 of its 888 AGs off their
        homes, 3964 us in the model, simulated 7.28 ms; the greedy placements, whose homes
        keep that many, within 0.3% to 6%); else one."""
        if self.computing_mode == "CM":
            return u.ags
        if self.sync and self.mode == "ht":
            return self.home_share(u)
        return 1

    def home_share(self, u: Choice) -> int:
        """``SYNC_HOME_SHARE`` of the AGs (unfolding ``u``) one core can hold, rounded up."""
        return math.ceil(SYNC_HOME_SHARE * min(u.ags, self.crossbars_per_core
                                               // u.crossbars_per_ag))

    def layer_index(self, name: str) -> int:
        return next(i for i, layer in enumerate(self.layers) if layer.name == name)


def _kernel_pixels(geometry, windows: int) -> tuple[np.ndarray, ...]:
    """Per window (row) and kernel tap (column): the sample n (per row), the input row y and
    column x it reads (padding included), and whether that pixel is inside the input."""
    ho, wo = geometry.output_hw
    hi, wi = geometry.input_hw
    kh, kw = geometry.kernel
    (sh, sw), (dh, dw) = geometry.strides, geometry.dilations
    n, rest = np.divmod(np.arange(windows), ho * wo)
    oy, ox = np.divmod(rest, wo)
    y = np.repeat(oy[:, None] * sh - geometry.pads[0] + np.arange(kh)[None, :] * dh, kw, axis=1)
    x = np.tile(ox[:, None] * sw - geometry.pads[1] + np.arange(kw)[None, :] * dw, (1, kh))
    return n, y, x, (y >= 0) & (y < hi) & (x >= 0) & (x < wi)


def _range_pixels(geometry, windows: int, reps) -> tuple[list[int], int]:
    """Per r in ``reps``: the input pixels (padding excluded) the r contiguous window ranges
    [k W / r, (k + 1) W / r) of a convolution read, summed over the ranges; and the pixels
    all windows read. One pass: (pixel, window) pairs sorted by pixel, then window, so a pair
    starts a new (pixel, range) whenever its pixel or its range label changes."""
    hi, wi = geometry.input_hw
    t = np.arange(windows)
    n, y, x, ok = _kernel_pixels(geometry, windows)
    pix = (n[:, None] * hi * wi + y * wi + x)[ok]
    win = np.broadcast_to(t[:, None], ok.shape)[ok]
    order = np.lexsort((win, pix))
    pix, win = pix[order], win[order]
    new_pixel = pix[1:] != pix[:-1]
    sums = []
    for r in reps:
        bounds = np.arange(r + 1) * windows // r
        label = np.searchsorted(bounds, win, side="right")
        sums.append(1 + int((new_pixel | (label[1:] != label[:-1])).sum()))
    return sums, 1 + int(new_pixel.sum())


def _replications(windows: int, limit: int) -> tuple[int, ...]:
    """1..limit, keeping only r whose ceil(W / r) is smaller than that of r - 1."""
    out, last = [], None
    for r in range(1, max(1, limit) + 1):
        m = -(-windows // r)
        if m != last:
            out.append(r)
            last = m
    return tuple(out)


def build_instance(graph: Graph, workload: Workload, target: CrossbarTarget, mode: str,
                   *, max_replication: int | None = None,
                   max_layers_per_core: int | None = None,
                   unfoldings: str = "all") -> PlacementInstance:
    """The placement instance of ``workload`` on ``target`` in ``mode`` ('ht' or 'll').

    ``unfoldings``: 'all' (every valid one the codegen emits) or 'default' (IK2,O,1 only).
    ``max_replication`` caps R_l (default: the crossbars and windows allow).
    """
    core, chip = target.core, target.chip
    eb = target.numerics.activation_bits / 8
    vu = core.vector_unit
    per_core = core.crossbars
    total = target.crossbars
    layers = []
    for m in workload.mvm_layers:
        geo = graph.layer(m.layer).mvm
        choices = []
        for u in m.unfoldings:
            if u.name not in EMITTED_FORMATS or (unfoldings == "default"
                                                 and u.name != m.unfolding.name):
                continue
            if u.crossbars_per_ag > per_core or (
                    target.computing_mode == "CM" and u.crossbars > per_core):
                continue
            choices.append(_choice(u, geo, target, eb, graph.layer(m.layer).activation))
        choices = _distinct(choices, m.unfolding.name)
        if not choices:
            u = m.unfolding
            need = u.crossbars if target.computing_mode == "CM" else u.crossbars_per_ag
            what = "a whole replica (core mode)" if target.computing_mode == "CM" else (
                "one array group")
            raise InfeasibleError(f"layer {m.layer}: {what} needs {need} crossbars, a core of "
                                  f"{target.name} has {per_core}")
        smallest = min(c.ags * c.crossbars_per_ag for c in choices)
        limit = min(m.windows, total // smallest)
        if max_replication is not None:
            limit = min(limit, max_replication)
        reps = _replications(m.windows, limit)
        # s_{l,n} only where x_e counts crossings: LL on several chips
        homes = range(1, min(limit, target.cores) + 1) if mode == "ll" and (
            target.chips > 1) else range(0)
        if geo.kernel == (1, 1) and geo.strides == (1, 1) or graph.layer(m.layer).kind is (
                LayerKind.GEMM):
            loads = tuple(math.ceil(m.windows * m.input_bytes_per_window / r) for r in reps)
            overlap = (0,) * len(reps)
            spread = (math.ceil(m.windows * m.input_bytes_per_window),) * len(homes)
        else:
            pixel = geo.in_channels * eb
            sums, whole = _range_pixels(geo, m.windows, [*reps, *homes])
            sums, spread = sums[:len(reps)], tuple(math.ceil(s * pixel)
                                                   for s in sums[len(reps):])
            loads = tuple(math.ceil(s * pixel / r) for s, r in zip(sums, reps, strict=True))
            overlap = tuple(0 if r == 1 else min(lam, math.floor((s - whole) * pixel / (r - 1)))
                            for s, r, lam in zip(sums, reps, loads, strict=True))
        layers.append(PlacementLayer(m.layer, m.windows, tuple(choices), reps, loads,
                                     m.output_bytes_per_window, m.input_bytes_per_window,
                                     _home_bytes(geo, graph.layer(m.layer).kind, eb),
                                     overlap, spread))
    edges, depth = _pipeline(graph, [p.name for p in layers], reads=mode == "ll")
    edges = tuple(replace(e, nbytes=math.floor(min(
        layers[e.producer].windows * layers[e.producer].store_bytes,
        layers[e.consumer].load_bytes[0]))) for e in edges)
    vec_ns = sum(math.ceil(v.ops / vu.lanes) * vu.op_latency_ns for v in workload.vector_layers)
    cores = target.cores
    vec_bytes = sum(_vector_gm_bytes(graph.layer(v.layer), v, cores, eb)
                    for v in workload.vector_layers if v.kind == "vector" or v.op == "Concat")
    vector_core_ns = {"vfu": vec_ns / cores,
                      "gport": vec_bytes / chip.global_memory.bandwidth_gb_per_s / cores}
    io_bytes = sum(t.size for t in (*graph.inputs, *graph.outputs)) * eb
    memory = int(core.local_memory.size_kib * 1024)
    reserve, largest = _vector_reserve(graph, eb)
    if reserve >= memory:
        raise InfeasibleError(f"the vector layers' buffers need {reserve} bytes of local memory "
                              f"per core ({largest}), a core of {target.name} has {memory}")
    # HT: the vector layers' loads and stores (LL keeps them on the cores)
    gm_bytes = io_bytes + (vec_bytes if mode == "ht" else 0)
    constant = (vec_ns / vu.op_latency_ns * vu.lanes * vu.energy_pj_per_op
                + gm_bytes * chip.global_memory.energy_pj_per_byte)
    return PlacementInstance(
        model=workload.model, target=target.name, mode=mode, cores=cores,
        cores_per_chip=chip.cores, crossbars_per_core=per_core,
        computing_mode=target.computing_mode, layers=tuple(layers), edges=edges, depth=depth,
        vector_core_ns=vector_core_ns, vector_gm_bytes=vec_bytes,
        gm_bytes_per_ns=chip.global_memory.bandwidth_gb_per_s,
        link_bytes_per_ns=chip.interconnect.bandwidth_gb_per_s,
        hop_ns=chip.interconnect.hop_latency_ns, gm_latency_ns=chip.global_memory.latency_ns,
        gm_pj_per_byte=chip.global_memory.energy_pj_per_byte,
        net_pj_per_byte_hop=chip.interconnect.energy_pj_per_byte_hop,
        constant_energy_pj=constant, max_layers_per_core=max_layers_per_core,
        local_memory_bytes=memory - reserve, vector_reserve_bytes=reserve,
        sync=chip.interconnect.communication == "sync",
        offchip_bytes_per_ns=(target.off_chip.bandwidth_gb_per_s if target.chips > 1
                              else None),
        offchip_pj_per_byte=target.off_chip.energy_pj_per_byte if target.chips > 1 else 0.0)


def _vector_gm_bytes(layer, vector, cores: int, eb: float) -> int:
    """HT: the global-memory bytes of a vector layer (or a Concat) as codegen moves them: its
    output once and its inputs once per core that reads them. Codegen spreads the tasks
    over the cores (output pixel t on core t K / T); a pool's core loads the input pixels
    of its windows, the neighbouring windows on it sharing theirs (googlenet's 3 x 3 stride-1
    pools read 4.0 (28 x 28) to 7.4 (14 x 14, 7 x 7) times their input on ISAAC's 168
    cores)."""
    if vector.op not in ("MaxPool", "AveragePool"):
        return vector.input_bytes + vector.output_bytes
    a = layer.attributes
    (batch, channels, *hw_in), hw_out = layer.inputs[0].shape, layer.outputs[0].shape[2:]
    pads = a.get("pads", [0, 0, 0, 0])
    geo = MvmGeometry(channels, channels, kernel=tuple(a["kernel_shape"]),
                      strides=tuple(a.get("strides", [1, 1])),
                      dilations=tuple(a.get("dilations", [1, 1])),
                      pads=tuple(pads), input_hw=tuple(hw_in),
                      output_hw=tuple(hw_out), batch=batch)
    return math.ceil(_spread_pixels(geo, cores) * channels * eb) + vector.output_bytes


def _spread_pixels(geometry, cores: int) -> int:
    """Input pixels (padding excluded) the windows of ``geometry`` read when window t runs on
    core t K / W, summed over the cores (each reads a pixel its windows share once)."""
    hi, wi = geometry.input_hw
    windows = geometry.windows
    n, y, x, ok = _kernel_pixels(geometry, windows)
    core = np.broadcast_to((np.arange(windows) * cores // windows)[:, None], ok.shape)
    pixel = n[:, None] * hi * wi + y * wi + x
    return len(np.unique(core[ok] * (geometry.batch * hi * wi) + pixel[ok]))


def _vector_reserve(graph: Graph, eb: float) -> tuple[int, str]:
    """mu^v: local memory each core keeps for vector-layer tasks, an estimate of what codegen
    allocates (its HT vector tasks are spread over all cores, store at once, stream a pool's
    pixels; LL runs them next to their producers): the largest task's inputs and output, plus
    one slot of every pixel size the vector layers use (the emitter keeps a spare per size).
    A pool of one output pixel (its kernel covers its input: a global pool, as a
    GlobalAveragePool, which has no kernel) counts one input pixel: it reads each once and
    lets it go once read (HT frees it; LL leaves it to be spilled). Also what the largest
    task is, for the error that names it."""
    largest, sizes, which = 0, set(), ""
    for layer in graph.layers:
        if layer.is_crossbar or layer.kind is LayerKind.DATA and layer.op in VIEW_OPS:
            continue
        window = (math.prod(layer.attributes.get("kernel_shape", [1]))
                  if layer.op in ("MaxPool", "AveragePool") else 1)
        if math.prod(layer.outputs[0].shape[2:]) == 1:
            window = 1
        held = [pixel_elements(t.shape) for t in layer.inputs]
        out = pixel_elements(layer.outputs[0].shape)
        if window * sum(held) + out > largest:
            largest = window * sum(held) + out
            which = (f"the largest task, {layer.op} {layer.name}, holds {window} x "
                     f"{'+'.join(map(str, held))} input and {out} output elements")
        sizes.update(held, [out])
    return (math.ceil((largest + sum(sizes)) * eb) if largest else 0), which


def _home_bytes(geo, kind: LayerKind, eb: float) -> int:
    """mu^h: the input rows one output row's windows read (all of a GEMM's input), the
    output twice (HT pipelines stores by a round) and the bias."""
    if kind is LayerKind.GEMM:
        pixels = 1
    else:
        hi, wi = geo.input_hw
        pixels = min(hi, (geo.kernel[0] - 1) * geo.dilations[0] + geo.strides[0]) * wi
    return math.ceil((pixels * geo.in_channels + 3 * geo.out_channels) * eb)


def _distinct(choices: list[Choice], default: str) -> list[Choice]:
    """The choices that differ in some cost the model counts: of unfoldings alike in every
    one (a layer whose input channels fill a crossbar's rows gets the same AGs from each), the
    default one (``default``) if it is among them, else the first. Any placement of a dropped
    unfolding has the kept one's value, so the optimum is the same, and the search no longer
    walks through their up to 3^L relabelings (vgg8-28/PUMA: 5 layers with 3 alike)."""
    kept: dict[Choice, Choice] = {}
    for c in choices:
        key = replace(c, unfolding="")
        if key not in kept or c.unfolding == default:
            kept[key] = c
    return [c for c in choices if kept[replace(c, unfolding="")] is c]


def _choice(u, geo, target: CrossbarTarget, eb: float, activation: str | None) -> Choice:
    """Per-window costs of unfolding ``u`` (mirrors ``codegen.generate._mvm_task``)."""
    xb, core = target.crossbar, target.core
    vu, lm = core.vector_unit, core.local_memory
    rows = ag_rows(u, geo.groups, xb.rows)
    cg = geo.in_channels // geo.groups
    steps = [math.ceil(n / xb.parallel_rows) for _, _, n in rows]
    cols = u.width
    lanes = math.ceil(cols / vu.lanes) * vu.op_latency_ns
    # the first AG of each group writes the output, every other AG (and every extra row
    # block) adds one partial-sum vector; the bias add (and a fused activation) covers all
    # output channels
    adds = (len(rows) - geo.groups) + sum(s - 1 for s in steps)
    whole = 1 + (activation is not None)
    vfu = adds * lanes + whole * math.ceil(geo.out_channels / vu.lanes) * vu.op_latency_ns
    # an AG whose rows span several input pixels gets its slice copied together
    copied = sum(n for _, start, n in rows if start // cg != (start + n - 1) // cg)
    local = copied * eb / lm.bandwidth_gb_per_s
    n_rows = sum(n for _, _, n in rows)
    energy = (u.crossbars_per_ag * n_rows / xb.rows * (xb.mvm_energy_pj + xb.dac_energy_pj)
              + u.crossbars_per_ag * sum(steps) * xb.adc_energy_pj
              + (adds * cols + whole * geo.out_channels) * vu.energy_pj_per_op
              + (n_rows + len(rows) * cols + copied * 2
                 + 3 * adds * cols + (3 + 2 * (whole - 1)) * geo.out_channels)
                * eb * lm.energy_pj_per_byte)
    return Choice(u.name, u.array_groups, u.crossbars_per_ag,
                  ag_ns=max(steps) * xb.mvm_latency_ns,
                  issue_ns=max(steps) * core.mvm_issue_interval_ns,
                  home_vfu_ns=vfu, home_local_ns=local,
                  in_bytes=math.ceil(n_rows / len(rows) * eb), out_bytes=math.ceil(cols * eb),
                  window_energy_pj=energy,
                  home_ag_bytes=math.ceil(max(n for _, _, n in rows) * eb),
                  remote_bytes=math.ceil((max(n for _, _, n in rows) + cols * max(steps)) * eb))


def _reads(geo, producer) -> np.ndarray | None:
    """N_e of a convolution reading ``producer``'s output: per output window, the producer
    windows of its kernel's input pixels (-1: padding), a pool of f x g between them mapping
    an input pixel to f x g producer pixels; None unless the producer's rows and columns are
    whole multiples of the convolution's input (then the consumer waits on a prefix)."""
    (hp, wp), (hi, wi) = producer.output_hw, geo.input_hw
    if hp % hi or wp % wi or producer.batch != geo.batch:
        return None
    f, g = hp // hi, wp // wi
    n, y, x, inside = _kernel_pixels(geo, geo.windows)
    cols = [np.where(inside, n[:, None] * hp * wp + (y * f + a) * wp + x * g + b, -1)
            for a in range(f) for b in range(g)]
    return np.concatenate(cols, axis=1)


def _pipeline(graph: Graph, mvm_names: list[str],
              reads: bool = True) -> tuple[tuple[Edge, ...], int]:
    """LL edges between crossbar layers (through vector layers), with their ``reads`` if
    asked (the LL pipeline needs them), and the HT pipeline depth."""
    dag = graph.dag
    index = {n: i for i, n in enumerate(mvm_names)}
    compute = [n for n in nx.topological_sort(dag)
               if graph.layer(n).kind is not LayerKind.DATA or graph.layer(n).op == "Concat"]
    depth_of: dict[str, int] = {}
    for n in nx.topological_sort(dag):
        own = 1 if n in compute else 0
        depth_of[n] = own + max((depth_of[p] for p in dag.predecessors(n)), default=0)
    depth = max(depth_of.values(), default=1)
    edges = []
    for name in mvm_names:
        layer = graph.layer(name)
        geo = layer.mvm
        if layer.kind is LayerKind.GEMM:
            fraction = 1.0
        else:
            needed = min(geo.input_hw[0], (geo.kernel[0] - 1) * geo.dilations[0] + 1
                         - geo.pads[0])
            fraction = max(needed, 1) / geo.input_hw[0]
        seen, stack = set(), [(p, False) for p in dag.predecessors(name)]
        direct: dict[int, bool] = {}
        while stack:
            p, joined = stack.pop()
            if (p, joined) in seen:
                continue
            seen.add((p, joined))
            if p in index:
                direct[index[p]] = direct.get(index[p], False) or not joined
            else:
                before = list(dag.predecessors(p))
                joined = joined or len(before) > 1 and graph.layer(p).op != "Concat"
                stack.extend((q, joined) for q in before)
        edges += [Edge(p, index[name], fraction,
                       _reads(geo, graph.layer(mvm_names[p]).mvm)
                       if reads and layer.kind is not LayerKind.GEMM else None, direct=d)
                  for p, d in direct.items()]
    return tuple(sorted(edges, key=lambda e: (e.consumer, e.producer))), depth
