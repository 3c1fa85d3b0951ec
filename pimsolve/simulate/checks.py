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
from dataclasses import dataclass

import numpy as np

from pimsolve.ir.program import UNARY, Op, Program, VecOp, units
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

    def add(self, kind: str, core: int, i: int, message: str, layer: str | None = None) -> None:
        n = self.per_kind.get(kind, 0)
        self.per_kind[kind] = n + 1
        if n >= MAX_REPORTED:
            return
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


def _extent(code: np.ndarray, slots) -> tuple[int, list[int]]:
    """The end of the highest local range a core's instructions touch (0 if none), and the
    instructions with a negative local address or length (``_touched``, for every row at
    once)."""
    op, a, b, c, d, e = (code[:, k] for k in range(6))
    mvm = (op == Op.MVM) & (a >= 0) & (a < len(slots))
    cols = np.array([g.cols for g in slots] or [0], dtype=np.int64)
    ranges = (  # (instructions, starts, lengths), as ``_operands`` and ``_touched``
        (np.isin(op, (Op.MVM, Op.VEC, Op.COPY, Op.STORE, Op.SEND)), c, e),
        ((op == Op.VEC) & ~np.isin(a, tuple(UNARY)), d, e),
        (np.isin(op, (Op.VEC, Op.COPY, Op.WRITE, Op.LOAD, Op.RECV)), b, e),
        (mvm, b, cols[np.where(mvm, a, 0)]),
    )
    top, negative = 0, np.zeros(len(code), dtype=bool)
    for rows, start, length in ranges:
        if rows.any():
            top = max(top, int((start[rows] + length[rows]).max()))
            negative |= rows & ((start < 0) | (length < 0))
    return top, np.flatnonzero(negative).tolist()


def _least_most(values: np.ndarray) -> tuple[int, int]:
    """The least and the most of a local range's entries (a list is faster on short ones:
    most operands are a pixel's few channels)."""
    if len(values) <= 32:
        listed = values.tolist()
        return min(listed), max(listed)
    return int(values.min()), int(values.max())


def _latest_per_unit(deps: list[int], unit: list[int]) -> dict[int, int]:
    """The latest of ``deps`` on each unit: instruction ``j`` of another unit than the
    waiting one's is ordered before it when ``j`` is at most that unit's entry."""
    latest: dict[int, int] = {}
    for d in deps:
        if d > latest.get(unit[d], -1):
            latest[unit[d]] = d
    return latest


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
    code = stream.code
    n = len(code)
    if n == 0:
        return
    unit = units(code)
    slots = program.array_groups
    rows = code.tolist()
    top, negative = _extent(code, slots)
    for i in negative:
        for start, length in _touched(rows[i], slots):
            if start < 0 or length < 0:
                out.add("address", c, i, f"negative local address or length ({start}, {length})")
    if top > capacity:
        first = next(i for i, row in enumerate(rows)
                     if any(s + ln > capacity for s, ln in _touched(row, slots)))
        out.add("local-memory-capacity", c, first, f"uses local addresses up to {top}, the core "
                f"has {capacity} elements ({target.core.local_memory.size_kib} KiB)")
    writer = np.full(max(top, 1), -1, dtype=np.int64)
    reader = np.full(max(top, 1), -1, dtype=np.int64)
    programmed: set[int] = set()
    unit_of = unit.tolist()
    ptr, flat = stream.dep_ptr.tolist(), stream.deps.tolist()
    for i, row in enumerate(rows):
        op, a, b, cc, d, e = row
        own = unit_of[i]
        latest = None  # per unit, the latest instruction i waits for (when first needed)
        if op in (Op.MVM, Op.PROG):
            if not 0 <= a < len(slots):
                out.add("address", c, i, f"AG slot {a} does not exist")
                continue
            g = slots[a]
            if g.core != c:
                out.add("address", c, i, f"AG slot {a} ({g.layer} replica {g.replica} AG "
                        f"{g.ag}) sits on core {g.core}", g.layer)
            if op == Op.PROG:
                programmed.add(a)
                continue
            if d < 0 or d + e > g.rows:
                out.add("address", c, i, f"rows [{d}, {d + e}) outside AG slot {a}'s "
                        f"{g.rows} rows", g.layer)
            if not g.preloaded and a not in programmed:
                out.add("unprogrammed", c, i, f"AG slot {a} ({g.layer} replica {g.replica} AG "
                        f"{g.ag}) is used before its weights are programmed", g.layer)
        if op in (Op.LOAD, Op.STORE):
            gaddr = cc if op == Op.LOAD else b
            if gaddr < 0 or gaddr + e > program.global_elements:
                out.add("address", c, i, f"global range [{gaddr}, {gaddr + e}) outside the "
                        f"program's {program.global_elements} elements")
        if op in (Op.SEND, Op.RECV) and not 0 <= a < len(program.cores):
            out.add("address", c, i, f"peer core {a} does not exist")
        if op == Op.VEC and not 0 <= a < len(VecOp):
            out.add("address", c, i, f"unknown vector op {a}")
        if op in (Op.VEC, Op.WRITE) and (a == VecOp.SCALE or op == Op.WRITE) and not \
                0 <= d < len(program.constants):
            out.add("address", c, i, f"constant {d} does not exist")
        reads, writes = _operands(row)
        if op == Op.MVM:
            writes = [(b, slots[a].cols)]
        for start, length in reads:
            if start < 0 or length <= 0:
                continue
            seen = writer[start:start + length]
            first, final = _least_most(seen)
            if first < 0:
                k = start + int(np.flatnonzero(seen < 0)[0])
                out.add("read-before-write", c, i, f"reads local address {k}, which nothing "
                        "wrote before")
                continue
            for j in [first] if first == final else np.unique(seen).tolist():
                if unit_of[j] == own:
                    continue
                if latest is None:
                    latest = _latest_per_unit(flat[ptr[i]:ptr[i + 1]], unit_of)
                if latest.get(unit_of[j], -1) < j:
                    kind = Op(int(code[j, 0])).name.lower()
                    out.add("read-before-write", c, i, f"reads what instruction {j} ({kind}) "
                            "writes without waiting for it")
                    break
        for start, length in writes:
            if start < 0 or length <= 0:
                continue
            j = _least_most(reader[start:start + length])[1]
            if j < 0 or unit_of[j] == own:
                continue
            if latest is None:
                latest = _latest_per_unit(flat[ptr[i]:ptr[i + 1]], unit_of)
            if latest.get(unit_of[j], -1) < j:
                out.add("overwrite-live", c, i, f"overwrites local data instruction {j} "
                        f"({Op(int(code[j, 0])).name.lower()}) reads, without waiting for it")
        for start, length in reads:
            if start >= 0 and length > 0:
                reader[start:start + length] = i
        for start, length in writes:
            if start >= 0 and length > 0:
                writer[start:start + length] = i
                reader[start:start + length] = -1


def _check_communication(program: Program, target: CrossbarTarget, out: _Collector) -> None:
    n_cores = len(program.cores)
    comm = []
    for stream in program.cores:
        code = stream.code
        idx = np.flatnonzero(np.isin(code[:, 0], (Op.SEND, Op.RECV, Op.BARRIER)))
        comm.append([(int(i), *code[i, [0, 1, 3, 4, 5]].tolist()) for i in idx])
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
    if target.core.execution != "in_order" and not sync:
        _replay_streams(program, out)
        return
    # untimed replay of the blocking rules: who can make progress?
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
    for c in range(n_cores):
        if pc[c] < len(comm[c]):
            i, op, peer, _, _, _ = comm[c][pc[c]]
            _blocked(program, c, i, out)


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
    lists = [(s.code[:, 0].tolist(), s.code[:, 1].tolist(), s.dep_ptr.tolist(), s.deps.tolist())
             for s in program.cores]
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
        streams, fenced = split[c]
        ops, peers, ptr, flat = lists[c]
        done_c, heads = done[c], head[c]
        again = True
        while again:
            again = False
            for k, order in enumerate(streams):
                while heads[k] < len(order):
                    i = order[heads[k]]
                    if not done_c[i]:
                        b = fenced[i]
                        if b >= 0 and not done_c[b] or not all(
                                done_c[flat[x]] for x in range(ptr[i], ptr[i + 1])):
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
