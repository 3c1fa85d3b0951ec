"""The judge's clock: a deterministic, exact simulation of a Program on a crossbar target.

The model (documented in ``formulations/simulator.md``), per core:

* Units: every array group, the vector unit, the local-memory port (copy, write), the
  global-memory port (load, store), network out (send) and in (recv). A unit runs its
  instructions one at a time in program order. Each core issues at most one ``mvm`` every
  ``mvm_issue_interval_ns``.
* An instruction starts when its dependencies have completed, its unit is free and (``load`` /
  ``store``) the chip's global memory is free; an **in-order** core also never starts an
  instruction before the previous one started (a stalled instruction blocks those behind it),
  an **out-of-order** core does not wait for unrelated earlier instructions: with async
  communication it runs one stream per unit (``unit_streams``), so not even for a recv
  whose data has not come.
* Durations: ``mvm`` ``mvm_latency_ns`` per block of ``parallel_rows`` rows; ``vec``
  ``op_latency_ns`` per ``lanes`` elements; copy/write bytes / local bandwidth; load/store bytes
  / global bandwidth (the chip's global memory serves one transfer at a time) plus its latency;
  send bytes / link bandwidth plus ``hop_latency_ns`` per mesh hop (one hop on a bus, whose
  bandwidth all cores of a chip share; between chips the off-chip link's bandwidth and latency).
  On a mesh a transfer also holds the receiver's inbound link (its router's ejection port,
  the link's bandwidth) while it streams: a core takes in one transfer at a time.
* **sync** communication: a send and its recv start together when both are ready, and both
  block their cores until the data has arrived. **async**: a send occupies only the sender's
  network port; the recv completes when the data arrives.
* A barrier completes when every core has reached it and finished all earlier instructions.

Time is in nanoseconds (floats); the same Program gives the same Timeline, bit for bit.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from pimsolve.errors import InputError
from pimsolve.ir.program import (
    FIXED_UNITS,
    UNIT_GMEM,
    UNIT_LMEM,
    UNIT_RX,
    UNIT_SYNC,
    UNIT_TX,
    UNIT_VFU,
    Op,
    Program,
    units,
)
from pimsolve.target import CrossbarTarget

__all__ = ["Timeline", "run", "hops", "Deadlock", "unit_streams"]


class Deadlock(InputError):
    """The program's communication cannot complete (a cycle of blocked cores)."""


@dataclass(frozen=True, eq=False)
class Timeline:
    """Start and end (ns) of every instruction, per core."""

    start: tuple[np.ndarray, ...]
    end: tuple[np.ndarray, ...]
    makespan_ns: float
    origin_ns: float
    """End of the last barrier 0 (weight programming before the inference), else 0."""


def hops(target: CrossbarTarget, a: int, b: int) -> int:
    """Network hops between cores ``a`` and ``b`` of one chip (1 on a bus)."""
    net = target.chip.interconnect
    if net.topology == "bus":
        return 1
    n = target.chip.cores
    cols = net.mesh_columns or math.ceil(math.sqrt(n))
    a, b = a % n, b % n
    return abs(a // cols - b // cols) + abs(a % cols - b % cols)


def unit_streams(code: np.ndarray) -> tuple[list[list[int]], list[int]]:
    """How an out-of-order core with async communication runs: its instructions split into
    one stream per unit, each in program order (every array group's MVMs and crossbar
    programming in one, as they share the core's MVM issue); and for each instruction the
    barrier before it (-1: none), which it cannot pass."""
    u = np.minimum(units(code), FIXED_UNITS)
    # in the order data mostly flows (receive, load, copy, MVM, vector, send), so that one
    # pass over the streams gets far
    streams = [np.flatnonzero(u == k).tolist()
               for k in (UNIT_RX, UNIT_GMEM, UNIT_LMEM, FIXED_UNITS, UNIT_VFU, UNIT_TX,
                         UNIT_SYNC) if (u == k).any()]
    barriers = np.flatnonzero(code[:, 0] == Op.BARRIER)
    at = np.searchsorted(barriers, np.arange(len(code))) - 1
    return streams, np.where(at >= 0, np.append(barriers, -1)[at], -1).tolist()


def _durations(code: np.ndarray, program: Program, target: CrossbarTarget) -> np.ndarray:
    """Unit occupancy (ns) of each instruction; sends get their serialization time."""
    ops, e = code[:, 0], code[:, 5].astype(np.float64)
    nbytes = e * program.element_bits / 8
    xb, core = target.crossbar, target.core
    dur = np.zeros(len(code))
    mvm = ops == 0
    dur[mvm] = xb.mvm_latency_ns * np.ceil(e[mvm] / xb.parallel_rows)
    vec = ops == Op.VEC
    dur[vec] = core.vector_unit.op_latency_ns * np.ceil(e[vec] / core.vector_unit.lanes)
    local = (ops == Op.COPY) | (ops == Op.WRITE)
    dur[local] = nbytes[local] / core.local_memory.bandwidth_gb_per_s
    glob = (ops == Op.LOAD) | (ops == Op.STORE)
    dur[glob] = nbytes[glob] / target.chip.global_memory.bandwidth_gb_per_s
    prog = ops == Op.PROG
    if prog.any():
        dur[prog] = xb.device.write_latency_ns * xb.rows
    return dur


def run(program: Program, target: CrossbarTarget) -> Timeline:
    """Simulate ``program``; raises Deadlock if its communication cannot complete."""
    n_cores = len(program.cores)
    if n_cores != target.cores:
        raise InputError(f"program has {n_cores} cores, target {target.name} has "
                         f"{target.cores}")
    in_order = target.core.execution == "in_order"
    sync = target.chip.interconnect.communication == "sync"
    interval = target.core.mvm_issue_interval_ns
    gm_latency = target.chip.global_memory.latency_ns
    per_chip = target.chip.cores
    net = target.chip.interconnect
    link_bw = net.bandwidth_gb_per_s
    bus = net.topology == "bus"
    off = target.off_chip
    byte_per_el = program.element_bits / 8

    ops, ee, aa, dur, unit, ptr, flat = [], [], [], [], [], [], []
    n_slots = len(program.array_groups)
    for c, s in enumerate(program.cores):
        ops.append(s.code[:, 0].tolist())
        aa.append(s.code[:, 1].tolist())
        ee.append(s.code[:, 5].tolist())
        dur.append(_durations(s.code, program, target).tolist())
        u = units(s.code)
        glob = np.where(u >= FIXED_UNITS, n_cores * FIXED_UNITS + (u - FIXED_UNITS),
                        c * FIXED_UNITS + u)
        unit.append(glob.tolist())
        ptr.append(s.dep_ptr.tolist())
        flat.append(s.deps.tolist())
    count = [len(o) for o in ops]
    start = [[0.0] * n for n in count]
    end = [[0.0] * n for n in count]
    ufree = [0.0] * (n_cores * FIXED_UNITS + n_slots)
    gm_free = [0.0] * target.chips
    bus_free = [0.0] * target.chips
    inbound = [0.0] * n_cores  # a core's inbound link on a mesh
    off_free = [0.0]
    pc = [0] * n_cores
    last = [0.0] * n_cores
    fence = [0.0] * n_cores
    mvm_next = [0.0] * n_cores
    waiting = [False] * n_cores
    channels: dict[tuple[int, int], deque] = {}
    barrier: dict[int, list[tuple[int, float]]] = {}
    origin = [0.0]
    work = deque(range(n_cores))
    queued = [True] * n_cores
    requests: list[tuple[float, int, int]] = []  # (ready time, core, instruction) of shared use
    granted: set[tuple[int, int]] = set()
    asked: set[tuple[int, int]] = set()  # (core, instruction) whose request is queued
    timed = [[False] * n for n in count]
    n_timed = [0] * n_cores
    # out-of-order cores with async communication run one stream per unit (unit_streams):
    # an instruction waits only for its deps and its unit, not for a recv before it whose
    # data has not come or a send, load or store not yet granted
    streams = None
    if not in_order and not sync:
        streams, fenced = zip(*(unit_streams(s.code) for s in program.cores), strict=True)
        head = [[0] * len(x) for x in streams]
        wait_on = [[-1] * len(x) for x in streams]  # an untimed instruction the head needs
        unfinished = [list(range(len(x))) for x in streams]

    def wake(k: int) -> None:
        if not queued[k]:
            queued[k] = True
            work.append(k)

    def ready(c: int, i: int) -> float:
        t = fence[c]
        if in_order and last[c] > t:
            t = last[c]
        end_c, flat_c = end[c], flat[c]
        for k in range(ptr[c][i], ptr[c][i + 1]):
            x = end_c[flat_c[k]]
            if x > t:
                t = x
        return t

    def wire(src: int, dst: int, elements: int, t: float) -> tuple[float, float]:
        """Start and arrival of a transfer ready at ``t``; books the shared links."""
        nbytes = elements * byte_per_el
        u = src * FIXED_UNITS + 3
        if ufree[u] > t:
            t = ufree[u]
        if src // per_chip != dst // per_chip:
            if off_free[0] > t:
                t = off_free[0]
            busy = nbytes / off.bandwidth_gb_per_s
            off_free[0] = ufree[u] = t + busy
            return t, t + busy + off.latency_ns
        busy = nbytes / link_bw
        if bus:
            chip = src // per_chip
            if bus_free[chip] > t:
                t = bus_free[chip]
            bus_free[chip] = t + busy
        else:
            if inbound[dst] > t:
                t = inbound[dst]
            inbound[dst] = t + busy
        ufree[u] = t + busy
        return t, t + busy + net.hop_latency_ns * hops(target, src, dst)

    def finish(c: int, i: int, t: float, f: float) -> None:
        start[c][i], end[c][i] = t, f
        last[c] = t
        pc[c] = i + 1
        waiting[c] = False
        timed[c][i] = True
        n_timed[c] += 1

    def rendezvous(sender: int, i: int, receiver: int, j: int, t: float) -> None:
        """sync: send ``i`` of ``sender`` and recv ``j`` of ``receiver`` both ready by ``t``
        run together; both cores block until the data has arrived."""
        t0, arrive = wire(sender, receiver, ee[sender][i], t)
        for core, k in ((sender, i), (receiver, j)):
            finish(core, k, t0, arrive)
            fence[core] = arrive

    def communicate(c: int, i: int) -> bool:
        """Handle send / recv / barrier at pc; False when the core must wait."""
        op = ops[c][i]
        if op == Op.BARRIER:
            if waiting[c]:
                return False
            bid = aa[c][i]
            t = max(ready(c, i), max(end[c][:i], default=0.0))
            arrived = barrier.setdefault(bid, [])
            arrived.append((c, t))
            waiting[c] = True
            if len(arrived) < n_cores:
                return False
            release = max(x for _, x in arrived)
            for k, x in arrived:
                finish(k, pc[k], x, release)
                fence[k] = release
                wake(k)
            if bid == 0:
                origin[0] = release
            del barrier[bid]
            return True
        peer = aa[c][i]
        if op == Op.SEND:
            key = (c, peer)
            if sync:
                if waiting[c]:
                    return False
                q = channels.setdefault(key, deque())
                if q and q[0][0] == "recv":
                    _, j, tr = q.popleft()
                    rendezvous(c, i, peer, j, max(ready(c, i), tr))
                    wake(peer)
                    return True
                q.append(("send", i, ready(c, i)))
                waiting[c] = True
                wake(peer)
                return False
            t = ready(c, i)
            if (c, i) not in granted:  # the links are shared: book them in time order
                if (c, i) not in asked:
                    asked.add((c, i))
                    heapq.heappush(requests, (max(t, ufree[c * FIXED_UNITS + 3]), c, i))
                return False
            t0, arrive = wire(c, peer, ee[c][i], t)
            channels.setdefault(key, deque()).append(("data", arrive, 0.0))
            wake(peer)
            finish(c, i, t0, ufree[c * FIXED_UNITS + 3])
            return True
        key = (peer, c)
        q = channels.setdefault(key, deque())
        if sync:
            if waiting[c]:
                return False
            if q and q[0][0] == "send":
                _, j, ts = q.popleft()
                rendezvous(peer, j, c, i, max(ready(c, i), ts))
                wake(peer)
                return True
            q.append(("recv", i, ready(c, i)))
            waiting[c] = True
            wake(peer)
            return False
        if not q:
            return False
        _, arrive, _ = q.popleft()
        t = ready(c, i)
        rx = c * FIXED_UNITS + 4  # recvs of a core complete in program order
        if ufree[rx] > t:
            t = ufree[rx]
        f = arrive if arrive > t else t
        ufree[rx] = f
        finish(c, i, t, f)
        return True

    def occupy(c: int, i: int, t: float) -> tuple[float, float] | None:
        """Instruction ``i`` of core ``c`` (not communication) ready at ``t``: its start and
        end, booking its unit (an MVM also the core's issue interval, a load or store the
        chip's global memory); None while a load's or store's request waits."""
        u = unit[c][i]
        if ufree[u] > t:
            t = ufree[u]
        d = dur[c][i]
        op = ops[c][i]
        if op == 0:
            if mvm_next[c] > t:
                t = mvm_next[c]
            mvm_next[c] = t + interval
        elif op == 4 or op == 5:
            return global_memory(c, i, t, u, d)
        ufree[u] = t + d
        return t, t + d

    def global_memory(c: int, i: int, t: float, u: int, d: float) -> tuple[float, float] | None:
        """A load or store of core ``c`` ready at ``t``: None until its request is granted
        (the chip's global memory is shared: requests are granted in order of ready time),
        then its start and end, booking the memory and the core's port ``u``."""
        if (c, i) not in granted:
            if (c, i) not in asked:  # woken meanwhile: the request is queued already
                asked.add((c, i))
                heapq.heappush(requests, (t, c, i))
            return None
        chip = c // per_chip
        if gm_free[chip] > t:
            t = gm_free[chip]
        gm_free[chip] = ufree[u] = t + d
        return t, t + d + gm_latency

    def advance(c: int) -> None:
        """Run core ``c`` until it ends or blocks on communication."""
        i, n = pc[c], count[c]
        ops_c, ptr_c, flat_c = ops[c], ptr[c], flat[c]
        end_c, start_c = end[c], start[c]
        t_last, t_fence = last[c], fence[c]
        while i < n:
            op = ops_c[i]
            if op >= 6 and op != 8:  # send, recv, barrier
                last[c], pc[c] = t_last, i
                if not communicate(c, i):
                    return
                i = pc[c]
                t_last, t_fence = last[c], fence[c]
                continue
            t = t_fence
            if in_order and t_last > t:
                t = t_last
            for k in range(ptr_c[i], ptr_c[i + 1]):
                x = end_c[flat_c[k]]
                if x > t:
                    t = x
            booked = occupy(c, i, t)
            if booked is None:
                break
            t, end_c[i] = booked
            start_c[i] = t
            t_last = t
            i += 1
        last[c], pc[c] = t_last, i

    def advance_streams(c: int) -> None:
        """Out-of-order core, async communication: run each unit's stream as far as its
        deps allow; a stream blocks alone on its communication or shared-resource request."""
        ops_c, ptr_c, flat_c = ops[c], ptr[c], flat[c]
        end_c, start_c, timed_c, fenced_c, aa_c = end[c], start[c], timed[c], fenced[c], aa[c]
        heads, waits, streams_c, open_c = head[c], wait_on[c], streams[c], unfinished[c]
        again = True
        while again:  # until no stream waits on an instruction another one timed meanwhile
            again, barred, before = False, False, n_timed[c]
            for k in open_c:
                stream = streams_c[k]
                h = heads[k]
                n = len(stream)
                j = waits[k]
                if j >= 0 and not timed_c[j]:
                    continue
                while h < n:
                    i = stream[h]
                    if timed_c[i]:  # a barrier another core's arrival released
                        h += 1
                        continue
                    j = fenced_c[i]
                    if j >= 0 and not timed_c[j]:
                        waits[k] = j
                        break
                    t = fence[c]
                    for x in range(ptr_c[i], ptr_c[i + 1]):
                        j = flat_c[x]
                        if not timed_c[j]:
                            break
                        if end_c[j] > t:
                            t = end_c[j]
                    else:
                        j = -1
                    waits[k] = j
                    if j >= 0:
                        break
                    op = ops_c[i]
                    if op >= 6 and op != 8:  # send, recv, barrier
                        if op == Op.BARRIER:
                            if n_timed[c] < i:  # everything before it first
                                barred = True
                                break
                            pc[c] = i
                        elif op == Op.RECV:
                            if not channels.get((aa_c[i], c)):  # its data has not come
                                break
                        elif (c, i) in asked and (c, i) not in granted:
                            break
                        if not communicate(c, i):
                            break
                    else:
                        booked = occupy(c, i, t)
                        if booked is None:
                            break
                        start_c[i], end_c[i] = booked
                        timed_c[i] = True
                        n_timed[c] += 1
                    h += 1
                heads[k] = h
            if n_timed[c] == before:
                return
            unfinished[c] = open_c = [k for k in open_c if heads[k] < len(streams_c[k])]
            again = barred or any(waits[k] >= 0 and timed_c[waits[k]] for k in open_c)

    # A core runs until it blocks or needs a shared resource (global memory, links); a send or
    # a barrier wakes who waits on it; shared resources are granted in order of ready time.
    while work or requests:
        while work:
            c = work.popleft()
            queued[c] = False
            if streams is None:
                advance(c)
            else:
                advance_streams(c)
        if requests:
            _, c, i = heapq.heappop(requests)
            granted.add((c, i))
            wake(c)
    done = pc if streams is None else n_timed
    stuck = [c for c in range(n_cores) if done[c] < count[c]]
    if stuck:
        c = stuck[0]
        i = pc[c] if streams is None else timed[c].index(False)
        raise Deadlock(f"communication deadlock: {len(stuck)} cores blocked, e.g. core {c} "
                       f"at instruction {i} ({Op(ops[c][i]).name.lower()} "
                       f"{'core ' + str(aa[c][i]) if ops[c][i] != Op.BARRIER else ''})".strip())
    makespan = max((max(e) for e in end if e), default=0.0)
    return Timeline(tuple(np.array(s) for s in start), tuple(np.array(e) for e in end),
                    makespan, origin[0])
