"""Reference code generation: a Mapping and a Workload become one instruction stream per core.

Both PIMCOMP modes (Sec. VII) are emitted at the convolution-operator granularity:

* **HT** (high throughput, Alg. 1): one steady-state cycle of the batch pipeline. Every layer
  reads its inputs from global memory and stores its outputs there, so layers of one cycle are
  independent; tasks are interleaved round-robin over layers and replicas, paced so that every
  worker spreads its tasks evenly over the rounds of the longest one, staged (a round emits
  the inputs of all its crossbar tasks, i.e. their loads and the input slices sent to array
  groups on other cores, before their MVMs, so the in-order cores of a split replica meet
  once per round rather than wait at every array group for the other's MVMs) and
  software-pipelined (a round's partial-sum adds, bias and stores follow the next round's
  loads and MVMs, so an in-order global port never holds a load behind a store); windows are split
  over a layer's replicas in contiguous, equal ranges; a replica keeps the input pixels its next
  windows share (input reuse of overlapping windows) and loads only new ones, a round's new
  pixels of one input cache in runs of consecutive pixels, one load per run (the global
  memory serves one transfer at a time); vector layers are spread over all cores in
  contiguous blocks of pixels.
* **LL** (low latency, Alg. 2): one inference through the element pipeline. Output pixels go
  straight to the cores that need them; a task runs as soon as its pixels are there; a pixel's
  memory is freed once no task on that core needs it; vector layers run where most of their
  input already is. By default (``ll_order='timed'``) tasks and sends are emitted in the order
  of an estimated clock built from the target's latencies, a window's partial sums after the
  next window's MVMs, and each vector task when its pixels are there; a pixel waits at its
  producer while the receiver's local memory is half full, until one of the receiver's next
  tasks needs it. ``ll_order='passes'`` is Alg. 2 as published: passes over the workers,
  send requests batched (the centralized communication heuristic) and flushed when
  ``flush_at`` are queued or at the end of a pass.

The array groups of a replica whose AGs sit on other cores than its first (home) core receive
their input slice from the home core and send their partial sums back. This is also the
baseline scheduler later schedule optimizers must beat.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

import networkx as nx
import numpy as np

from pimsolve.codegen.emit import Buffer, CoreEmitter
from pimsolve.codegen.layout import VIEW_OPS, Layout, build_layout
from pimsolve.codegen.tasks import LayerTasks, layer_tasks, slice_pieces
from pimsolve.errors import InputError
from pimsolve.ir import Graph, LayerKind, Workload
from pimsolve.ir.mapping import Mapping
from pimsolve.ir.program import ArrayGroupSlot, Op, Program, VecOp
from pimsolve.lowering.unfold import EMITTED_FORMATS, ag_rows
from pimsolve.parallel import beside
from pimsolve.target import CrossbarTarget

__all__ = ["generate", "CodegenOptions"]

Key = tuple[str, int]
"""A stored pixel: (tensor, pixel index)."""

LL_RECEIVE_SHARE = 0.5
"""LL: received pixels are sent ahead only while the receiver uses less of its local memory."""
LL_LOOKAHEAD = 2
"""LL: tasks of a worker whose input pixels are always sent, whatever the room."""
SPILL_SCAN = 256
"""LL spilling: held pixels, newest first, searched for one no task needs soon."""
DROP_CHUNK = 8
"""HT dropping frees at least 1/DROP_CHUNK of the local memory at a time (where it can), so
a full core does not search its caches at every allocation."""


@dataclass(frozen=True)
class CodegenOptions:
    """Knobs of the reference code generator."""

    ll_order: Literal["timed", "passes"] = "timed"
    """LL mode: emit tasks and sends in the order of an estimated clock ('timed'), or in
    PIMCOMP's passes with batched sends ('passes', Alg. 2 as published)."""
    flush_at: int = 32
    """LL 'passes': send requests queued before they are emitted together."""
    ll_priority: Literal["arrival", "layer", "best"] = "best"
    """LL 'timed': which ready task a core takes next. 'arrival': in the order their inputs
    arrive (at one time, earlier layers first); 'layer': a task waits while its core's
    unit is busy, so that when it frees the earliest layer's ready task goes first; 'best':
    where program order is the schedule (in-order cores or paired send/recv) generate both
    and keep the one the clock estimates faster, elsewhere 'arrival'."""
    ll_spill: bool = True
    """LL mode: when a core's local memory is full, store a pixel it holds for a later task
    or send (preferably one no task needs soon, else the newest) to global memory and load
    it back when it is needed, instead of allocating past the local memory."""
    parallel_from: int = 2_000
    """LL 'best': generate the two priorities at once, the second in a forked process
    (``parallel.beside``), from this many windows times array groups on
    (``_windows_of_array_groups``). The program is the same either way. Measured
    (PUMA, balance's placements): vgg8-28 (15,822) 1.38 -> 0.74 s, resnet18-28 (28,120)
    3.84 -> 1.80 s, resnet34 (223,836) 56.0 -> 28.4 s; the fork costs about 15 ms (the tests'
    tiny CNN, 109: 18 -> 31 ms)."""
    ht_drop: bool = True
    """HT mode: when a core's local memory is full, drop cached input pixels that no task
    of the round reads and load them again when a later task does, instead of allocating
    past the local memory (every tensor is in global memory in HT)."""


@dataclass(eq=False)
class _Worker:
    """A replica of a crossbar layer, or one core's share of a vector layer."""

    tasks_of: LayerTasks
    core: int
    tasks: list[int]
    slots: list[int] = field(default_factory=list)
    next: int = 0
    cache: dict[Key, Buffer] = field(default_factory=dict)
    uses: dict[Key, int] = field(default_factory=dict)
    sources: list[list[Key]] = field(default_factory=list)
    tag: int = -1


@dataclass(eq=False)
class _Staged:
    """One window's inputs on its array groups' cores: (slot, buffer, address) per AG, and
    the staging buffers (core, buffer) to free once the window is finished."""

    task: int
    inputs: list[tuple[int, Buffer, int]] = field(default_factory=list)
    temp: list[tuple[int, Buffer]] = field(default_factory=list)
    out: Buffer | None = None
    """A vector task's output (emitted whole when staged)."""


def _consecutive(values: list[int]) -> list[list[int]]:
    """Sorted ``values`` cut into runs of consecutive integers."""
    runs: list[list[int]] = []
    for v in values:
        if runs and runs[-1][-1] == v - 1:
            runs[-1].append(v)
        else:
            runs.append([v])
    return runs


def _fused(w: _Worker) -> int:
    """Vector operations a task's fused activation adds on its home core (0 or 1)."""
    return int(w.tasks_of.activation is not None)


def _order_is_schedule(target: CrossbarTarget) -> bool:
    """Whether a core's program order is its schedule: in-order cores, or paired (sync)
    send/recv that block both cores until they meet."""
    return (target.core.execution == "in_order"
            or target.chip.interconnect.communication == "sync")


class _Clock:
    """Estimated times of the LL list scheduler (ns): when each worker's array groups, each
    core's MVM issue, vector unit and network ports (out, and in on a mesh) are next free,
    (sync communication) until when a transfer blocks its two cores, and (in-order cores)
    when the core's last emitted instruction starts, before which no later one can. Orders
    emission only; the simulator is the judge of the real times."""

    def __init__(self, target: CrossbarTarget, slots: list[ArrayGroupSlot]) -> None:
        self.target, self.slots = target, slots
        n = target.cores
        self.issue, self.vfu, self.tx, self.rx = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n
        self.fence = [0.0] * n
        self.inbound = [0.0] * n
        """When each core's inbound link is next free (a mesh: one transfer in at a time)."""
        self.bus = target.chip.interconnect.topology == "bus"
        self.busy: dict[int, float] = {}
        self.byte = target.numerics.activation_bits / 8
        self.link = target.chip.interconnect.bandwidth_gb_per_s
        self.sync = target.chip.interconnect.communication == "sync"
        self.in_order = target.core.execution == "in_order"
        self.ordered = _order_is_schedule(target)
        self.last = [0.0] * n

    def _after_last(self, core: int, t: float) -> float:
        return max(t, self.last[core]) if self.in_order else t

    def core_free(self, w: _Worker) -> float:
        """When the unit ``w``'s next task needs on its core (MVM issue or vector unit) can
        next start."""
        c = w.core
        t = self.issue[c] if w.tasks_of.kind == "mvm" else self.vfu[c]
        return self._after_last(c, max(t, self.fence[c]))

    def end(self) -> float:
        """The latest time booked on any core."""
        return max(*self.issue, *self.vfu, *self.rx, *self.fence)

    def free(self, w: _Worker, now: float) -> float:
        """The earliest the worker can start its next task."""
        return max(now, self.busy.get(id(w), 0.0))

    def run(self, w: _Worker, inputs: int, ready: float) -> float:
        """Book one task of ``w`` ready at ``ready``; the time its output is on its core."""
        xbar, vec = self.target.crossbar, self.target.core.vector_unit
        c = w.core
        ready = self._after_last(c, max(ready, self.fence[c]))
        add = vec.op_latency_ns * math.ceil(w.tasks_of.channels / vec.lanes)
        if w.tasks_of.kind != "mvm":
            start = max(ready, self.vfu[c])
            self.vfu[c] = start + max(1, inputs) * add
            self.busy[id(w)] = self.vfu[c]
            self.last[c] = self.vfu[c] - add
            return self.vfu[c]
        if self.ordered:
            return self._run_split(w, ready)
        blocks = [math.ceil(self.slots[s].rows / xbar.parallel_rows) for s in w.slots]
        start = max(ready, self.issue[c])
        self.issue[c] = start + sum(blocks) * self.target.core.mvm_issue_interval_ns
        self.last[c] = self.issue[c] - self.target.core.mvm_issue_interval_ns
        compute = max(blocks) * xbar.mvm_latency_ns
        self.busy[id(w)] = start + compute
        remote = [self.slots[s] for s in w.slots if self.slots[s].core != c]
        hops = sum(ag.rows + ag.cols for ag in remote) * self.byte / self.link
        return self.issue[c] + compute + hops + (1 + len(remote) + _fused(w)) * add

    def _run_split(self, w: _Worker, ready: float) -> float:
        """An MVM task on in-order cores or with paired send/recv, where program order is
        the schedule: its input slices go to the remote AGs first (``_mvm_inputs``), each a
        transfer, then every AG's MVMs issue on its own core; the time they are done
        (``gather`` books the partial sums back)."""
        xbar, c = self.target.crossbar, w.core
        at = {c: ready}
        for s in w.slots:
            ag = self.slots[s]
            if ag.core != c:
                at[ag.core] = max(at.get(ag.core, 0.0), self.send(c, ag.core, ag.rows, ready))
        interval = self.target.core.mvm_issue_interval_ns
        done = ready
        for s in w.slots:
            ag = self.slots[s]
            k, blocks = ag.core, math.ceil(ag.rows / xbar.parallel_rows)
            start = self._after_last(k, max(at[k], self.issue[k], self.fence[k]))
            self.issue[k] = start + blocks * interval
            if self.in_order:
                self.last[k] = self.issue[k] - interval
            done = max(done, start + blocks * xbar.mvm_latency_ns)
        self.busy[id(w)] = done
        return done

    def gather(self, w: _Worker, now: float) -> float:
        """Book the end of an MVM task whose MVMs are done at ``now`` (``_run_split``):
        partial sums from its remote AGs to the home core, and the adds there; the time its
        output is ready. (Otherwise ``run`` counted them already.)"""
        if w.tasks_of.kind != "mvm" or not self.ordered:
            return now
        vec, c = self.target.core.vector_unit, w.core
        add = vec.op_latency_ns * math.ceil(w.tasks_of.channels / vec.lanes)
        ready, adds = now, 1 + _fused(w)
        for s in w.slots:
            ag = self.slots[s]
            if ag.core != c:
                ready = max(ready, self.send(ag.core, c, ag.cols, now))
                adds += 1
        start = self._after_last(c, max(ready, self.vfu[c], self.fence[c]))
        self.vfu[c] = start + adds * add
        if self.in_order:
            self.last[c] = self.vfu[c] - add
        return self.vfu[c]

    def send(self, src: int, dst: int, elements: int, ready: float) -> float:
        """Book one transfer; the time it has arrived (the receiver takes them in order)."""
        start = self._after_last(src, max(ready, self.tx[src], self.inbound[dst]))
        if self.sync:  # the receiver must reach its recv too
            start = self._after_last(dst, max(start, self.fence[src], self.fence[dst]))
        self.tx[src] = start + elements * self.byte / self.link
        if not self.bus:
            self.inbound[dst] = self.tx[src]
        self.rx[dst] = max(self.tx[src], self.rx[dst])
        if self.sync:
            self.fence[src] = self.fence[dst] = self.rx[dst]
        if self.in_order:
            self.last[src] = start
            self.last[dst] = max(self.last[dst], start if self.sync else self.rx[dst])
        return self.rx[dst]


class _Generator:
    def __init__(self, graph: Graph, workload: Workload, mapping: Mapping,
                 target: CrossbarTarget, options: CodegenOptions) -> None:
        if len(mapping.partitions) > 1:
            raise InputError("codegen emits single-partition mappings only so far "
                             f"({len(mapping.partitions)} partitions given)")
        self.graph, self.target, self.mode, self.options = graph, target, mapping.mode, options
        self.compute = [layer for layer in graph.layers
                        if not (layer.kind is LayerKind.DATA and layer.op in VIEW_OPS)]
        self.layout: Layout = build_layout(graph, self.compute, mapping.mode == "ht")
        self.tasks = [layer_tasks(layer, self.layout) for layer in self.compute]
        self.cores = target.cores
        self.em = [CoreEmitter(c) for c in range(self.cores)]
        self.constants: dict[float, int] = {0.0: 0}
        self.slots: list[ArrayGroupSlot] = []
        self.replicas: dict[str, list[list[int]]] = {}
        self._place(workload, mapping)
        self.bias: dict[tuple[str, int], Buffer] = {}
        self.global_top = self.layout.global_elements
        """End of the global memory used: the layout's tensors, then LL spills."""
        self.estimated_ns: float | None = None
        """LL 'timed': when the clock has the program end (``_Clock.end``)."""

    # ---- array groups --------------------------------------------------------------------
    def _place(self, workload: Workload, mapping: Mapping) -> None:
        rows = self.target.crossbar.rows
        placed = {p.layer: p for p in mapping.layers}
        for lt in self.tasks:
            if lt.kind != "mvm":
                continue
            name = lt.layer.name
            if name not in placed:
                raise InputError(f"mapping places no array group of crossbar layer {name}")
            p = placed[name]
            mvm = workload.mvm_layer(name)
            by_name = {u.name: u for u in mvm.unfoldings}
            if p.unfolding not in by_name:
                raise InputError(f"layer {name}: unfolding {p.unfolding} is not one of its "
                                 f"valid unfoldings ({', '.join(by_name)})")
            if p.unfolding not in EMITTED_FORMATS:
                raise InputError(f"layer {name}: codegen emits the unfoldings "
                                 f"{', '.join(EMITTED_FORMATS)}, not {p.unfolding}")
            u = by_name[p.unfolding]
            rows_of = ag_rows(u, lt.layer.mvm.groups, rows)
            replicas = []
            for r, cores in enumerate(p.cores):
                if len(cores) != u.array_groups:
                    raise InputError(f"layer {name} replica {r}: {len(cores)} array groups "
                                     f"placed, the unfolding has {u.array_groups}")
                ids = []
                for g, core in enumerate(cores):
                    if not 0 <= core < self.cores:
                        raise InputError(f"layer {name}: core {core} does not exist "
                                         f"(target has {self.cores})")
                    matrix, start, n = rows_of[g]
                    ids.append(len(self.slots))
                    self.slots.append(ArrayGroupSlot(
                        name, r, g, core, matrix, start, n, u.width, u.crossbars_per_ag))
                replicas.append(ids)
            self.replicas[name] = replicas

    def _working_for(self, w: _Worker) -> None:
        """Tag what every core emits from now on with ``w``'s layer."""
        for em in self.em:
            em.layer = w.tag

    def _constant(self, value: float) -> int:
        return self.constants.setdefault(float(value), len(self.constants))

    # ---- one task ------------------------------------------------------------------------
    def _transfer(self, src: int, dst: int, buf: Buffer, length: int, offset: int = 0,
                  into: Buffer | None = None, rested: bool = False) -> Buffer:
        """Send ``length`` elements of ``buf`` from core ``src`` to a new buffer on ``dst``
        (``rested``: see ``CoreEmitter.alloc``)."""
        target = into if into is not None else self.em[dst].alloc(length, rested)
        self.em[src].emit(Op.SEND, dst, 0, buf.addr + offset, 0, length, reads=(buf,))
        self.em[dst].emit(Op.RECV, src, target.addr, 0, 0, length, writes=(target,))
        return target

    def _load_pixel(self, core: int, key: Key) -> Buffer:
        """A new buffer on ``core`` holding stored pixel ``key``, loaded from global memory."""
        tensor, pixel = key
        em = self.em[core]
        buf = em.alloc(self.layout.tensors[tensor].channels)
        em.emit(Op.LOAD, 0, buf.addr, self.layout.pixel_address(tensor, pixel), 0, buf.size,
                writes=(buf,))
        return buf

    def _bias(self, name: str, core: int, length: int) -> Buffer:
        key = (name, core)
        if key not in self.bias:
            buf = self.em[core].alloc(length)
            self.em[core].emit(Op.LOAD, 0, buf.addr, self.layout.global_address[f"bias:{name}"],
                               0, length, writes=(buf,))
            self.bias[key] = buf
        return self.bias[key]

    def _mvm_issue(self, w: _Worker, task: int, get) -> tuple[Buffer, Callable[[], None]]:
        """Emit the inputs and MVMs of one window; return its output buffer and a callable
        that emits the rest (partial sums home, adds, bias), which HT defers by a round."""
        return self._mvm_compute(w, self._mvm_inputs(w, task, get))

    def _mvm_inputs(self, w: _Worker, task: int, get) -> _Staged:
        """Emit one window's input slices: gathered on the home core and sent to each
        array group on another core. Every send precedes the window's MVMs, so a remote
        array group never waits for the home core's own MVMs (in order) to reach it."""
        lt, home = w.tasks_of, w.core
        em = self.em[home]
        pieces = lt.pieces(self.layout, task)
        staged = _Staged(task)
        for s in w.slots:
            ag = self.slots[s]
            part = slice_pieces(pieces[ag.matrix], ag.row_start, ag.row_start + ag.rows)
            if len(part) == 1 and part[0][0] >= 0:
                src = get((lt.inputs[0], part[0][0]))
                src_addr = src.addr + part[0][1]
            else:
                src = em.alloc(ag.rows, rested=True)
                row = 0
                for pixel, ch, length in part:
                    if pixel < 0:
                        em.emit(Op.WRITE, 0, src.addr + row, 0, 0, length, writes=(src,))
                    else:
                        pix = get((lt.inputs[0], pixel))
                        em.emit(Op.COPY, 0, src.addr + row, pix.addr + ch, 0, length,
                                reads=(pix,), writes=(src,))
                    row += length
                src_addr = src.addr
                staged.temp.append((home, src))
            if ag.core != home:
                moved = self._transfer(home, ag.core, src, ag.rows, src_addr - src.addr,
                                       rested=True)
                if staged.temp and staged.temp[-1][1] is src:
                    # only the send reads this staging: its slot may serve the next AG
                    # (whose writes wait for the send)
                    em.free(staged.temp.pop()[1])
                staged.temp.append((ag.core, moved))
                src, src_addr = moved, moved.addr
            staged.inputs.append((s, src, src_addr))
        return staged

    def _mvm_compute(self, w: _Worker, staged: _Staged) -> tuple[Buffer, Callable[[], None]]:
        """Emit the MVMs of a window whose inputs are staged (``_mvm_inputs``)."""
        lt, home = w.tasks_of, w.core
        em = self.em[home]
        out = em.alloc(lt.channels, rested=True)
        parallel = self.target.crossbar.parallel_rows
        temp = staged.temp
        results: list[tuple[ArrayGroupSlot, Buffer, list[Buffer], bool]] = []
        started: set[int] = set()
        for s, src, src_addr in staged.inputs:
            ag = self.slots[s]
            core = ag.core
            first = core == home and ag.matrix not in started
            started.add(ag.matrix)
            result = out if first else self.em[core].alloc(ag.cols, rested=True)
            dst = out.addr + ag.matrix * ag.cols if first else result.addr
            cem = self.em[core]
            steps = []
            for lo in range(0, ag.rows, parallel):
                n = min(parallel, ag.rows - lo)
                if lo == 0:
                    cem.emit(Op.MVM, s, dst, src_addr, lo, n, reads=(src,), writes=(result,))
                else:
                    step = cem.alloc(ag.cols, rested=True)
                    cem.emit(Op.MVM, s, step.addr, src_addr + lo, lo, n, reads=(src,),
                             writes=(step,))
                    steps.append(step)
            results.append((ag, result, steps, first))

        def finish() -> None:
            done: set[int] = set()
            for ag, result, steps, first in results:
                core, cem = ag.core, self.em[ag.core]
                dst = out.addr + ag.matrix * ag.cols if first else result.addr
                for step in steps:
                    cem.emit(Op.VEC, VecOp.ADD, dst, dst, step.addr, ag.cols,
                             reads=(result, step), writes=(result,))
                    cem.free(step)
                if core != home:
                    back = self._transfer(core, home, result, ag.cols, rested=True)
                    cem.free(result)
                    result = back
                if not first:
                    at = out.addr + ag.matrix * ag.cols
                    if ag.matrix in done:
                        em.emit(Op.VEC, VecOp.ADD, at, at, result.addr, ag.cols,
                                reads=(out, result), writes=(out,))
                    else:
                        em.emit(Op.COPY, 0, at, result.addr, 0, ag.cols, reads=(result,),
                                writes=(out,))
                    em.free(result)
                done.add(ag.matrix)
            for c, buf in temp:
                self.em[c].free(buf)
            bias = self._bias(lt.layer.name, home, lt.channels)
            em.emit(Op.VEC, VecOp.ADD, out.addr, out.addr, bias.addr, lt.channels,
                    reads=(out, bias), writes=(out,))
            if lt.activation is not None:
                em.emit(Op.VEC, lt.activation, out.addr, out.addr, 0, lt.channels,
                        reads=(out,), writes=(out,))

        return out, finish

    def _vector_task(self, w: _Worker, task: int, get, release) -> Buffer:
        """Emit one vector task; ``release(key)`` follows a pool's last read of each input
        pixel, so a global pool streams its pixels instead of holding them all."""
        lt, em = w.tasks_of, self.em[w.core]
        c = lt.channels
        out = em.alloc(c)
        if lt.kind == "concat":
            at = 0
            for t in lt.inputs:
                src = get((t, task))
                n = self.layout.tensors[t].channels
                em.emit(Op.COPY, 0, out.addr + at, src.addr, 0, n, reads=(src,), writes=(out,))
                at += n
            return out
        if lt.kind == "unary":
            src = get((lt.inputs[0], task))
            for _ in range(lt.repeat):
                em.emit(Op.VEC, lt.vec, out.addr, src.addr, 0, c, reads=(src,), writes=(out,))
                src = out
            return out
        if lt.kind == "binary":
            a, b = get((lt.inputs[0], task)), get((lt.inputs[1], task))
            em.emit(Op.VEC, lt.vec, out.addr, a.addr, b.addr, c, reads=(a, b), writes=(out,))
            return out
        pixels = lt.pool_pixels(self.layout, task)
        t = lt.inputs[0]
        first = get((t, pixels[0]))
        em.emit(Op.COPY, 0, out.addr, first.addr, 0, c, reads=(first,), writes=(out,))
        release((t, pixels[0]))
        for p in pixels[1:]:
            src = get((t, p))
            em.emit(Op.VEC, lt.vec, out.addr, out.addr, src.addr, c, reads=(out, src),
                    writes=(out,))
            release((t, p))
        if lt.vec is VecOp.ADD:
            count = len(pixels)
            if lt.kind == "pool" and lt.layer.attributes.get("count_include_pad"):
                count = lt.pool_divisor()
            em.emit(Op.VEC, VecOp.SCALE, out.addr, out.addr, self._constant(1.0 / count), c,
                    reads=(out,), writes=(out,))
        return out

    def _run(self, w: _Worker, task: int, get,
             release=lambda key: None) -> tuple[Buffer, Callable[[], None]]:
        """Emit one task; its output and what is left to emit (partial sums and bias of an
        MVM task, which HT defers by a round; nothing for a vector task)."""
        self._working_for(w)
        if w.tasks_of.kind == "mvm":
            return self._mvm_issue(w, task, get)
        return self._vector_task(w, task, get, release), lambda: None

    # ---- workers -------------------------------------------------------------------------
    def _split(self, lt: LayerTasks, owner_of) -> list[_Worker]:
        tag = self.tasks.index(lt)
        if lt.kind == "mvm":
            replicas = self.replicas[lt.layer.name]
            r = len(replicas)
            if self.mode == "ht":
                return self._share_homes(lt, replicas, tag)
            return [_Worker(lt, self.slots[ids[0]].core,
                            list(range(k * lt.tasks // r, (k + 1) * lt.tasks // r)), ids,
                            tag=tag)
                    for k, ids in enumerate(replicas)]
        per_core: dict[int, list[int]] = {}
        for task in range(lt.tasks):
            per_core.setdefault(owner_of(lt, task), []).append(task)
        return [_Worker(lt, core, tasks, tag=tag) for core, tasks in sorted(per_core.items())]

    def _share_homes(self, lt: LayerTasks, replicas: list[list[int]],
                     tag: int) -> list[_Worker]:
        """HT workers of a crossbar layer (PIMCOMP Fig. 8c): the replicas homed on one core
        take adjacent window ranges, interleave their windows (replica j of h takes every h-th
        window of the group's range, so one round covers h neighbouring windows) and share
        one input cache, so the pixels their windows have in common are loaded once."""
        r = len(replicas)
        groups: dict[int, list[list[int]]] = {}
        for ids in replicas:
            groups.setdefault(self.slots[ids[0]].core, []).append(ids)
        workers, k = [], 0
        for home, members in groups.items():
            span = range(k * lt.tasks // r, (k + len(members)) * lt.tasks // r)
            k += len(members)
            cache: dict[Key, Buffer] = {}
            uses: dict[Key, int] = {}
            h = len(members)
            workers += [_Worker(lt, home, list(span[j::h]), ids, cache=cache, uses=uses,
                                tag=tag) for j, ids in enumerate(members)]
        return workers

    def _spread(self, lt: LayerTasks, task: int) -> int:
        return task * self.cores // lt.tasks

    def _depth(self) -> int:
        dag = nx.DiGraph()
        producer = {lt.output: i for i, lt in enumerate(self.tasks)}
        dag.add_nodes_from(range(len(self.tasks)))
        for i, lt in enumerate(self.tasks):
            dag.add_edges_from((producer[t], i) for t in lt.inputs if t in producer)
        return nx.dag_longest_path_length(dag) + 1 if self.tasks else 1

    # ---- HT: Alg. 1 ----------------------------------------------------------------------
    def high_throughput(self) -> None:
        limit = self.target.core.local_memory.elements(self.target.numerics.activation_bits)
        for em in self.em:  # past it, freed slots are merged, then cached pixels dropped
            em.limit = limit
            em.on_full = self._ht_drop if self.options.ht_drop else None
        workers = [w for lt in self.tasks for w in self._split(lt, self._spread)]
        self.round_pins: dict[int, dict[int, set[Key]]] = {}
        """Per core, per input cache, the pixels the round's tasks read (``_ht_drop``, built
        at the core's first drop of the round)."""
        self.core_tasks: dict[int, list[tuple[_Worker, int, int]]] = {}
        """Per core, the round's tasks per worker (w, first, end), built at the core's first
        drop of the round (``_ht_drop``): their pixels stay cached."""
        for w in workers:
            w.sources = [w.tasks_of.sources(self.layout, t) for t in w.tasks]
            for keys in w.sources:
                for key in keys:
                    w.uses[key] = w.uses.get(key, 0) + 1
        rounds = max((len(w.tasks) for w in workers), default=0)
        self.on_core: dict[int, list[int]] = {}
        for i, w in enumerate(workers):
            self.on_core.setdefault(w.core, []).append(i)
        self.workers = workers
        self.round_due: dict[int, tuple[int, int]] = {}
        """The round's workers with tasks (by index in ``workers``): the tasks' range."""
        cached: set[int] = set()
        """Vector workers whose cache may hold pixels (only their own tasks fill it)."""
        pending: list[tuple[_Worker, int, Buffer]] = []
        for t, due in enumerate(self._ht_rounds(workers, rounds)):
            for em in self.em:
                em.round = t
            # paced (``_due``); software pipelining: a round's stores follow the next round's
            # loads, so a core's in-order global port never holds a load behind a store still
            # waiting for its MVM; a vector task stores at once: its store waits for one
            # short vector operation, and its output buffer is free for the next task
            self.round_due = {i: (workers[i].next, workers[i].next + count) for i, count in due}
            self.core_tasks = {}
            self.round_pins = {}
            self._prefetch([(workers[i], count) for i, count in due])
            counts = dict(due)
            # workers without a task this round are visited too where a vector cache may
            # need evicting, in the same order as the others
            idle = [i for i in cached if i not in counts
                    and workers[i].next < len(workers[i].tasks)]
            staged = []
            for i in sorted([*counts, *idle]):
                w = workers[i]
                for _ in range(counts.get(i, 0)):
                    item = self._ht_stage(w)
                    if w.tasks_of.kind == "mvm":
                        staged.append(item)
                    else:
                        self._ht_store(*self._ht_compute(item))
                if w.tasks_of.kind == "mvm":
                    continue
                if w.cache and -(-(t + 2) * len(w.tasks) // rounds) == w.next:
                    self._evict(w)
                if w.cache:
                    cached.add(i)
                else:
                    cached.discard(i)
            done = [self._ht_compute(item) for item in staged]
            for w, task, out, finish in pending:
                self._ht_store(w, task, out, finish)
            pending = done
        for w, task, out, finish in pending:
            self._ht_store(w, task, out, finish)

    def _ht_rounds(self, workers: list[_Worker], rounds: int) -> list[list[tuple[int, int]]]:
        """Per round, the workers with tasks in it (index in ``workers``, in order) and how
        many: where ``_due`` grows, for every round at once."""
        per_round: list[list[tuple[int, int]]] = [[] for _ in range(rounds)]
        every = np.arange(rounds)
        for i, w in enumerate(workers):
            if not w.tasks:
                continue
            count = np.diff(self._due(w, every, rounds), prepend=0)
            for t in np.flatnonzero(count).tolist():
                per_round[t].append((i, int(count[t])))
        return per_round

    def _due(self, w: _Worker, t, rounds: int):
        """HT: how many of ``w``'s tasks are emitted by the end of round ``t`` (an int or an
        array of rounds): paced, except a pool's, which go all in one round (its core's
        share of the rounds, so the pools of different cores take turns): there neighbouring
        windows share their input pixels, loaded once (googlenet/isaac, balance: 1292 ->
        1160 us; inception3b's 3 x 3 stride-1 pool loads 4.0 times its input instead of
        8.6)."""
        if w.tasks_of.kind == "pool":
            return len(w.tasks) * (t >= w.core * rounds // self.cores)
        return -(-(t + 1) * len(w.tasks) // rounds)

    def _prefetch(self, due: list[tuple[_Worker, int]]) -> None:
        """Load the new input pixels the next ``count`` tasks of each crossbar worker read
        (all staged before the round's MVMs anyway), per input cache, in runs: pixels of one
        tensor at consecutive addresses go in one load. Global memory serves one transfer
        at a time, so each short load waits in its queue; replicas homed together cover
        neighbouring windows, whose new pixels are neighbours (a 3x3 window's new column)."""
        wanted: dict[int, tuple[_Worker, dict[str, set[int]]]] = {}
        for w, count in due:
            if w.tasks_of.kind != "mvm":  # a pool streams its pixels, each freed once read
                continue
            mine = wanted.setdefault(id(w.cache), (w, {}))[1]
            for keys in w.sources[w.next:w.next + count]:
                for tensor, pixel in keys:
                    if (tensor, pixel) not in w.cache:
                        mine.setdefault(tensor, set()).add(pixel)
        for w, per_tensor in wanted.values():
            em = self.em[w.core]
            self._working_for(w)
            for tensor, pixels in per_tensor.items():
                channels = self.layout.tensors[tensor].channels
                for run in _consecutive(sorted(pixels)):
                    if len(run) < 2:
                        continue
                    bufs = em.alloc_run(channels, len(run))
                    if bufs is None:  # no room for the run: pixel by pixel as tasks read
                        continue
                    em.emit(Op.LOAD, 0, bufs[0].addr, self.layout.pixel_address(tensor, run[0]),
                            0, channels * len(run), writes=tuple(bufs))
                    w.cache.update(zip(((tensor, p) for p in run), bufs, strict=True))

    def _ht_drop(self, em: CoreEmitter, size: int) -> bool:
        """HT ``on_full``: free a slot of at least ``size`` elements on ``em``'s core by
        dropping the fewest cached input pixels that no task of the round reads (the pixels
        of prefetched runs go together, as their memory returns as one). Every tensor is in
        global memory in HT, so a later task loads a dropped pixel again: the program stays
        within the local memory where the placement's per-core memory (an estimate of the
        allocator's, see ``evaluate.memory_per_core``) is short of it."""
        mine = self.core_tasks.get(em.core)
        if mine is None:  # the round's tasks on the core, at its first drop
            mine = self.core_tasks[em.core] = []
            for i in self.on_core.get(em.core, []):
                w = self.workers[i]
                first, end = self.round_due.get(i, (w.next, w.next))
                if first < len(w.tasks):  # it had tasks left at the round's start
                    mine.append((w, first, end))
        caches = {id(w.cache): w.cache for w, _, _ in mine}
        pinned = self.round_pins.get(em.core)
        if pinned is None:
            pinned = self.round_pins[em.core] = {cid: set() for cid in caches}
            for w, first, end in mine:
                for sources in w.sources[first:end]:
                    pinned[id(w.cache)].update(sources)
        holders: dict[int, tuple[Buffer, list[tuple[dict[Key, Buffer], Key]]]] = {}
        blocked: set[int] = set()
        for cid, cache in caches.items():
            pins = pinned[cid]
            for key, buf in cache.items():
                whole = em.holder(buf)
                if id(whole) in blocked:
                    continue
                if key in pins:
                    blocked.add(id(whole))
                    continue
                holders.setdefault(id(whole), (whole, []))[1].append((cache, key))
        movable = [whole for wid, (whole, keys) in holders.items()
                   if wid not in blocked and len(keys) == em.parts_held(whole)]
        # a chunk at once, so that a full core does not come back at every allocation
        room = em.cheapest_room(max(size, int(em.limit) // DROP_CHUNK), movable) or (
            em.cheapest_room(size, movable))
        for whole in room:
            for cache, key in holders[id(whole)][1]:
                em.free(cache.pop(key))
        return bool(room)

    def _evict(self, w: _Worker) -> None:
        """Free a vector worker's cached pixels when its next task is rounds away: a pool
        reloads the pixels its tasks share rather than hold them meanwhile."""
        em = self.em[w.core]
        for buf in w.cache.values():
            em.free(buf)
        w.cache.clear()

    def _ht_stage(self, w: _Worker) -> tuple[_Worker, _Staged, Callable[[], None]]:
        """Emit the inputs of the next task of a crossbar worker (a vector task whole); what
        ``_ht_compute`` needs to emit the rest."""
        task, keys = w.tasks[w.next], w.sources[w.next]
        w.next += 1

        em = self.em[w.core]
        released: set[Key] = set()

        def get(key: Key) -> Buffer:
            buf = w.cache.get(key)
            if buf is None:
                buf = w.cache[key] = self._load_pixel(w.core, key)
            return buf

        def release(key: Key) -> None:
            released.add(key)
            w.uses[key] -= 1
            if w.uses[key] == 0:
                em.free(w.cache.pop(key))

        def release_rest() -> None:
            for key in keys:
                if key not in released:
                    release(key)

        self._working_for(w)
        if w.tasks_of.kind == "mvm":
            return w, self._mvm_inputs(w, task, get), release_rest
        out = self._vector_task(w, task, get, release)
        return w, _Staged(task, out=out), release_rest

    def _ht_compute(self, item: tuple[_Worker, _Staged, Callable[[], None]],
                    ) -> tuple[_Worker, int, Buffer, Callable[[], None]]:
        """Emit the MVMs of a staged task (nothing for a vector task) and free its inputs."""
        w, staged, release_rest = item
        self._working_for(w)
        if w.tasks_of.kind == "mvm":
            out, finish = self._mvm_compute(w, staged)
        else:
            out, finish = staged.out, lambda: None
        release_rest()
        return w, staged.task, out, finish

    def _ht_store(self, w: _Worker, task: int, out: Buffer,
                  finish: Callable[[], None]) -> None:
        self._working_for(w)
        finish()
        em = self.em[w.core]
        em.emit(Op.STORE, 0, self.layout.pixel_address(w.tasks_of.output, task), out.addr, 0,
                out.size, reads=(out,))
        em.free(out)

    # ---- LL: Alg. 2 ----------------------------------------------------------------------
    def _taken_in(self) -> list[int]:
        """LL, per core: the elements its crossbar work takes in over the inference (partial
        sums at a replica's home from its AGs elsewhere, input slices at those AGs' cores)."""
        taken = [0] * self.cores
        for lt in self.tasks:
            if lt.kind != "mvm":
                continue
            replicas = self.replicas[lt.layer.name]
            for k, ids in enumerate(replicas):
                home = self.slots[ids[0]].core
                windows = ((k + 1) * lt.tasks // len(replicas)) - (k * lt.tasks // len(replicas))
                for s in ids:
                    ag = self.slots[s]
                    if ag.core != home:
                        taken[home] += windows * ag.cols
                        taken[ag.core] += windows * ag.rows
        return taken

    def low_latency(self) -> None:
        owner: dict[Key, int] = {}
        inputs = set(self.layout.inputs)
        taken = self._taken_in()
        per_chip = self.target.chip.cores

        def near(lt: LayerTasks, task: int) -> int:
            """Where a vector task runs: the core holding most of its input pixels; of a tie
            (a join's producers, a pool over two replicas' rows), on the lowest tied core's
            chip, the one that takes in least (``_taken_in`` and the vector tasks' inputs so
            far). The placement model counts what a join takes in on no core, so it should
            go where it delays least. The lowest core id, the rule before, put every residual
            Add of resnet18-28's layer3 (ISAAC, LL) on Conv_11's home, whose inbound link
            Conv_11's own floor already fills; the Adds' inputs added 166 us of receives."""
            if lt.kind == "gpool":
                keys = [(lt.inputs[0], lt.pool_pixels(self.layout, task)[0])]
            else:
                keys = lt.sources(self.layout, task)
            votes: dict[int, int] = {}
            for key in keys:
                if key in owner:
                    votes[owner[key]] = votes.get(owner[key], 0) + 1
            if not votes:
                return self._spread(lt, task)
            most = max(votes.values())
            tied = [c for c in sorted(votes) if votes[c] == most]
            core = min((c for c in tied if c // per_chip == tied[0] // per_chip),
                       key=taken.__getitem__)
            for key in keys:
                if owner.get(key, core) != core:
                    taken[core] += self.layout.tensors[key[0]].channels
            return core

        layers: list[list[_Worker]] = []
        self.refs: dict[tuple[int, Key], int] = {}
        consumers: dict[Key, set[int]] = {}
        for lt in self.tasks:
            workers = self._split(lt, near)
            if lt.kind != "mvm" and self.options.ll_order == "timed":
                # each vector task on its own: it runs when its pixels are there, not
                # behind the pixels another producer replica has not made yet
                workers = [_Worker(lt, w.core, [t], tag=w.tag) for w in workers for t in w.tasks]
            for w in workers:
                for t in w.tasks:
                    owner[(lt.output, t)] = w.core
                    keys = lt.sources(self.layout, t)
                    w.sources.append(keys)
                    for key in keys:
                        ref = (w.core, key)
                        self.refs[ref] = self.refs.get(ref, 0) + 1
                        consumers.setdefault(key, set()).add(w.core)
            layers.append(workers)
        outputs = set(self.layout.outputs)
        for key, cores in consumers.items():
            if key in owner:
                home = owner[key]
                remote = len(cores - {home})
                self.refs[(home, key)] = self.refs.get((home, key), 0) + remote
        self.present: dict[tuple[int, Key], Buffer] = {}
        self.kept: list[dict[Key, None]] = [{} for _ in range(self.cores)]
        """Per core, the keys in ``present`` in the order they came."""
        self.spilled: dict[tuple[int, Key], int] = {}
        """Pixels a core stored to global memory to make room, and their sizes."""
        self.spill_address: dict[Key, int] = {}
        self.wanted: set[tuple[int, Key]] = set()
        """(core, pixel): a task among the core's next ``LL_LOOKAHEAD`` reads the pixel."""
        self.delivered: set[tuple[int, Key]] = set()
        """(core, pixel): the pixel has been sent to the core."""
        self.pinned: set[tuple[int, Key]] = set()
        """Pixels the instructions being emitted read (fetched and not yet released by a
        pool's last read): never spilled."""
        if self.options.ll_spill:
            limit = self.target.core.local_memory.elements(self.target.numerics.activation_bits)
            for em in self.em:
                em.limit, em.on_full = limit, self._spill
        self.queue: list[tuple[Key, int, int]] = []
        self.consumers = consumers
        if self.options.ll_order == "timed":
            self._ll_timed([w for ws in layers for w in ws], inputs, outputs)
        else:
            self._ll_passes(layers, inputs, outputs)

    def _ll_passes(self, layers: list[list[_Worker]], inputs: set[str],
                   outputs: set[str]) -> None:
        """PIMCOMP Alg. 2 as published: in each pass every worker runs its next task if its
        pixels are there; sends are batched (``flush_at``, or at the end of a pass)."""
        remaining = sum(len(w.tasks) for ws in layers for w in ws)
        while remaining:
            progressed = False
            for workers in layers:
                for w in workers:
                    if w.next < len(w.tasks) and all(
                            k[0] in inputs or self._has(w.core, k)
                            for k in w.sources[w.next]):
                        self._ll_task(w, outputs)
                        remaining -= 1
                        progressed = True
                        if len(self.queue) >= self.options.flush_at:
                            self._flush()
            if self.queue:
                self._flush()
                progressed = True
            if remaining and not progressed:
                raise RuntimeError("low-latency codegen made no progress (a cycle?)")

    def _ll_timed(self, workers: list[_Worker], inputs: set[str], outputs: set[str]) -> None:
        """Alg. 2 in estimated time order: a list scheduler on the target's own latencies
        (MVM latency and issue interval, vector lanes, link bandwidth), so each core's program
        order, and the in-order network queues with it, follow the order the data arrives. An
        MVM task's partial sums and bias are emitted when its MVMs are done, after the next
        window's inputs (software pipelining). A pixel is sent as soon as it is produced while
        the receiver has room (``LL_RECEIVE_SHARE`` of its local memory); otherwise it waits
        at its producer until a task among the receiver's next ``LL_LOOKAHEAD`` needs it, so
        received pixels cannot fill local memory. Tasks and sends are emitted in one global
        order, so sync communication cannot deadlock."""
        clock = _Clock(self.target, self.slots)
        by_layer = self.options.ll_priority == "layer"
        # events at one time: sends and finished tasks first, then tasks of earlier layers
        room = int(self.target.core.local_memory.elements(self.target.numerics.activation_bits)
                   * LL_RECEIVE_SHARE)
        tag_of = {lt.output: i for i, lt in enumerate(self.tasks)}
        arrived: dict[tuple[int, Key], float] = {}
        waiting: dict[tuple[int, Key], list[_Worker]] = {}
        wanted = self.wanted
        held: dict[int, dict[Key, tuple[int, float]]] = {}
        events: list[tuple[float, int, int, str, object]] = []  # time, priority, seq
        order = itertools.count()

        def send(key: Key, src: int, dst: int, ready: float) -> None:
            heapq.heappush(events, (ready, -1, next(order), "send", (key, src, dst)))

        def want(w: _Worker, now: float) -> None:
            for sources in w.sources[w.next:w.next + LL_LOOKAHEAD]:
                for key in sources:
                    if (w.core, key) not in wanted:
                        wanted.add((w.core, key))
                        if key in held.get(w.core, {}):
                            src, ready = held[w.core].pop(key)
                            send(key, src, w.core, max(ready, now))

        def wake(w: _Worker, now: float) -> None:
            if w.next == len(w.tasks):
                return
            want(w, now)
            ready = clock.free(w, now)
            for key in w.sources[w.next]:
                if key[0] in inputs:
                    continue
                if not self._has(w.core, key):
                    waiting.setdefault((w.core, key), []).append(w)
                    return
                ready = max(ready, arrived.get((w.core, key), 0.0))
            heapq.heappush(events, (ready, w.tag, next(order), "issue", w))

        def landed(core: int, key: Key, now: float) -> None:
            arrived[(core, key)] = now
            for w in waiting.pop((core, key), []):
                wake(w, now)

        def fits(core: int, key: Key) -> bool:
            return self.em[core].live + self.layout.tensors[key[0]].channels <= room

        def offer(key: Key, src: int, dst: int, now: float) -> None:
            if (dst, key) in wanted or fits(dst, key):
                send(key, src, dst, now)
            else:
                held.setdefault(dst, {})[key] = (src, now)

        for w in workers:
            wake(w, 0.0)
        remaining = sum(len(w.tasks) for w in workers)
        while events:
            now, _, _, kind, item = heapq.heappop(events)
            if kind == "send":
                key, src, dst = item
                for e in (self.em[src], self.em[dst]):
                    e.layer = tag_of.get(key[0], -1)
                landed(dst, key, clock.send(src, dst, self._move(key, src, dst), now))
            elif kind == "issue":
                w = item
                if by_layer and (free := clock.core_free(w)) > now:
                    heapq.heappush(events, (free, w.tag, next(order), "issue", w))
                    continue
                done = clock.run(w, len(w.sources[w.next]), now)
                heapq.heappush(events, (done, -1, next(order), "finish", (w, self._ll_issue(w))))
                wake(w, now)
            else:
                w, issued = item
                self._ll_finish(w, *issued, outputs)
                now = clock.gather(w, now)
                remaining -= 1
                key = (w.tasks_of.output, issued[0])
                if self._has(w.core, key):
                    landed(w.core, key, now)
                for key, src, dst in self.queue:
                    offer(key, src, dst, now)
                self.queue = []
                for key, (src, ready) in list(held.get(w.core, {}).items()):
                    if not fits(w.core, key):
                        break
                    del held[w.core][key]
                    send(key, src, w.core, max(ready, now))
        if remaining:
            raise RuntimeError("low-latency codegen made no progress (a cycle?)")
        self.estimated_ns = clock.end()

    # ---- LL: pixels held on cores ---------------------------------------------------------
    def _has(self, core: int, key: Key) -> bool:
        return (core, key) in self.present or (core, key) in self.spilled

    def _keep(self, core: int, key: Key, buf: Buffer) -> None:
        self.present[(core, key)] = buf
        self.kept[core][key] = None

    def _drop(self, core: int, key: Key) -> Buffer:
        del self.kept[core][key]
        return self.present.pop((core, key))

    def _fetch(self, core: int, key: Key) -> Buffer:
        """Pixel ``key`` on ``core``, loaded from global memory if it is a graph input not
        loaded yet or was spilled."""
        buf = self.present.get((core, key))
        if buf is not None:
            return buf
        size = self.spilled.pop((core, key), None)
        if size is None:  # a graph input: straight from global memory
            buf = self._load_pixel(core, key)
        else:
            em = self.em[core]
            buf = em.alloc(size)
            em.emit(Op.LOAD, 0, buf.addr, self.spill_address[key], 0, size, writes=(buf,))
        self._keep(core, key, buf)
        return buf

    def _spill(self, em: CoreEmitter, size: int) -> bool:
        """``on_full``: free a slot of at least ``size`` elements on ``em``'s core by storing
        the pixel that came last among those not pinned, preferring one no task needs soon
        (among the last ``SPILL_SCAN``), else the fewest pixels whose slots adjoin freed
        ones. A graph input is just dropped: it is in global memory already. The core's own
        global port runs in program order, so the later load reads what this store wrote."""
        core = em.core
        later = None
        for seen, key in enumerate(reversed(self.kept[core])):
            if (core, key) in self.pinned or self.present[(core, key)].slot < size:
                continue
            if not self._soon(core, key):
                self._store(core, key)
                return True
            later = later or key
            if seen >= SPILL_SCAN:
                break
        if later is not None:
            self._store(core, later)
            return True
        movable = [k for k in reversed(self.kept[core]) if (core, k) not in self.pinned]
        by_buffer = {id(self.present[(core, k)]): k for k in movable}
        room = em.cheapest_room(size, [self.present[(core, k)] for k in movable])
        for buf in room:
            self._store(core, by_buffer[id(buf)])
        return bool(room)

    def _soon(self, core: int, key: Key) -> bool:
        """Whether a task among the next few of ``core``, or of a core ``key`` still goes
        to, reads pixel ``key``."""
        return (core, key) in self.wanted or any(
            (d, key) in self.wanted and (d, key) not in self.delivered
            for d in self.consumers.get(key, ()) if d != core)

    def _store(self, core: int, key: Key) -> None:
        """Spill pixel ``key`` of ``core`` to global memory and free its buffer."""
        em, buf = self.em[core], self._drop(core, key)
        if key[0] not in self.layout.inputs:
            if key not in self.spill_address:
                self.spill_address[key] = self.global_top
                self.global_top += buf.size
            em.emit(Op.STORE, 0, self.spill_address[key], buf.addr, 0, buf.size, reads=(buf,))
            self.spilled[(core, key)] = buf.size
        em.free(buf)

    def _release(self, core: int, key: Key) -> None:
        ref = (core, key)
        self.refs[ref] -= 1
        if self.refs[ref] == 0:
            if ref in self.present:
                self.em[core].free(self._drop(core, key))
            else:  # spilled, or a graph input dropped
                self.spilled.pop(ref, None)
            del self.refs[ref]

    def _flush(self) -> None:
        for key, src, dst in self.queue:
            self._move(key, src, dst)
        self.queue = []

    def _move(self, key: Key, src: int, dst: int) -> int:
        """Send pixel ``key`` from ``src`` to ``dst`` (where it is now present); its size."""
        self.pinned = {(src, key)}
        self.delivered.add((dst, key))
        buf = self._fetch(src, key)
        self._keep(dst, key, self._transfer(src, dst, buf, buf.size))
        self._release(src, key)
        self.pinned = set()
        return buf.size

    def _ll_task(self, w: _Worker, outputs: set[str]) -> None:
        self._ll_finish(w, *self._ll_issue(w), outputs)

    def _ll_issue(self, w: _Worker) -> tuple[int, list[Key], Buffer, Callable[[], None]]:
        """Emit the next task's inputs and MVMs; what ``_ll_finish`` needs to complete it."""
        task, keys = w.tasks[w.next], w.sources[w.next]
        w.next += 1

        def get(key: Key) -> Buffer:
            self.pinned.add((w.core, key))
            return self._fetch(w.core, key)

        out, finish = self._run(w, task, get, lambda key: self.pinned.discard((w.core, key)))
        self.pinned = set()
        return task, keys, out, finish

    def _ll_finish(self, w: _Worker, task: int, keys: list[Key], out: Buffer,
                   finish: Callable[[], None], outputs: set[str]) -> None:
        """Emit the rest of a task (partial sums, bias, store) and queue its sends."""
        em = self.em[w.core]
        self._working_for(w)
        finish()
        for key in keys:
            self._release(w.core, key)
        key = (w.tasks_of.output, task)
        ref = (w.core, key)
        self._keep(w.core, key, out)
        cores = self.consumers.get(key, set())
        stored = w.tasks_of.output in outputs
        self.refs[ref] = self.refs.get(ref, 0) + (1 if stored else 0)
        if stored:
            em.emit(Op.STORE, 0, self.layout.pixel_address(w.tasks_of.output, task), out.addr,
                    0, out.size, reads=(out,))
            self._release(w.core, key)
        for dst in sorted(cores - {w.core}):
            self.queue.append((key, w.core, dst))
        if ref in self.refs and self.refs[ref] == 0:
            em.free(self._drop(w.core, key))
            del self.refs[ref]

    # ---- assembly ------------------------------------------------------------------------
    def program(self) -> Program:
        if self.mode == "ht":
            self.high_throughput()
        elif self.mode == "ll":
            self.low_latency()
        else:
            raise InputError(f"mode must be 'ht' or 'll', not {self.mode!r}")
        constants = tuple(sorted(self.constants, key=self.constants.__getitem__))
        # graph inputs and outputs under their ONNX names (an output may be a view)
        tensors = {t.name: (self.layout.global_address[self.layout.base[t.name]],
                            self.layout.stored(t.name).elements)
                   for t in (*self.graph.inputs, *self.graph.outputs)}
        for lt in self.tasks:
            if lt.kind == "mvm":
                tensors[f"bias:{lt.layer.name}"] = (
                    self.layout.global_address[f"bias:{lt.layer.name}"], lt.channels)
        return Program(self.graph.name, self.target.name, self.mode,
                       self.target.numerics.activation_bits,
                       tuple(e.stream() for e in self.em), tuple(self.slots), constants,
                       self.global_top,
                       self._depth() if self.mode == "ht" else 1, tensors,
                       tuple(lt.layer.name for lt in self.tasks),
                       {lt.layer.name: lt.tasks for lt in self.tasks if lt.kind == "mvm"})


def generate(graph: Graph, workload: Workload, mapping: Mapping, target: CrossbarTarget,
             options: CodegenOptions | None = None) -> Program:
    """The reference program for ``mapping`` in its mode ('ht' or 'll')."""
    options = options or CodegenOptions()
    if options.ll_priority != "best":
        return _Generator(graph, workload, mapping, target, options).program()
    if mapping.mode != "ll" or options.ll_order != "timed" or not _order_is_schedule(target):
        return _Generator(graph, workload, mapping, target,
                          replace(options, ll_priority="arrival")).program()
    arrival, layer = (replace(options, ll_priority=p) for p in ("arrival", "layer"))
    big = _windows_of_array_groups(workload, mapping) >= options.parallel_from
    with beside(_estimated_program, graph, workload, mapping, target, layer,
                wanted=big) as second:
        made = [_estimated_program(graph, workload, mapping, target, arrival), second()]
    return min(made, key=lambda m: m[0])[1]  # the first of a tie: 'arrival'


def _estimated_program(graph: Graph, workload: Workload, mapping: Mapping,
                       target: CrossbarTarget, options: CodegenOptions) -> tuple[float, Program]:
    """The program for one ``ll_priority`` and the LL clock's estimate of its latency."""
    generator = _Generator(graph, workload, mapping, target, options)
    program = generator.program()
    return generator.estimated_ns, program


def _windows_of_array_groups(workload: Workload, mapping: Mapping) -> int:
    """Windows times array groups over the crossbar layers: about the MVMs of an LL program
    (each window runs on one replica, on all of its array groups)."""
    return sum(workload.mvm_layer(p.layer).windows * len(p.cores[0])
               for p in mapping.layers if p.cores)
