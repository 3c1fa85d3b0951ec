"""The verifier's per-core checks, which run on all instructions at once, against a plain scan.

``scan_core`` is the verifier as it was first written: one instruction at a time, with the
last writer and the latest reader of every local element in two arrays. On random programs
(random fields, slots and dependencies, so most carry violations of every kind) the vectorized
``checks._check_core`` must report the same violations, in the same order, with the same
messages.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pimsolve.ir.program import Op, VecOp, units
from pimsolve.simulate import checks
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


@settings(max_examples=300, deadline=None)
@given(programs(), st.sampled_from([16, 1024]))
def test_vectorized_checks_match_the_scan(program, capacity):
    """Same violations, order and messages as the scan, on random programs; a capacity of 16
    elements (of the 24 addressed) also brings local-memory-capacity."""
    fast, slow = checks._Collector(program), checks._Collector(program)
    for c, stream in enumerate(program.cores):
        checks._check_core(program, TARGET, c, stream, capacity, fast)
        scan_core(program, TARGET, c, stream, capacity, slow)
    assert fast.found == slow.found
    assert fast.per_kind == slow.per_kind
