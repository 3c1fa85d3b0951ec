"""The core emitter's allocator: slots reused after their last access, adjacent freed slots
merged when local memory is full, and a caller's spill asked for before memory runs out."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pimsolve.codegen.emit import ROUND_LAG, Buffer, CoreEmitter
from pimsolve.ir.program import Op


def test_full_memory_merges_adjacent_freed_slots() -> None:
    """Two freed 2-element slots next to each other serve a 4-element request once a new one
    would pass the limit; its first write waits for the last reader of each."""
    em = CoreEmitter(0)
    em.limit = 4
    a, b = em.alloc(2), em.alloc(2)
    read_a = em.emit(Op.STORE, 0, 0, a.addr, 0, 2, reads=(a,))
    read_b = em.emit(Op.STORE, 0, 2, b.addr, 0, 2, reads=(b,))
    em.free(a)
    em.free(b)
    c = em.alloc(4)
    assert (c.addr, c.slot, em.top) == (0, 4, 4)
    write = em.emit(Op.LOAD, 0, c.addr, 0, 0, 4, writes=(c,))
    assert em.deps[write] == (max(read_a, read_b),)
    assert em.live == 4


def test_without_pressure_new_memory_is_taken() -> None:
    """Below the limit the same frees leave the slots spare: a new request gets new memory."""
    em = CoreEmitter(0)
    a, b = em.alloc(2), em.alloc(2)
    em.free(a)
    em.free(b)
    assert em.alloc(4).addr == 4


def test_rested_slots_wait_rounds_while_memory_lasts() -> None:
    """Counting rounds, a slot freed in round t serves a rested request only from round
    t + ROUND_LAG on (new memory meanwhile), any other request at once; at the limit, a
    rested request takes a fresh slot rather than pass the limit."""
    spare = CoreEmitter.spares(4)
    em = CoreEmitter(0)
    em.round = 0
    slots = [em.alloc(4, rested=True) for _ in range(spare + 2)]
    for buf in slots:
        em.free(buf)
    em.round = ROUND_LAG - 1
    assert em.alloc(4, rested=True).addr == em.top - 4  # too fresh: new memory
    assert em.alloc(4).addr == slots[0].addr  # not rested: the oldest freed slot
    em.round = ROUND_LAG
    assert em.alloc(4, rested=True).addr == slots[1].addr

    full = CoreEmitter(0)
    full.round = 0
    slots = [full.alloc(4) for _ in range(spare + 1)]
    for buf in slots:
        full.free(buf)
    full.limit = full.top
    assert full.alloc(4, rested=True).addr == slots[0].addr
    assert full.top == full.limit


def test_on_full_is_asked_for_room() -> None:
    """A full core asks its caller to free a slot, then reuses it at once (spares or not)."""
    em = CoreEmitter(0)
    em.limit = 6
    held = [em.alloc(3), em.alloc(3)]
    asked = []

    def spill(e: CoreEmitter, size: int) -> bool:
        asked.append(size)
        if not held:
            return False
        e.free(held.pop())
        return True

    em.on_full = spill
    c = em.alloc(3)
    assert (asked, c.addr, em.top) == ([3], 3, 6)
    assert em.alloc(3).addr == 0
    em.alloc(1)
    assert em.top == 7  # nothing left to spill: past the limit as the last resort
    assert asked == [3, 3, 1]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 9)), min_size=1, max_size=80),
       st.integers(8, 40))
def test_live_buffers_never_overlap(steps: list[tuple[bool, int]], limit: int) -> None:
    """Any sequence of allocations and frees under a limit, with a caller that spills its
    oldest live buffer: live buffers stay disjoint and inside [0, top), and memory passes the
    limit only when a request cannot be met otherwise."""
    em = CoreEmitter(0)
    em.limit = limit
    live: list[Buffer] = []

    def spill(e: CoreEmitter, size: int) -> bool:
        if not live:
            return False
        e.free(live.pop(0))
        return True

    em.on_full = spill
    for allocate, size in steps:
        if allocate or not live:
            top = em.top
            buf = em.alloc(size)
            live.append(buf)
            if em.top > max(top, limit):
                assert em.top == buf.addr + size and live == [buf]
        else:
            em.free(live.pop(len(live) // 2))
        spans = sorted((b.addr, b.addr + b.slot) for b in live)
        assert all(hi <= lo for (_, hi), (lo, _) in zip(spans, spans[1:], strict=False))
        assert all(lo >= 0 and hi <= em.top for lo, hi in spans)
        assert em.live == sum(b.slot for b in live)


def test_a_run_returns_whole_once_all_its_parts_are_freed() -> None:
    """Three adjacent 2-element parts filled by one load; freed in any order, the run's 6
    elements come back as one slot only after the last part, and the next write there
    waits for the last reader of every part."""
    em = CoreEmitter(0)
    parts = em.alloc_run(2, 3)
    assert [p.addr for p in parts] == [0, 2, 4] and em.live == 6
    em.emit(Op.LOAD, 0, 0, 0, 0, 6, writes=tuple(parts))
    reads = [em.emit(Op.STORE, 0, 0, p.addr, 0, 2, reads=(p,)) for p in parts]
    for p in (parts[2], parts[0]):
        em.free(p)
        assert em.live == 6 and not any(em._free.values())  # the run is not back yet
    em.free(parts[1])
    assert em.live == 0 and [(b.addr, b.slot) for b in em._free[6]] == [(0, 6)]
    reuse = em._reuse(6, 12, lambda s: 0)
    assert reuse is not None and reuse.addr == 0
    write = em.emit(Op.LOAD, 0, reuse.addr, 0, 0, 6, writes=(reuse,))
    assert em.deps[write] == (max(reads),)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(1, 4), st.integers(1, 3)),
                min_size=1, max_size=60))
def test_runs_and_buffers_never_overlap(steps: list[tuple[int, int, int]]) -> None:
    """Runs and single buffers, freed part by part in any order: live buffers stay disjoint
    and the live count is the slots of what is held (a run's whole until its last part)."""
    em = CoreEmitter(0)
    live: list[Buffer] = []
    for action, size, count in steps:
        if action == 0 or not live:
            live.extend(em.alloc_run(size, count) if count > 1 else [em.alloc(size)])
        else:
            em.free(live.pop((action * 7) % len(live)))
        spans = sorted((b.addr, b.addr + b.size) for b in live)
        assert all(hi <= lo for (_, hi), (lo, _) in zip(spans, spans[1:], strict=False))
        assert all(lo >= 0 and hi <= em.top for lo, hi in spans)


def test_a_run_never_takes_memory_past_the_limit() -> None:
    """Under a limit a run takes freed or unused memory within it, else the caller gets None
    (and loads pixel by pixel); a single buffer still may pass it as the last resort."""
    em = CoreEmitter(0)
    em.limit = 6
    a = em.alloc(4)
    assert em.alloc_run(2, 2) is None
    em.free(a)
    parts = em.alloc_run(2, 3)
    assert parts is not None and [p.addr for p in parts] == [0, 2, 4] and em.top == 6


def test_a_run_does_not_ask_the_caller_to_free_memory() -> None:
    """``on_full`` (the HT drop, the LL spill) is asked only where a buffer would otherwise
    pass the limit: a run that does not fit is None, and nothing is freed for it; the
    holder of a run's part is the run's whole slot, held by its parts not yet freed."""
    em = CoreEmitter(0)
    em.limit = 6
    asked = []
    em.on_full = lambda e, size: asked.append(size) or False
    parts = em.alloc_run(1, 4)
    assert parts is not None and em.alloc_run(2, 2) is None and not asked
    whole = em.holder(parts[0])
    assert whole is em.holder(parts[3]) and whole.slot == 4 and em.parts_held(whole) == 4
    em.free(parts[1])
    assert em.parts_held(whole) == 3
    single = em.alloc(2)
    assert em.holder(single) is single and em.parts_held(single) == 1
    em.alloc(1)
    assert asked == [1]
