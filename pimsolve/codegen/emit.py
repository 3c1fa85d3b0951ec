"""One core's instruction stream under construction: buffers, allocation and dependencies.

A ``Buffer`` is one local-memory allocation. The emitter records, per buffer, the last writer
and last reader on every unit, so each instruction waits exactly for the producers of what it
reads (read after write) and for the readers of what it overwrites (write after read); keeping
only the latest instruction per unit is enough because a unit completes in program order.
Allocation is a pool per slot size over a bump pointer: a freed slot keeps its size and its
access records, so whoever reuses it waits exactly for its previous readers. A request takes a
freed slot of its own size, else the smallest freed slot of up to twice its size (so the
many channel counts of a network share slots instead of each keeping its own), else new memory.
Freed slots are reused oldest first, and one or two spares per size stay in circulation
(``spares``), so consecutive tasks get different buffers and can overlap (double buffering)
instead of waiting on each other. A generator that emits in rounds (HT) also sets ``round``, and
asks for ``rested`` buffers where a window's staging, MVM outputs and partial sums go: those
take a slot freed in round t only from round t + ``ROUND_LAG`` on, while memory lasts, so a
window's MVM never waits for the adds of a window two rounds back whose partial sums are still
on their way (vgg8-28/arch-c HT: 47.7 -> 44.5 us simulated, the model's 40.0). Other buffers
(a pool's streamed pixels) reuse at once, as before.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Callable, Iterator

from pimsolve.ir.program import CoreStream, Op, unit_of

__all__ = ["Buffer", "CoreEmitter", "ROUND_LAG"]

ROUND_LAG = 2
"""Rounds a freed slot rests before reuse, where the emitter counts rounds (and memory is
left): a round's finish (partial sums home, adds, store) is emitted after the next round's
MVMs, so a slot freed in round t is last read in round t + 1's stream."""


def _latest(into: dict[int, int], accesses) -> None:
    """Keep in ``into`` the latest instruction per unit of ``into`` and ``accesses``."""
    for unit, i in accesses:
        if into.get(unit, -1) < i:
            into[unit] = i


class Buffer:
    """A local-memory allocation of ``size`` elements at ``addr`` on one core."""

    __slots__ = ("addr", "size", "slot", "writers", "readers", "war", "freed_in")

    def __init__(self, addr: int, size: int) -> None:
        self.addr = addr
        self.size = size
        self.slot = size
        """Elements reserved at ``addr`` (``size`` or, reusing a larger slot, more)."""
        self.writers: dict[int, int] = {}
        self.readers: dict[int, int] = {}
        self.war: dict[int, int] = {}
        self.freed_in = -1
        """The emitter's ``round`` when the buffer was last freed."""

    def refill(self) -> None:
        """The next writes replace the contents: they wait for every earlier access."""
        war = dict(self.war)
        _latest(war, (*self.writers.items(), *self.readers.items()))
        self.war, self.writers, self.readers = war, {}, {}


class CoreEmitter:
    """Builds the instruction stream of one core."""

    def __init__(self, core: int) -> None:
        self.core = core
        self.rows: list[tuple[int, int, int, int, int, int]] = []
        self.deps: list[tuple[int, ...]] = []
        self.tags: list[int] = []
        self.layer = -1
        """Tag of the instructions emitted now: the index of the layer being worked on."""
        self._free: dict[int, deque[Buffer]] = {}
        self._free_addrs: list[int] = []
        """The freed slots' addresses in order (``_free_at``: the slot at each), so that a
        search for adjacent freed slots need not sort them (LL spilling searches often)."""
        self._free_at: dict[int, Buffer] = {}
        self._run_of: dict[int, tuple[Buffer, list[Buffer]]] = {}
        """Parts of runs (``alloc_run``) not yet freed: the run's whole slot and parts."""
        self._parts: dict[int, list[Buffer]] = {}
        """The parts of each run (by its whole slot) until all are freed."""
        self.top = 0
        self.peak = 0
        self.live = 0
        """Elements of the slots in use (allocated and not freed)."""
        self.limit: float = math.inf
        """Local memory (elements) that new allocations should stay within."""
        self.round: int | None = None
        """The generator's current round, if it emits in rounds (see ``ROUND_LAG``)."""
        self.on_full: Callable[[CoreEmitter, int], bool] | None = None
        """Called when an allocation of the given size would pass ``limit``: frees a slot
        of at least that size (True) or cannot (False)."""

    def alloc(self, size: int, rested: bool = False) -> Buffer:
        """A buffer of ``size`` elements in a freed slot of ``size`` to ``2 size`` elements
        if one is spare (with ``rested``, and freed ``ROUND_LAG`` rounds ago), else in new
        memory. New memory past ``limit`` is the last resort: first any freed slot that
        fits, then (``on_full``) a slot the caller frees by spilling, even one kept spare."""
        return self._take(size, past_limit=True, rested=rested)

    def alloc_run(self, size: int, count: int) -> list[Buffer] | None:
        """``count`` buffers of ``size`` elements at adjacent addresses, so one transfer can
        fill them all, or None where that would take memory past ``limit`` (``on_full`` is
        not asked: a run only saves transfers). Each is freed on its own; the run's memory
        returns to the pool, as one slot, once all are (freed parts of runs would otherwise
        splinter the pools)."""
        whole = self._take(size * count, past_limit=False)
        if whole is None:
            return None
        parts = []
        for i in range(count):
            part = Buffer(whole.addr + i * size, size)
            part.war = dict(whole.war)
            parts.append(part)
        for part in parts:
            self._run_of[id(part)] = (whole, parts)
        self._parts[id(whole)] = parts
        return parts

    def _take(self, size: int, past_limit: bool, rested: bool = False) -> Buffer | None:
        """``alloc``; without ``past_limit``, None rather than new memory past ``limit``."""
        buf = self._reuse(size, 2 * size, self.spares, rested)
        if buf is None and self.top + size > self.limit:
            # memory is short: a slot freed lately beats new memory past the limit
            buf = self._reuse(size, 2 * size, self.spares) if rested else None
            buf = buf or self._reuse(size, self.limit, self.spares) or self._coalesce(size)
            while (buf is None and past_limit and self.on_full is not None
                   and self.on_full(self, size)):
                buf = self._reuse(size, self.limit, lambda s: 0) or self._coalesce(size)
            if buf is None and not past_limit:
                return None
        if buf is not None:
            return buf
        buf = Buffer(self.top, size)
        self.top += size
        self.live += size
        self.peak = max(self.peak, self.top)
        return buf

    def _reuse(self, size: int, largest: float, spares: Callable[[int], int],
               rested: bool = False) -> Buffer | None:
        """The oldest freed buffer of the smallest slot in ``[size, largest]`` that has more
        than ``spares(slot)`` freed (with ``rested``, one freed ``ROUND_LAG`` rounds ago or
        earlier), or None."""
        fits = [s for s, pool in self._free.items()
                if size <= s <= largest and len(pool) > spares(s)
                and not (rested and self.round is not None
                         and pool[0].freed_in > self.round - ROUND_LAG)]
        if not fits:
            return None
        buf = self._free[min(fits)].popleft()
        self._unlist(buf)
        buf.refill()
        buf.size = size
        self.live += buf.slot
        return buf

    def _unlist(self, buf: Buffer) -> None:
        """``buf`` leaves the freed slots' address order."""
        del self._free_addrs[bisect.bisect_left(self._free_addrs, buf.addr)]
        del self._free_at[buf.addr]

    def _runs(self, size: int, movable: list[Buffer]) -> Iterator[list[Buffer]]:
        """Runs of address-adjacent buffers, freed or ``movable``, of at least ``size``
        elements in all, each as short as it can be, in address order; the unused memory
        from ``top`` to ``limit`` counts as a last, free buffer."""
        end = Buffer(self.top, -1)  # size -1 marks the unused memory
        end.slot = max(0, int(min(self.limit, 2**62) - self.top))
        pieces = map(self._free_at.__getitem__, self._free_addrs)
        if movable:  # the freed slots are one sorted run: Timsort merges in linear time
            pieces = sorted([*pieces, *movable], key=_address)
        run: list[Buffer] = []
        total = 0
        for b in (*pieces, end) if end.slot else pieces:
            if run and run[-1].addr + run[-1].slot != b.addr:
                run, total = [], 0
            run.append(b)
            total += b.slot
            while total - run[0].slot >= size:
                total -= run.pop(0).slot
            if total >= size:
                yield list(run)

    def _coalesce(self, size: int) -> Buffer | None:
        """Adjacent freed slots (and unused memory up to ``limit`` after the last) merged
        into one buffer of at least ``size`` elements; its writes wait for every earlier
        access of each part."""
        run = next(self._runs(size, []), None)
        if run is None:
            return None
        merged = Buffer(run[0].addr, size)
        merged.slot = 0
        for b in run:
            if b.size < 0:  # the unused memory: grow top
                grow = size - merged.slot
                self.top += grow
                self.peak = max(self.peak, self.top)
                merged.slot += grow
                continue
            self._free[b.slot].remove(b)
            self._unlist(b)
            b.refill()
            _latest(merged.war, b.war.items())
            merged.slot += b.slot
        self.live += merged.slot
        return merged

    def cheapest_room(self, size: int, movable: list[Buffer]) -> list[Buffer]:
        """The fewest of ``movable`` (buffers the caller could free) whose freeing leaves
        ``size`` adjacent elements free; empty if none does."""
        best: list[Buffer] = []
        ids = {id(b) for b in movable}
        for run in self._runs(size, movable):
            moved = [b for b in run if id(b) in ids]
            if moved and (not best or len(moved) < len(best)):
                best = moved
        return best

    def holder(self, buf: Buffer) -> Buffer:
        """The slot that returns to the pool once ``buf`` is freed: its run's whole slot
        when it is part of one (``parts_held`` counts what must be freed with it), else itself."""
        run = self._run_of.get(id(buf))
        return buf if run is None else run[0]

    def parts_held(self, holder: Buffer) -> int:
        """How many buffers in use ``holder`` (a ``holder`` result) still holds: the parts
        of its run not yet freed, else 1."""
        parts = self._parts.get(id(holder))
        return 1 if parts is None else sum(id(part) in self._run_of for part in parts)

    def free(self, buf: Buffer) -> None:
        """Return ``buf``; a later allocation of its slot's size, or of down to half of it,
        reuses it after its last access."""
        run = self._run_of.pop(id(buf), None)
        if run is not None:
            whole, parts = run
            if any(id(part) in self._run_of for part in parts):
                return
            del self._parts[id(whole)]
            buf = whole  # the whole run, which waits for every access of its parts
            for part in parts:
                _latest(buf.writers, part.writers.items())
                _latest(buf.readers, part.readers.items())
                _latest(buf.war, part.war.items())
        buf.freed_in = -1 if self.round is None else self.round
        self._free.setdefault(buf.slot, deque()).append(buf)
        bisect.insort(self._free_addrs, buf.addr)
        self._free_at[buf.addr] = buf
        self.live -= buf.slot

    @staticmethod
    def spares(size: int) -> int:
        """Freed buffers of ``size`` elements kept aside before one is reused."""
        return max(1, min(2, 512 // max(size, 1)))

    def emit(self, op: Op, a: int = 0, b: int = 0, c: int = 0, d: int = 0, e: int = 0, *,
             reads: tuple[Buffer, ...] = (), writes: tuple[Buffer, ...] = ()) -> int:
        """Append one instruction; returns its index in this core's stream."""
        wait: dict[int, int] = {}
        for buf in reads:
            _latest(wait, buf.writers.items())
        for buf in writes:
            _latest(wait, buf.war.items())
        index = len(self.rows)
        unit = unit_of(op, a)
        self.rows.append((int(op), a, b, c, d, e))
        self.deps.append(tuple(sorted(wait.values())))
        self.tags.append(self.layer)
        for buf in reads:
            buf.readers[unit] = index
        for buf in writes:
            buf.writers[unit] = index
        return index

    def stream(self) -> CoreStream:
        """The finished stream."""
        return CoreStream.build(self.rows, self.deps, self.tags)


def _address(buf: Buffer) -> int:
    return buf.addr
