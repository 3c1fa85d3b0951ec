"""The verifier: rejects a program that a real machine could not run as written.

Checks, each naming core, instruction and layer:

* ``crossbar-capacity``: more crossbars placed on a core than it has;
* ``local-memory-capacity``: a local address beyond the core's local memory;
* ``address``: a negative address, a global address beyond the program's global memory, an AG
  slot or peer core that does not exist, an ``mvm`` on an AG of another core or past its rows;
* ``windows``: a crossbar layer whose matrix rows are not each read exactly once per window
  (a window computed zero or two times);
* ``read-before-write``: an instruction reads local data no earlier instruction wrote, or whose
  writer (a recv included) it does not wait for;
* ``overwrite-live``: an instruction overwrites data an earlier reader has not been ordered
  before (the latest reader of each element is checked);
* ``unmatched``: a send without its recv (or the reverse), or a length / tag mismatch;
* ``deadlock``: communication that cannot complete under the target's sync / async semantics;
* ``unprogrammed``: an ``mvm`` on an array group that is neither preloaded nor programmed by an
  earlier ``prog``.

"Ordered before" is the dependency rule of ``ir.program``: waiting on ``j`` covers every earlier
instruction on ``j``'s unit, and instructions of one unit never overlap.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pimsolve.ir.program import FIXED_UNITS, UNARY, Op, Program, VecOp, units
from pimsolve.simulate.simulator import unit_streams
from pimsolve.target import CrossbarTarget

__all__ = ["Violation", "CheckReport", "verify"]

MAX_REPORTED = 50


@dataclass(frozen=True)
class Violation:
    """One defect, located."""

    kind: str
    core: int
    instruction: int
    layer: str | None
    message: str


@dataclass(frozen=True)
class CheckReport:
    """The verifier's verdict."""

    passed: bool
    violations: tuple[Violation, ...]
    """At most ``MAX_REPORTED`` per kind."""


class _Collector:
    def __init__(self, program: Program) -> None:
        self.program = program
        self.found: list[Violation] = []
        self.per_kind: dict[str, int] = {}

    def add(self, kind: str, core: int, i: int, message: str | Callable[[], str],
            layer: str | None = None) -> None:
        """Count a violation; report it (``message`` called if a callable) while its kind
        has fewer than ``MAX_REPORTED``."""
        n = self.per_kind.get(kind, 0)
        self.per_kind[kind] = n + 1
        if n >= MAX_REPORTED:
            return
        if callable(message):
            message = message()
        if layer is None and i >= 0:
            tag = int(self.program.cores[core].tags[i])
            layer = self.program.layers[tag] if tag >= 0 else None
        if i >= 0:
            op = Op(int(self.program.cores[core].code[i, 0])).name.lower()
            where = f"core {core} instruction {i} ({op}{', layer ' + layer if layer else ''})"
        else:
            where = f"core {core}{' (layer ' + layer + ')' if layer else ''}"
        text = f"{where}: {message}"
        self.found.append(Violation(kind, core, i, layer, text))


def _operands(row: list[int]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Local (start, length) read and written by one instruction."""
    op, a, b, c, d, e = row
    if op == Op.MVM:
        return [(c, e)], []  # the output length comes from the AG slot
    if op == Op.VEC:
        reads = [(c, e)] if a in UNARY else [(c, e), (d, e)]
        return reads, [(b, e)]
    if op == Op.COPY:
        return [(c, e)], [(b, e)]
    if op in (Op.WRITE, Op.LOAD, Op.RECV):
        return [], [(b, e)]
    if op in (Op.STORE, Op.SEND):
        return [(c, e)], []
    return [], []


def _touched(row: list[int], slots) -> list[tuple[int, int]]:
    """Every local (start, length) one instruction reads or writes."""
    reads, writes = _operands(row)
    if row[0] == Op.MVM and 0 <= row[1] < len(slots):
        writes = [(row[2], slots[row[1]].cols)]
    return reads + writes


def _operand_ranges(code: np.ndarray, slots) -> list[tuple[np.ndarray, ...]]:
    """``_operands`` and ``_touched`` for every row at once: per operand, (the instructions
    that have it, starts, lengths, its position: 0 and 1 the reads, 2 the write)."""
    op, a, b, c, d, e = (code[:, k] for k in range(6))
    mvm = (op == Op.MVM) & (a >= 0) & (a < len(slots))
    cols = np.array([g.cols for g in slots] or [0], dtype=np.int64)
    return [
        (np.isin(op, (Op.MVM, Op.VEC, Op.COPY, Op.STORE, Op.SEND)), c, e, 0),
        ((op == Op.VEC) & ~np.isin(a, tuple(UNARY)), d, e, 1),
        (np.isin(op, (Op.VEC, Op.COPY, Op.WRITE, Op.LOAD, Op.RECV)), b, e, 2),
        (mvm, b, cols[np.where(mvm, a, 0)], 2),
    ]


def _extent(code: np.ndarray, slots) -> tuple[int, list[int]]:
    """The end of the highest local range a core's instructions touch (0 if none), and the
    instructions with a negative local address or length."""
    top, negative = 0, np.zeros(len(code), dtype=bool)
    for rows, start, length, _ in _operand_ranges(code, slots):
        if rows.any():
            top = max(top, int((start[rows] + length[rows]).max()))
            negative |= rows & ((start < 0) | (length < 0))
    return top, np.flatnonzero(negative).tolist()


def verify(program: Program, target: CrossbarTarget) -> CheckReport:
    """Every check above; ``passed`` is False when any violation is found."""
    out = _Collector(program)
    slots = program.array_groups
    n_cores = len(program.cores)
    capacity = target.core.local_memory.elements(program.element_bits)
    used: dict[int, int] = {}
    for s, g in enumerate(slots):
        if not 0 <= g.core < n_cores:
            out.add("address", 0, -1, f"AG slot {s} sits on core {g.core}, which does not exist",
                    g.layer)
            continue
        used[g.core] = used.get(g.core, 0) + g.crossbars
    for core, n in sorted(used.items()):
        if n > target.core.crossbars:
            out.add("crossbar-capacity", core, -1, f"{n} crossbars placed, the core has "
                    f"{target.core.crossbars}")
    _check_windows(program, out)
    for c, stream in enumerate(program.cores):
        _check_core(program, target, c, stream, capacity, out)
    _check_communication(program, target, out)
    return CheckReport(not out.found, tuple(out.found))


def _check_windows(program: Program, out: _Collector) -> None:
    height: dict[tuple[str, int], int] = {}
    for g in program.array_groups:
        key = (g.layer, g.matrix)
        height[key] = max(height.get(key, 0), g.row_start + g.rows)
    rows_read = {key: np.zeros(h, dtype=np.int64) for key, h in height.items()}
    for stream in program.cores:
        code = stream.code
        mvm = code[code[:, 0] == Op.MVM]
        for s, first, n in zip(mvm[:, 1].tolist(), mvm[:, 4].tolist(), mvm[:, 5].tolist(),
                               strict=True):
            if 0 <= s < len(program.array_groups):
                g = program.array_groups[s]
                rows_read[(g.layer, g.matrix)][g.row_start + first:g.row_start + first + n] += 1
    home = {}
    for g in program.array_groups:
        home.setdefault((g.layer, g.matrix), g.core)
    for (layer, matrix), counts in rows_read.items():
        want = program.windows.get(layer)
        if want is None:
            continue
        bad = np.flatnonzero(counts != want)
        if len(bad):
            r = int(bad[0])
            out.add("windows", home[(layer, matrix)], -1,
                    f"matrix {matrix} row {r} is read {int(counts[r])} times for {want} "
                    "windows: a window is computed zero or two times", layer)


def _check_core(program: Program, target: CrossbarTarget, c: int, stream, capacity: int,
                out: _Collector) -> None:
    """The per-instruction checks of one core, for all its instructions at once; the
    violations are reported in instruction order, as a scan would find them."""
    code = stream.code
    if len(code) == 0:
        return
    slots = program.array_groups
    top, negative = _extent(code, slots)
    for i in negative:
        for start, length in _touched(code[i].tolist(), slots):
            if start < 0 or length < 0:
                out.add("address", c, i, f"negative local address or length ({start}, {length})")
    if top > capacity:
        first = next(i for i, row in enumerate(code.tolist())
                     if any(s + ln > capacity for s, ln in _touched(row, slots)))
        out.add("local-memory-capacity", c, first, f"uses local addresses up to {top}, the core "
                f"has {capacity} elements ({target.core.local_memory.size_kib} KiB)")
    found = _field_violations(program, c, code)
    found += _memory_violations(stream, slots)
    for i, _, kind, message, layer in sorted(found, key=lambda v: v[:2]):
        out.add(kind, c, i, message, layer)


_Found = list[tuple[int, int, str, Callable[[], str], str | None]]
"""Violations of one core as (instruction, order within it, kind, message (built only if
reported), layer if not the instruction's own)."""


def _field_violations(program: Program, c: int, code: np.ndarray) -> _Found:
    """The checks of single fields: AG slots, rows, programming, global addresses, peers,
    vector ops, constants (orders 0 to 7 within an instruction)."""
    slots = program.array_groups
    op, a, b, cc, d, e = (code[:, k] for k in range(6))
    found: _Found = []
    on_slot = (op == Op.MVM) | (op == Op.PROG)
    valid = on_slot & (a >= 0) & (a < len(slots))
    for i in np.flatnonzero(on_slot & ~valid).tolist():
        found.append((i, 0, "address", lambda a=int(a[i]): f"AG slot {a} does not exist", None))
    at = np.where(valid, a, 0)
    core = np.array([g.core for g in slots] + [c], dtype=np.int64)[at]
    rows = np.array([g.rows for g in slots] + [0], dtype=np.int64)[at]
    preloaded = np.array([g.preloaded for g in slots] + [True])[at]
    for i in np.flatnonzero(valid & (core != c)).tolist():
        g = slots[int(a[i])]
        found.append((i, 1, "address", lambda s=int(a[i]), g=g: f"AG slot {s} ({g.layer} "
                      f"replica {g.replica} AG {g.ag}) sits on core {g.core}", g.layer))
    mvm = valid & (op == Op.MVM)
    for i in np.flatnonzero(mvm & ((d < 0) | (d + e > rows))).tolist():
        found.append((i, 2, "address", lambda s=int(a[i]), lo=int(d[i]), hi=int(d[i] + e[i]):
                      f"rows [{lo}, {hi}) outside AG slot {s}'s {slots[s].rows} rows",
                      slots[int(a[i])].layer))
    first_prog = np.full(len(slots) + 1, len(code), dtype=np.int64)
    progs = np.flatnonzero(valid & (op == Op.PROG))
    np.minimum.at(first_prog, at[progs], progs)
    for i in np.flatnonzero(mvm & ~preloaded & (first_prog[at] > np.arange(len(code)))).tolist():
        g = slots[int(a[i])]
        found.append((i, 3, "unprogrammed", lambda s=int(a[i]), g=g: f"AG slot {s} ({g.layer} "
                      f"replica {g.replica} AG {g.ag}) is used before its weights are "
                      "programmed", g.layer))
    gaddr = np.where(op == Op.LOAD, cc, b)
    out_of_range = (gaddr < 0) | (gaddr + e > program.global_elements)
    for i in np.flatnonzero(((op == Op.LOAD) | (op == Op.STORE)) & out_of_range).tolist():
        found.append((i, 4, "address", lambda lo=int(gaddr[i]), hi=int(gaddr[i] + e[i]):
                      f"global range [{lo}, {hi}) outside the program's "
                      f"{program.global_elements} elements", None))
    peer = (op == Op.SEND) | (op == Op.RECV)
    for i in np.flatnonzero(peer & ((a < 0) | (a >= len(program.cores)))).tolist():
        found.append((i, 5, "address", lambda a=int(a[i]): f"peer core {a} does not exist", None))
    vec = op == Op.VEC
    for i in np.flatnonzero(vec & ((a < 0) | (a >= len(VecOp)))).tolist():
        found.append((i, 6, "address", lambda a=int(a[i]): f"unknown vector op {a}", None))
    constant = (vec & (a == VecOp.SCALE)) | (op == Op.WRITE)
    for i in np.flatnonzero(constant & ((d < 0) | (d >= len(program.constants)))).tolist():
        found.append((i, 7, "address", lambda d=int(d[i]): f"constant {d} does not exist", None))
    return found


def _memory_violations(stream, slots) -> _Found:
    """read-before-write and overwrite-live (orders 8 and 9 for the reads, 10 for the write).

    Every range an instruction reads or writes starts and ends on a breakpoint; between two
    consecutive breakpoints (a segment) all elements have the same history, so the last
    writer and the readers since are tracked per segment, not per element: the accesses,
    sorted by (segment, instruction, write after read), give each read its last writer
    (the latest write before it) and each write the latest reader since that write (the
    access just before the instruction's own, when it is a read)."""
    code = stream.code
    n = len(code)
    op, a = code[:, 0], code[:, 1]
    skipped = ((op == Op.MVM) | (op == Op.PROG)) & ~((a >= 0) & (a < len(slots)))
    ins, start, length, order = [], [], [], []
    for rows, s, ln, k in _operand_ranges(code, slots):
        idx = np.flatnonzero(rows & ~skipped & (s >= 0) & (ln > 0))
        ins.append(idx)
        start.append(s[idx])
        length.append(ln[idx])
        order.append(np.full(len(idx), 8 + k, dtype=np.int64))
    ins, start, length, order = map(np.concatenate, (ins, start, length, order))
    if len(ins) == 0:
        return []
    write = order == 10
    # the segments of each range
    ends = start + length
    cuts = np.unique(np.concatenate([start, ends]))
    lo, hi = np.searchsorted(cuts, start), np.searchsorted(cuts, ends)
    count = hi - lo
    rng = np.repeat(np.arange(len(ins)), count)
    seg = lo[rng] + np.arange(len(rng)) - np.repeat(np.cumsum(count) - count, count)
    key = (seg * n + ins[rng]) * 2 + write[rng]
    sort = np.argsort(key, kind="stable")
    key, seg, rng = key[sort], seg[sort], rng[sort]
    who, wrote = ins[rng], write[rng]
    pos = np.arange(len(key))
    last_write = np.maximum.accumulate(np.where(wrote, pos, -1))
    lw = np.maximum(last_write, 0)
    writer = np.where((last_write >= 0) & (seg[lw] == seg), who[lw], -1)
    own = key >> 1
    group = np.maximum.accumulate(np.where(np.r_[True, own[1:] != own[:-1]], pos, 0))
    before = np.maximum(group - 1, 0)
    reader = np.where((group > 0) & (seg[before] == seg) & ~wrote[before], who[before], -1)

    unit = units(code)
    found: _Found = []
    # reads: a segment nothing wrote, else a writer on another unit not waited for
    reads = ~wrote
    r_rng, r_seg, r_writer = rng[reads], seg[reads], writer[reads]
    missing = r_writer < 0
    unwritten = np.full(len(ins), len(cuts), dtype=np.int64)
    np.minimum.at(unwritten, r_rng[missing], r_seg[missing])
    for r in np.flatnonzero(unwritten < len(cuts)).tolist():
        found.append((int(ins[r]), int(order[r]), "read-before-write",
                      lambda k=int(cuts[unwritten[r]]): f"reads local address {k}, which "
                      "nothing wrote before", None))
    r_ins = ins[r_rng]
    check = ~missing & (unwritten[r_rng] == len(cuts))
    check[check] = unit[r_writer[check]] != unit[r_ins[check]]
    asked = np.flatnonzero(check)
    j = r_writer[asked]
    late = asked[_latest_dep(stream, unit, r_ins[asked], unit[j]) < j]
    unordered = np.full(len(ins), n, dtype=np.int64)
    np.minimum.at(unordered, r_rng[late], r_writer[late])
    for r in np.flatnonzero(unordered < n).tolist():
        found.append((int(ins[r]), int(order[r]), "read-before-write",
                      lambda j=int(unordered[r]): f"reads what instruction {j} "
                      f"({Op(int(code[j, 0])).name.lower()}) writes without waiting for it", None))
    # writes: the latest reader of the range, on another unit and not waited for
    latest_reader = np.full(len(ins), -1, dtype=np.int64)
    np.maximum.at(latest_reader, rng[wrote], reader[wrote])
    w = np.flatnonzero(write & (latest_reader >= 0))
    w = w[unit[latest_reader[w]] != unit[ins[w]]]
    j = latest_reader[w]
    for r in w[_latest_dep(stream, unit, ins[w], unit[j]) < j].tolist():
        found.append((int(ins[r]), 10, "overwrite-live",
                      lambda j=int(latest_reader[r]): f"overwrites local data instruction {j} "
                      f"({Op(int(code[j, 0])).name.lower()}) reads, without waiting for it", None))
    return found


TABLE_ENTRIES = 1 << 22
"""``_latest_dep`` tabulates (instruction, unit) in chunks of at most this many entries."""


def _latest_dep(stream, unit: np.ndarray, i: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The latest instruction on unit ``u`` that instruction ``i`` waits for (-1 if none), for
    arrays of both (``u`` a unit of the core): instruction ``j`` of another unit than
    ``i``'s is ordered before ``i`` when ``j`` is at most ``latest(i, unit[j])``. A table of
    (instruction, unit) takes each dependency once, a chunk of instructions at a time."""
    latest = np.full(len(i), -1, dtype=np.int64)
    if len(i) == 0 or len(stream.deps) == 0:
        return latest
    ptr, deps = stream.dep_ptr, stream.deps
    kinds = np.unique(unit)
    k = len(kinds)
    dep_unit, asked_unit = np.searchsorted(kinds, unit[deps]), np.searchsorted(kinds, u)
    rows = max(1, TABLE_ENTRIES // k)
    chunk = i // rows
    chunks = int(chunk.max()) + 1
    order = np.argsort(chunk, kind="stable") if chunks > 1 else np.arange(len(i))
    bounds = np.searchsorted(chunk[order], np.arange(chunks + 1))
    for c in range(chunks):
        asked = order[bounds[c]:bounds[c + 1]]
        if len(asked) == 0:
            continue
        first, end = c * rows, min(len(stream.code), (c + 1) * rows)
        waiter = np.repeat(np.arange(end - first), np.diff(ptr[first:end + 1]))
        table = np.full((end - first) * k, -1, dtype=np.int64)
        np.maximum.at(table, waiter * k + dep_unit[ptr[first]:ptr[end]], deps[ptr[first]:ptr[end]])
        latest[asked] = table[(i[asked] - first) * k + asked_unit[asked]]
    return latest


def _check_communication(program: Program, target: CrossbarTarget, out: _Collector) -> None:
    comm = []
    for stream in program.cores:
        code = stream.code
        idx = np.flatnonzero(np.isin(code[:, 0], (Op.SEND, Op.RECV, Op.BARRIER)))
        fields = code[idx][:, [0, 1, 3, 4, 5]].tolist()
        comm.append([(i, *f) for i, f in zip(idx.tolist(), fields, strict=True)])
    sends: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    recvs: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    for c, items in enumerate(comm):
        for i, op, peer, _, tag, length in items:
            if op == Op.SEND:
                sends.setdefault((c, peer), []).append((i, tag, length))
            elif op == Op.RECV:
                recvs.setdefault((peer, c), []).append((i, tag, length))
    matched = True
    for key in sorted(set(sends) | set(recvs)):
        s, r = sends.get(key, []), recvs.get(key, [])
        src, dst = key
        for (i, ts, ls), (j, tr, lr) in zip(s, r, strict=False):
            if ls != lr or ts != tr:
                out.add("unmatched", dst, j, f"receives {lr} elements with tag {tr} from core "
                        f"{src}, whose matching send (instruction {i}) sends {ls} with tag {ts}")
                matched = False
        for i, _, _ in s[len(r):]:
            out.add("unmatched", src, i, f"send to core {dst} has no matching recv")
            matched = False
        for j, _, _ in r[len(s):]:
            out.add("unmatched", dst, j, f"recv from core {src} has no matching send")
            matched = False
    if not matched:
        return
    sync = target.chip.interconnect.communication == "sync"
    blocked = _replay_in_order(comm, sync)
    if blocked and target.core.execution != "in_order" and not sync:
        # Out of order with async communication, the units of a core run on their own. When
        # the cores complete in program order they complete so too (that order is one the
        # units may take, and nothing that can go ever stops being able to), so the exact
        # replay is needed only when program order blocks.
        _replay_streams(program, out)
        return
    for c, i in blocked:
        _blocked(program, c, i, out)


def _replay_in_order(comm: list[list[tuple[int, ...]]], sync: bool) -> list[tuple[int, int]]:
    """The untimed replay of the blocking rules on in-order cores (only communication can
    block): each core still blocked at the end, at the instruction it is stuck on."""
    n_cores = len(comm)
    pc = [0] * n_cores
    queues: dict[tuple[int, int], deque] = {}
    at_barrier: dict[int, set[int]] = {}
    progress = True
    while progress:
        progress = False
        for c in range(n_cores):
            while pc[c] < len(comm[c]):
                i, op, peer, _, _, _ = comm[c][pc[c]]
                if op == Op.BARRIER:
                    at_barrier.setdefault(peer, set()).add(c)
                    if len(at_barrier[peer]) < n_cores:
                        break
                    for k in at_barrier.pop(peer):
                        pc[k] += 1
                    progress = True
                    continue
                if op == Op.SEND:
                    q = queues.setdefault((c, peer), deque())
                    if sync:
                        if q and q[0] == "recv":
                            q.popleft()
                            pc[c] += 1
                            pc[peer] += 1
                            progress = True
                            continue
                        if "send" not in q:
                            q.append("send")
                        break
                    q.append("data")
                    pc[c] += 1
                    progress = True
                    continue
                q = queues.setdefault((peer, c), deque())
                if sync:
                    if q and q[0] == "send":
                        q.popleft()
                        pc[c] += 1
                        pc[peer] += 1
                        progress = True
                        continue
                    if "recv" not in q:
                        q.append("recv")
                    break
                if not q:
                    break
                q.popleft()
                pc[c] += 1
                progress = True
    return [(c, comm[c][pc[c]][0]) for c in range(n_cores) if pc[c] < len(comm[c])]


def _blocked(program: Program, c: int, i: int, out: _Collector) -> None:
    op, peer = program.cores[c].code[i, :2].tolist()
    what = f"barrier {peer}" if op == Op.BARRIER else f"core {peer}"
    out.add("deadlock", c, i, f"blocked forever waiting on {what} (communication deadlock)")


def _replay_streams(program: Program, out: _Collector) -> None:
    """The untimed replay on out-of-order cores with async communication, which run one
    stream per unit (``simulator.unit_streams``): an instruction goes when its deps and the
    barrier before it have; a recv when its data has been sent, a barrier when its core has
    done everything before it and every core has reached it. Each core still blocked is
    reported at its first recv or barrier that cannot go (else at its first instruction
    that cannot, a send waiting on one)."""
    n_cores = len(program.cores)
    split = [unit_streams(s.code) for s in program.cores]
    lists = [(s.code[:, 0].tolist(), s.code[:, 1].tolist(), _waits(s, fenced))
             for s, (_, fenced) in zip(program.cores, split, strict=True)]
    head = [[0] * len(streams) for streams, _ in split]
    done = [[False] * len(s) for s in program.cores]
    n_done = [0] * n_cores
    sent: dict[tuple[int, int], int] = {}
    at_barrier: dict[int, list[tuple[int, int]]] = {}
    work, queued = deque(range(n_cores)), [True] * n_cores

    def wake(k: int) -> None:
        if not queued[k]:
            queued[k] = True
            work.append(k)

    while work:
        c = work.popleft()
        queued[c] = False
        streams = split[c][0]
        ops, peers, waits = lists[c]
        done_c, heads = done[c], head[c]
        again = True
        while again:
            again = False
            for k, order in enumerate(streams):
                while heads[k] < len(order):
                    i = order[heads[k]]
                    if not done_c[i]:
                        if waits[i] and not all(map(done_c.__getitem__, waits[i])):
                            break
                        op, peer = ops[i], peers[i]
                        if op == Op.SEND:
                            sent[(c, peer)] = sent.get((c, peer), 0) + 1
                            wake(peer)
                        elif op == Op.RECV:
                            if not sent.get((peer, c)):
                                break
                            sent[(peer, c)] -= 1
                        elif op == Op.BARRIER:
                            if n_done[c] < i or (c, i) in at_barrier.get(peer, []):
                                break
                            arrived = at_barrier.setdefault(peer, [])
                            arrived.append((c, i))
                            if len(arrived) < n_cores:
                                break
                            for core, j in at_barrier.pop(peer):
                                done[core][j] = True
                                n_done[core] += 1
                                wake(core)
                            continue
                        done_c[i] = True
                        n_done[c] += 1
                    heads[k] += 1
                    again = True
    for c, (streams, _) in enumerate(split):
        heads = [order[h] for order, h in zip(streams, head[c], strict=True) if h < len(order)]
        stuck = [i for i in heads if program.cores[c].code[i, 0] in (Op.RECV, Op.BARRIER)]
        if heads:
            _blocked(program, c, min(stuck or heads), out)


def _waits(stream, fenced: list[int]) -> list[tuple[int, ...]]:
    """Per instruction, what ``_replay_streams`` must have done before it goes: the barrier
    before it and, of its dependencies on each other stream, the latest (each stream is done
    in order, so the latest covers the rest, and its own stream's are done before it)."""
    code, deps = stream.code, stream.deps
    of = np.clip(units(code), -1, FIXED_UNITS) + 1  # 0: in no stream (``unit_streams``)
    waiter = np.repeat(np.arange(len(code)), np.diff(stream.dep_ptr))
    other = of[deps] != of[waiter]
    waiter, deps = waiter[other], deps[other]
    barrier = np.asarray(fenced, dtype=np.int64)
    fence = np.flatnonzero(barrier >= 0)
    waiter = np.concatenate([waiter, fence])
    deps = np.concatenate([deps, barrier[fence]])
    key = waiter * (FIXED_UNITS + 2) + of[deps]
    sort = np.lexsort((deps, key))
    key, waiter, deps = key[sort], waiter[sort], deps[sort]
    last = np.r_[key[1:] != key[:-1], True] if len(key) else np.zeros(0, dtype=bool)
    waiter, deps = waiter[last], deps[last]
    ptr = np.searchsorted(waiter, np.arange(len(code) + 1)).tolist()
    flat = deps.tolist()
    return [tuple(flat[ptr[i]:ptr[i + 1]]) for i in range(len(code))]
