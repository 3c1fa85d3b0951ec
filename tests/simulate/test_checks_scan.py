"""The verifier's shortcuts against the plain checks they stand for.

``scan_core`` is the verifier's per-core checks as first written: one instruction at a time,
with the last writer and the latest reader of every local element in two arrays. On random
programs (random fields, slots and dependencies, so most carry violations of every kind) the
vectorized ``checks._check_core`` must report the same violations, in the same order, with the
same messages.

On out-of-order cores with async communication the deadlock check replays each unit's stream
(``checks._replay_streams``) only when the cores block in program order; on random exchanges
the verdict must be the stream replay's.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pimsolve.ir.program import Op, VecOp, units
from pimsolve.simulate import checks
from pimsolve.simulate.checks import verify
from tests.simulate.conftest import make_program, make_target, slot


def _least_most(values: np.ndarray) -> tuple[int, int]:
    listed = values.tolist()
    return min(listed), max(listed)


def _latest_per_unit(deps: list[int], unit: list[int]) -> dict[int, int]:
    latest: dict[int, int] = {}
    for d in deps:
        if d > latest.get(unit[d], -1):
            latest[unit[d]] = d
    return latest


def scan_core(program, target, c, stream, capacity, out) -> None:
    """The per-instruction scan the vectorized checks replace."""
    code = stream.code
    if len(code) == 0:
        return
    unit = units(code)
    slots = program.array_groups
    rows = code.tolist()
    top, negative = checks._extent(code, slots)
    for i in negative:
        for start, length in checks._touched(rows[i], slots):
            if start < 0 or length < 0:
                out.add("address", c, i, f"negative local address or length ({start}, {length})")
    if top > capacity:
        first = next(i for i, row in enumerate(rows)
                     if any(s + ln > capacity for s, ln in checks._touched(row, slots)))
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
        latest = None
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
        reads, writes = checks._operands(row)
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


TARGET = make_target()


@st.composite
def programs(draw):
    """Two cores of up to 40 random instructions over 24 local elements, three AG slots (one
    on the other core, one not preloaded), each instruction waiting on a random set of earlier
    ones; fields stray out of range now and then."""
    groups = [slot(0, layer="A", rows=draw(st.integers(1, 6)), cols=draw(st.integers(1, 6))),
              slot(1, layer="B", ag=1),
              slot(0, layer="C", ag=2, rows=4, cols=3, preloaded=False)]
    field = st.integers(-1, 24)
    cores = []
    for _ in range(2):
        n = draw(st.integers(0, 40))
        rows = []
        for i in range(n):
            op = draw(st.sampled_from(list(Op)))
            a = draw(st.integers(-1, 3) if op in (Op.MVM, Op.PROG, Op.SEND, Op.RECV)
                     else st.integers(-1, len(VecOp)))
            deps = draw(st.sets(st.integers(0, i - 1), max_size=i)) if i else set()
            rows.append((op, a, draw(field), draw(field), draw(st.integers(-1, 6)),
                         draw(st.integers(-1, 8)), tuple(sorted(deps))))
        cores.append(rows)
    return make_program(cores, groups, global_elements=20, constants=(0.0, 1.0))


@settings(max_examples=200, deadline=None)
@given(programs(), st.sampled_from([16, 1024]), st.sampled_from([checks.TABLE_ENTRIES, 16]))
def test_vectorized_checks_match_the_scan(program, capacity, table_entries):
    """Same violations, order and messages as the scan, on random programs; a capacity of 16
    elements (of the 24 addressed) also brings local-memory-capacity, and tables of 16
    entries split the dependencies into chunks of a few instructions."""
    fast, slow = checks._Collector(program), checks._Collector(program)
    default, checks.TABLE_ENTRIES = checks.TABLE_ENTRIES, table_entries
    try:
        for c, stream in enumerate(program.cores):
            checks._check_core(program, TARGET, c, stream, capacity, fast)
    finally:
        checks.TABLE_ENTRIES = default
    for c, stream in enumerate(program.cores):
        scan_core(program, TARGET, c, stream, capacity, slow)
    assert fast.found == slow.found
    assert fast.per_kind == slow.per_kind


OUT_OF_ORDER = make_target(execution="out_of_order", communication="async", cores=3)


@st.composite
def exchanges(draw):
    """Three cores exchanging up to 8 messages and passing up to 2 barriers; each
    instruction (a copy or vector op besides) waits on a random set of earlier ones."""
    cores: list[list[tuple[int, ...]]] = [[], [], []]
    for _ in range(draw(st.integers(1, 8))):
        src, dst = draw(st.permutations(range(3)))[:2]
        at = draw(st.integers(0, len(cores[src])))
        cores[src].insert(at, (Op.SEND, dst, 0, 0, 0, 1))
        at = draw(st.integers(0, len(cores[dst])))
        cores[dst].insert(at, (Op.RECV, src, 0, 0, 0, 1))
    for c in range(3):
        for _ in range(draw(st.integers(0, 3))):
            at = draw(st.integers(0, len(cores[c])))
            cores[c].insert(at, (Op.COPY, 0, 1, 0, 0, 1))
    for barrier in range(draw(st.integers(0, 2))):
        for c in range(3):  # the first barrier before the second on every core
            after = max((k for k, row in enumerate(cores[c]) if row[0] == Op.BARRIER),
                        default=-1)
            at = draw(st.integers(after + 1, len(cores[c])))
            cores[c].insert(at, (Op.BARRIER, barrier, 0, 0, 0, 0))
    rows = []
    for code in cores:
        rows.append([(*row, tuple(sorted(draw(st.sets(st.integers(0, i - 1), max_size=i)))
                                  if i else ())) for i, row in enumerate(code)])
    return make_program(rows)


def blocked_by_the_rules(program) -> list[tuple[int, int]]:
    """The out-of-order async rules applied one enabled instruction at a time until none is:
    an instruction goes once every earlier one of its unit stream, every dependency and the
    barrier before it are done; a recv once its data is sent; a barrier once everything
    before it on its core is done and every core has reached it. Returns each core still
    blocked, at its first stuck recv or barrier head (else its first stuck head)."""
    n = len(program.cores)
    codes = [s.code.tolist() for s in program.cores]
    split = [checks.unit_streams(s.code) for s in program.cores]
    done: list[set[int]] = [set() for _ in range(n)]
    sent: dict[tuple[int, int], int] = {}
    arrived: dict[int, set[tuple[int, int]]] = {}

    def ready(c: int, i: int) -> bool:
        streams, fenced = split[c]
        order = next(o for o in streams if i in o)
        before = [*order[:order.index(i)], *program.cores[c].deps_of(i).tolist()]
        if fenced[i] >= 0:
            before.append(fenced[i])
        return all(j in done[c] for j in before)

    progress = True
    while progress:
        progress = False
        for c in range(n):
            for i, (op, peer, *_) in enumerate(codes[c]):
                if i in done[c] or not ready(c, i):
                    continue
                if op == Op.BARRIER:
                    if all(j in done[c] for j in range(i)):
                        arrived.setdefault(peer, set()).add((c, i))
                    if len(arrived.get(peer, ())) == n:
                        for core, j in arrived.pop(peer):
                            done[core].add(j)
                        progress = True
                    continue
                if op == Op.RECV:
                    if not sent.get((peer, c)):
                        continue
                    sent[(peer, c)] -= 1
                if op == Op.SEND:
                    sent[(c, peer)] = sent.get((c, peer), 0) + 1
                done[c].add(i)
                progress = True
    blocked = []
    for c in range(n):
        heads = [next(i for i in order if i not in done[c]) for order in split[c][0]
                 if not set(order) <= done[c]]
        stuck = [i for i in heads if codes[c][i][0] in (Op.RECV, Op.BARRIER)]
        if heads:
            blocked.append((c, min(stuck or heads)))
    return blocked


@settings(max_examples=300, deadline=None)
@given(exchanges())
def test_stream_replay_is_the_rules(program):
    """The stream replay (the latest dependency per other stream only, cores woken as data
    comes) blocks exactly where applying the rules one instruction at a time does."""
    replayed = checks._Collector(program)
    checks._replay_streams(program, replayed)
    assert [(v.core, v.instruction) for v in replayed.found] == blocked_by_the_rules(program)


@settings(max_examples=300, deadline=None)
@given(exchanges())
def test_deadlock_verdict_is_the_stream_replays(program):
    """``verify``'s deadlock verdict equals the stream replay's, whether program order blocks
    (then it is the stream replay's own) or not (then the stream replay must not block). Of
    300 such exchanges, about 170 complete in program order, 110 deadlock and 20 block in
    program order only."""
    found = verify(program, OUT_OF_ORDER).violations
    assert not [v for v in found if v.kind == "unmatched"]
    replayed = checks._Collector(program)
    checks._replay_streams(program, replayed)
    assert [v for v in found if v.kind == "deadlock"] == replayed.found
