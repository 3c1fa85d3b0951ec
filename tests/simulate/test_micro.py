"""Micro-programs whose timing and energy are derived by hand from the documented models.

The timing model is the module docstring of ``pimsolve.simulate.simulator``, the energy model
the docstring of ``pimsolve.simulate.metrics``. Every program runs on the tiny target of
``conftest.py``: one byte per element and 1 byte/ns everywhere, so moving ``e`` elements takes
``e`` ns. Reminders used in the derivations below:

* ``write`` / ``copy``: e bytes / 1 byte/ns on the local-memory port;
* ``load`` / ``store``: the global memory is busy e ns, the instruction ends 100 ns later;
* ``vec``: 2 ns per 4 lanes; ``mvm``: 50 ns per block of ``parallel_rows`` rows;
* ``send``: e ns on the sender's port (and on the bus), arrival 10 ns per hop later;
* ``prog``: 5 ns per crossbar row, 4 rows = 20 ns.

Intervals are written ``[start, end]`` in ns. Every micro-program is also a valid program (the
verifier passes it), so the numbers are those of programs a compiler could emit.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pimsolve.ir.program import CoreStream, Op, Program, VecOp
from pimsolve.simulate.checks import verify
from pimsolve.simulate.metrics import ENERGY_COMPONENTS, measure
from pimsolve.simulate.simulator import Deadlock, Timeline, hops, run

from .conftest import make_program, make_target, slot

W, MVM, VEC, COPY, LOAD, STORE = Op.WRITE, Op.MVM, Op.VEC, Op.COPY, Op.LOAD, Op.STORE
SEND, RECV, PROG, BARRIER = Op.SEND, Op.RECV, Op.PROG, Op.BARRIER
ADD, RELU = VecOp.ADD, VecOp.RELU


def intervals(timeline: Timeline, core: int) -> list[tuple[float, float]]:
    """``(start, end)`` of every instruction of ``core``, as plain floats."""
    return [(float(s), float(e)) for s, e in
            zip(timeline.start[core], timeline.end[core], strict=True)]


def simulate(program: Program, target) -> Timeline:
    """Run a micro-program after checking that it is a valid one."""
    report = verify(program, target)
    assert report.passed, [v.message for v in report.violations]
    return run(program, target)


def pj(metrics, component: str) -> float:
    """One energy component in pJ."""
    return metrics.energy_by_component_j[component] * 1e12


# --------------------------------------------------------------------------- (a) execution


def blocked_program() -> Program:
    """A long MVM, its consumer, and an independent write behind the consumer."""
    return make_program([
        [(W, 0, 0, 0, 0, 4, ()),            # i0 write [0, 4)
         (MVM, 0, 4, 0, 0, 4, (0,)),        # i1 mvm [0, 4) -> [4, 8)
         (VEC, ADD, 8, 4, 4, 4, (1,)),      # i2 vec [4, 8) + [4, 8) -> [8, 12)
         (W, 0, 12, 0, 0, 4, ()),           # i3 write [12, 16): independent of i1, i2
         (VEC, RELU, 16, 12, 0, 4, (3,))],  # i4 relu [12, 16) -> [16, 20)
        [],
    ], [slot(0)], windows={"L": 1})


@pytest.mark.parametrize(("execution", "expected", "makespan"), [
    # i0 [0, 4]; i1 waits for i0: [4, 54]; i2 waits for i1, 4 elements = one 2 ns op: [54, 56].
    # In order, i3 may not start before i2 started (54) although the local port is free at 4:
    # [54, 58]; i4 waits for i3 (58) and the vector unit (56): [58, 60]. Makespan 60.
    ("in_order", [(0, 4), (4, 54), (54, 56), (54, 58), (58, 60)], 60.0),
    # Out of order, i3 only needs the local port, free since i0 ended: [4, 8]. i4 waits for i3
    # (8) and for the vector unit, which runs i2 first (program order per unit): [56, 58].
    ("out_of_order", [(0, 4), (4, 54), (54, 56), (4, 8), (56, 58)], 58.0),
])
def test_in_order_blocks_independent_instruction(execution, expected, makespan):
    timeline = simulate(blocked_program(), make_target(execution=execution))
    assert intervals(timeline, 0) == expected
    assert intervals(timeline, 1) == []
    assert timeline.makespan_ns == makespan
    assert timeline.origin_ns == 0.0


# --------------------------------------------------------------------- (b) communication


def late_recv_program() -> Program:
    """Core 0 sends early; core 1 posts the recv only after a 50 ns MVM has read its buffer."""
    return make_program([
        [(W, 0, 0, 0, 0, 4, ()),            # i0 write [0, 4)
         (SEND, 1, 0, 0, 0, 4, (0,)),       # i1 send [0, 4) to core 1
         (W, 0, 4, 0, 0, 4, ())],           # i2 write [4, 8): independent
        [(W, 0, 0, 0, 0, 4, ()),            # i0 write [0, 4)
         (MVM, 0, 4, 0, 0, 4, (0,)),        # i1 mvm [0, 4) -> [4, 8)
         (RECV, 0, 0, 0, 0, 4, (1,)),       # i2 recv into [0, 4): must wait until i1 read it
         (VEC, RELU, 8, 0, 0, 4, (2,))],    # i3 relu of the received data
    ], [slot(1)], windows={"L": 1})


@pytest.mark.parametrize("execution", ["in_order", "out_of_order"])
@pytest.mark.parametrize(("communication", "core0", "core1", "makespan"), [
    # sync: the send is ready at 4, the recv at 54 (after the mvm [4, 54]); they start together
    # at 54, the bus carries 4 bytes [54, 58], one hop: arrival 68. Both end at 68 and block
    # their cores until then: core 0's i2 runs [68, 72], core 1's relu [68, 70]. Makespan 72.
    ("sync", [(0, 4), (54, 68), (68, 72)], [(0, 4), (4, 54), (54, 68), (68, 70)], 72.0),
    # async: the send only occupies core 0's port [4, 8]; the data arrives at 8 + 10 = 18. Core
    # 0's i2 uses the local port, free at 4 (and in order: not before the send started at 4):
    # [4, 8]. The recv is ready at 54; its data is there already, so it ends at 54; relu
    # [54, 56]. Makespan 56.
    ("async", [(0, 4), (4, 8), (4, 8)], [(0, 4), (4, 54), (54, 54), (54, 56)], 56.0),
])
def test_sync_blocks_sender_async_does_not(communication, core0, core1, makespan, execution):
    target = make_target(execution=execution, communication=communication)
    timeline = simulate(late_recv_program(), target)
    assert intervals(timeline, 0) == core0
    assert intervals(timeline, 1) == core1
    assert timeline.makespan_ns == makespan


def waiting_recv_program() -> Program:
    """Core 0 first receives from core 1, whose data comes late (after a 50 ns MVM), then
    sends a buffer it writes itself to core 2: the send does not need the recv."""
    return make_program([
        [(RECV, 1, 0, 0, 0, 4, ()),         # i0 recv into [0, 4)
         (W, 0, 4, 0, 0, 4, ()),            # i1 write [4, 8)
         (SEND, 2, 0, 4, 0, 4, (1,))],      # i2 send [4, 8) to core 2
        [(W, 0, 0, 0, 0, 4, ()),            # i0 write [0, 4)
         (MVM, 0, 4, 0, 0, 4, (0,)),        # i1 mvm [0, 4) -> [4, 8)
         (SEND, 0, 0, 4, 0, 4, (1,))],      # i2 send [4, 8) to core 0
        [(RECV, 0, 0, 0, 0, 4, ())],        # i0 recv into [0, 4)
    ], [slot(1)], windows={"L": 1})


def test_out_of_order_async_send_does_not_wait_behind_a_recv():
    """Out of order, async: each unit runs its own instructions in order. Core 1: write [0, 4],
    mvm [4, 54], send [54, 58] on the bus, arrival 68, so core 0's recv is [0, 68]. Core 0's
    write needs only the local port: [0, 4]; its send only the write and the free bus: [4, 8],
    arrival 18, so core 2's recv is [0, 18]. Makespan 68. (Before, a core got past a recv only
    once its data had come, so this send took the bus after core 1's: [58, 62], core 2 at
    72.)"""
    target = make_target(execution="out_of_order", communication="async", cores=3)
    timeline = simulate(waiting_recv_program(), target)
    assert intervals(timeline, 0) == [(0, 68), (0, 4), (4, 8)]
    assert intervals(timeline, 1) == [(0, 4), (4, 54), (54, 58)]
    assert intervals(timeline, 2) == [(0, 18)]
    assert timeline.makespan_ns == 68.0


# --------------------------------------------------------------------------- (c) topology


def test_hop_counts():
    """Bus: one hop between any two cores. Mesh of 4 cores: 2 columns by default
    (ceil(sqrt(4))), so core k sits at (k // 2, k % 2) and hops are Manhattan distances."""
    bus = make_target(topology="bus", cores=4)
    mesh = make_target(topology="mesh", cores=4)
    row = make_target(topology="mesh", cores=4, mesh_columns=4)
    assert [hops(bus, 0, k) for k in (1, 2, 3)] == [1, 1, 1]
    assert [hops(mesh, 0, k) for k in (1, 2, 3)] == [1, 1, 2]
    assert [hops(mesh, 1, k) for k in (0, 2, 3)] == [1, 2, 1]
    assert [hops(row, 0, k) for k in (1, 2, 3)] == [1, 2, 3]


@pytest.mark.parametrize(("topology", "columns", "n_hops"), [
    ("bus", None, 1), ("mesh", None, 2), ("mesh", 4, 3), ("mesh", 1, 3)])
def test_bus_vs_mesh_hops(topology, columns, n_hops):
    """Core 0 sends 4 bytes to core 3 (async, 4 cores). Write [0, 4]; send [4, 8]; arrival at
    8 + 10 ns x hops, which is when the recv (ready at 0) ends. Hops: bus 1; 2x2 mesh (0,0) ->
    (1,1): 2; 1x4 mesh (0,0) -> (0,3): 3; 4x1 mesh (0,0) -> (3,0): 3. Interconnect energy:
    4 bytes x hops x 3 pJ; local: write 4 + send 4 + recv 4 bytes x 0.5 pJ = 6 pJ."""
    target = make_target(topology=topology, mesh_columns=columns, cores=4,
                         communication="async", execution="out_of_order")
    program = make_program([
        [(W, 0, 0, 0, 0, 4, ()), (SEND, 3, 0, 0, 0, 4, (0,))],
        [], [],
        [(RECV, 0, 0, 0, 0, 4, ())],
    ])
    timeline = simulate(program, target)
    arrival = 8.0 + 10.0 * n_hops
    assert intervals(timeline, 0) == [(0, 4), (4, 8)]
    assert intervals(timeline, 3) == [(0, arrival)]
    assert timeline.makespan_ns == arrival
    metrics = measure(program, target, timeline)
    assert pj(metrics, "interconnect") == pytest.approx(12.0 * n_hops, rel=1e-12)
    assert pj(metrics, "local_memory") == pytest.approx(6.0, rel=1e-12)
    assert metrics.interconnect_bytes == 4
    assert metrics.interconnect_byte_hops == 4 * n_hops


@pytest.mark.parametrize(("topology", "core3"), [
    # bus: one shared medium. Core 0's send holds it [4, 8] (arrival 18); core 2's send, ready
    # at 4 too, waits for it: [8, 12], arrival 22.
    ("bus", [(0, 22)]),
    # mesh: every core has its own port; 2 -> 3 is one hop ((1,0) -> (1,1)): [4, 8], arrival 18.
    ("mesh", [(0, 18)]),
])
def test_bus_is_shared_mesh_ports_are_not(topology, core3):
    target = make_target(topology=topology, cores=4, communication="async",
                         execution="out_of_order")
    program = make_program([
        [(W, 0, 0, 0, 0, 4, ()), (SEND, 1, 0, 0, 0, 4, (0,))],
        [(RECV, 0, 0, 0, 0, 4, ())],
        [(W, 0, 0, 0, 0, 4, ()), (SEND, 3, 0, 0, 0, 4, (0,))],
        [(RECV, 2, 0, 0, 0, 4, ())],
    ])
    timeline = simulate(program, target)
    assert intervals(timeline, 1) == [(0, 18)]
    assert intervals(timeline, 3) == core3
    second_send = (8, 12) if topology == "bus" else (4, 8)
    assert intervals(timeline, 2) == [(0, 4), second_send]
    assert timeline.makespan_ns == core3[0][1]


def test_mesh_receiver_takes_in_one_transfer_at_a_time():
    """Mesh: cores 0 and 2 both send 4 elements to core 1, ready at 4. Core 0 (granted first:
    lower core) holds core 1's inbound link [4, 8], arrival 8 + 10 (one hop); core 2's send
    waits for that link: [8, 12], arrival 12 + 20 (two hops). Core 1's recvs: [0, 18] and,
    in program order, [18, 32]."""
    target = make_target(topology="mesh", cores=4, communication="async",
                         execution="out_of_order")
    program = make_program([
        [(W, 0, 0, 0, 0, 4, ()), (SEND, 1, 0, 0, 0, 4, (0,))],
        [(RECV, 0, 0, 0, 0, 4, ()), (RECV, 2, 4, 0, 0, 4, ())],
        [(W, 0, 0, 0, 0, 4, ()), (SEND, 1, 0, 0, 0, 4, (0,))],
        [],
    ])
    timeline = simulate(program, target)
    assert intervals(timeline, 0) == [(0, 4), (4, 8)]
    assert intervals(timeline, 2) == [(0, 4), (8, 12)]
    assert intervals(timeline, 1) == [(0, 18), (18, 32)]


# ------------------------------------------------------------------ (d) global memory


def test_global_memory_serves_one_transfer_at_a_time():
    """Three loads of 8 elements, all ready at 0: two on core 0 (separate buffers, no
    dependencies), one on core 1. The chip's global memory serves one transfer at a time, so
    they hold it [0, 8], [8, 16], [16, 24] and end 100 ns later: 108, 116, 124. Requests are
    served in order of ready time, ties by core: core 0's first load (ready 0), core 1's
    (ready 0), then core 0's second, ready only at 8 when core 0's global port frees. A load
    alone ends at 108. Energy: 24 bytes x 2 pJ global, 24 bytes x 0.5 pJ local."""
    target = make_target(execution="out_of_order", communication="async")
    program = make_program([
        [(LOAD, 0, 0, 0, 0, 8, ()), (LOAD, 0, 8, 8, 0, 8, ())],
        [(LOAD, 0, 0, 16, 0, 8, ())],
    ])
    timeline = simulate(program, target)
    assert intervals(timeline, 0) == [(0, 108), (16, 124)]
    assert intervals(timeline, 1) == [(8, 116)]
    assert timeline.makespan_ns == 124.0
    alone = simulate(make_program([[(LOAD, 0, 0, 0, 0, 8, ())], []]), target)
    assert alone.makespan_ns == 108.0
    metrics = measure(program, target, timeline)
    assert pj(metrics, "global_memory") == pytest.approx(48.0, rel=1e-12)
    assert pj(metrics, "local_memory") == pytest.approx(12.0, rel=1e-12)
    assert metrics.global_memory_bytes == 24


def test_global_memory_is_not_held_for_a_later_request():
    """Core 0's load is ready only at 54 (after an mvm that reads the buffer it overwrites);
    core 1's load is ready at 0. Per the model an instruction starts when its dependencies are
    done, its unit is free and the global memory is free: the memory is idle during [0, 54], so
    core 1's load runs [0, 8] and ends at 108, and core 0's [54, 62] ends at 162. Makespan 162.
    Shared resources are granted in order of ready time, so core 1's load goes first."""
    target = make_target(execution="out_of_order", communication="async")
    program = make_program([
        [(W, 0, 0, 0, 0, 4, ()), (MVM, 0, 4, 0, 0, 4, (0,)), (LOAD, 0, 0, 0, 0, 8, (1,))],
        [(LOAD, 0, 0, 8, 0, 8, ())],
    ], [slot(0)], windows={"L": 1})
    timeline = simulate(program, target)
    assert intervals(timeline, 0) == [(0, 4), (4, 54), (54, 162)]
    assert intervals(timeline, 1) == [(0, 108)]
    assert timeline.makespan_ns == 162.0


# ------------------------------------------------------------------------- (e) energy


def energy_program() -> Program:
    """Program an AG of 2 crossbars, load, two half MVMs, add, send, then store, copy, write."""
    return make_program([
        [(PROG, 0, 0, 0, 0, 0, ()),          # i0 program AG 0
         (LOAD, 0, 0, 0, 0, 4, ()),          # i1 global [0, 4) -> local [0, 4)
         (MVM, 0, 4, 0, 0, 2, (0, 1)),       # i2 rows [0, 2) of AG 0: [0, 2) -> [4, 12)
         (MVM, 0, 12, 2, 2, 2, (1,)),        # i3 rows [2, 4): [2, 4) -> [12, 20)
         (VEC, ADD, 20, 4, 12, 8, (2, 3)),   # i4 [4, 12) + [12, 20) -> [20, 28)
         (SEND, 1, 0, 20, 0, 8, (4,))],      # i5 send [20, 28) to core 1
        [(RECV, 0, 0, 0, 0, 8, ()),          # i0 recv into [0, 8)
         (STORE, 0, 4, 0, 0, 8, (0,)),       # i1 local [0, 8) -> global [4, 12)
         (COPY, 0, 8, 0, 0, 8, (0,)),        # i2 [0, 8) -> [8, 16)
         (W, 0, 16, 0, 0, 4, ())],           # i3 write [16, 20)
    ], [slot(0, rows=4, cols=8, crossbars=2, preloaded=False)], windows={"L": 1})


def test_energy_by_component():
    """Async, out of order, bus. Timing: prog [0, 20]; load: memory [0, 4], end 104; i2 waits
    for both: [104, 154] (2 rows = one block); i3 on the same AG: [154, 204]; add of 8 elements
    = 2 ops: [204, 208]; send [208, 216], arrival 226 = end of the recv (ready at 0). Core 1:
    store [226, 334] (8 ns + 100), copy [226, 234], write on the same local port [234, 238].
    Makespan 334.

    Energy (pJ), per the metrics docstring:

    * crossbar read: per mvm 2 crossbars x (2 / 4 rows) x 10 = 10; two mvms: 20;
    * DAC: 2 x 2/4 x 1 = 1 per mvm: 2;
    * ADC: 2 crossbars x ceil(2 / 4) = 1 block x 1 = 2 per mvm: 4;
    * vector: 8 elements x 1 = 8;
    * local bytes: load 4 + mvms (2 in + 8 out) x 2 = 20 + add 3 x 8 = 24 + send 8 + recv 8 +
      store 8 + copy 2 x 8 = 16 + write 4 = 92, x 0.5 = 46;
    * global: (4 loaded + 8 stored) bytes x 2 = 24;
    * interconnect: 8 bytes x 1 hop x 3 = 24;
    * crossbar write: 2 crossbars x 4 x 4 cells x 0.25 = 8;
    * leakage 0. Total 136 pJ.
    """
    target = make_target(execution="out_of_order", communication="async")
    program = energy_program()
    timeline = simulate(program, target)
    assert intervals(timeline, 0) == [(0, 20), (0, 104), (104, 154), (154, 204), (204, 208),
                                      (208, 216)]
    assert intervals(timeline, 1) == [(0, 226), (226, 334), (226, 234), (234, 238)]
    assert timeline.makespan_ns == 334.0
    metrics = measure(program, target, timeline)
    expected = {"crossbar_read": 20.0, "adc": 4.0, "dac": 2.0, "vector_unit": 8.0,
                "local_memory": 46.0, "global_memory": 24.0, "interconnect": 24.0,
                "crossbar_write": 8.0, "leakage": 0.0}
    assert set(metrics.energy_by_component_j) == set(ENERGY_COMPONENTS)
    for component, value in expected.items():
        assert pj(metrics, component) == pytest.approx(value, rel=1e-12, abs=1e-12), component
    assert metrics.energy_j == pytest.approx(136e-12, rel=1e-12)
    assert metrics.latency_s == pytest.approx(334e-9, rel=1e-12)
    assert metrics.cycle_s == pytest.approx(334e-9, rel=1e-12)
    assert metrics.crossbar_writes == 32
    assert metrics.global_memory_bytes == 12
    assert metrics.interconnect_bytes == 8
    assert metrics.instructions == 10
    assert metrics.instructions_by_op == {"mvm": 2, "vec": 1, "copy": 1, "write": 1, "load": 1,
                                          "store": 1, "send": 1, "recv": 1, "prog": 1}
    # the AG (2 crossbars) computes [104, 204] of 334 ns; its core has 4 crossbars
    assert metrics.ag_utilization == pytest.approx((100 / 334,), rel=1e-12)
    assert metrics.core_utilization == pytest.approx((2 * 100 / (4 * 334), 0.0), rel=1e-12)


def test_wordline_mode_adc_per_block():
    """WLM with 2 parallel rows: an mvm takes 50 ns and converts once per block of 2 rows.
    Write [0, 4]; rows [0, 3) = 2 blocks: [4, 104]; row [3, 4) = 1 block: [104, 154].
    Read energy 10 x (3/4 + 1/4) = 10, DAC 1 x (3/4 + 1/4) = 1, ADC 1 x (2 + 1) blocks = 3;
    local (4 written + (3 + 4) + (1 + 4) mvm bytes) x 0.5 = 8."""
    target = make_target(parallel_rows=2)
    program = make_program([
        [(W, 0, 0, 0, 0, 4, ()),
         (MVM, 0, 4, 0, 0, 3, (0,)),
         (MVM, 0, 8, 3, 3, 1, (0,))],
        [],
    ], [slot(0)], windows={"L": 1})
    timeline = simulate(program, target)
    assert intervals(timeline, 0) == [(0, 4), (4, 104), (104, 154)]
    metrics = measure(program, target, timeline)
    assert pj(metrics, "crossbar_read") == pytest.approx(10.0, rel=1e-12)
    assert pj(metrics, "dac") == pytest.approx(1.0, rel=1e-12)
    assert pj(metrics, "adc") == pytest.approx(3.0, rel=1e-12)
    assert pj(metrics, "local_memory") == pytest.approx(8.0, rel=1e-12)


def test_unary_vec_local_energy():
    """Write 4 elements, relu them: the write stores 4 bytes; the relu reads 4 and writes 4
    ("every byte read or written locally"): 12 bytes x 0.5 pJ = 6 pJ. The metrics charge the
    relu 3 x 4 bytes like a binary op: 8 pJ."""
    target = make_target()
    program = make_program([[(W, 0, 0, 0, 0, 4, ()), (VEC, RELU, 4, 0, 0, 4, (0,))], []])
    metrics = measure(program, target, simulate(program, target))
    assert pj(metrics, "vector_unit") == pytest.approx(4.0, rel=1e-12)
    assert pj(metrics, "local_memory") == pytest.approx(6.0, rel=1e-12)


def test_layer_finish_is_each_layers_last_mvm_or_vector_operation():
    """``blocked_program`` in order (timeline in ``test_in_order_blocks_independent_instruction``),
    i0 to i2 tagged layer A, i3 layer C, i4 layer B: A's last MVM or vector operation is i2,
    [54, 56]; B's is i4, [58, 60]; C has only a write (i3), so no finish. In HT every layer
    runs throughout the cycle, so there is none."""
    target = make_target()
    base = blocked_program()
    core = base.cores[0]
    tagged = CoreStream(core.code, core.dep_ptr, core.deps, np.array([0, 0, 0, 2, 1]))
    program = replace(base, cores=(tagged, *base.cores[1:]), layers=("A", "B", "C"))
    metrics = measure(program, target, simulate(program, target))
    assert metrics.layer_finish_s == pytest.approx({"A": 56e-9, "B": 60e-9}, rel=1e-12)
    ht = replace(program, mode="ht")
    assert measure(ht, target, run(ht, target)).layer_finish_s == {}


def test_barrier_origin_and_leakage():
    """Core 0 programs an AG ([0, 20]) and reaches barrier 0 when everything before it is done,
    at 20; core 1 reaches it at 0. The barrier releases both at 20: it is the origin, the
    weight-programming time. Core 0's write then runs [20, 24]. Span 24 - 20 = 4 ns; leakage
    (1 chip x 1 mW + 2 cores x 0.5 mW) x 4 ns = 8 pJ; crossbar write 16 cells x 0.25 = 4 pJ;
    local 4 bytes x 0.5 = 2 pJ."""
    target = make_target(chip_leakage_mw=1.0, core_leakage_mw=0.5)
    program = make_program([
        [(PROG, 0, 0, 0, 0, 0, ()), (BARRIER, 0, 0, 0, 0, 0, ()), (W, 0, 0, 0, 0, 4, ())],
        [(BARRIER, 0, 0, 0, 0, 0, ())],
    ], [slot(0, preloaded=False)])
    timeline = simulate(program, target)
    assert intervals(timeline, 0) == [(0, 20), (20, 20), (20, 24)]
    assert intervals(timeline, 1) == [(0, 20)]
    assert timeline.origin_ns == 20.0
    assert timeline.makespan_ns == 24.0
    metrics = measure(program, target, timeline)
    assert metrics.weight_programming_s == pytest.approx(20e-9, rel=1e-12)
    assert metrics.latency_s == pytest.approx(4e-9, rel=1e-12)
    assert pj(metrics, "leakage") == pytest.approx(8.0, rel=1e-12)
    assert pj(metrics, "crossbar_write") == pytest.approx(4.0, rel=1e-12)
    assert metrics.energy_j == pytest.approx(14e-12, rel=1e-12)


@pytest.mark.parametrize(("interval", "second"), [(0.0, (4, 54)), (30.0, (34, 84))])
def test_mvm_issue_interval(interval, second):
    """Two AGs of one core, both inputs written at 4: with no issue interval both mvms run
    [4, 54]; with 30 ns the second is issued at 4 + 30 = 34 and ends at 84."""
    target = make_target(execution="out_of_order", mvm_issue_interval_ns=interval)
    program = make_program([
        [(W, 0, 0, 0, 0, 4, ()),
         (MVM, 0, 4, 0, 0, 4, (0,)),
         (MVM, 1, 8, 0, 0, 4, (0,))],
        [],
    ], [slot(0), slot(0, layer="K")], windows={"L": 1, "K": 1})
    timeline = simulate(program, target)
    assert intervals(timeline, 0) == [(0, 4), (4, 54), second]
    assert timeline.makespan_ns == second[1]


def test_async_recvs_complete_in_program_order():
    """On a 1x3 mesh, core 2 receives 100 elements from core 0 (write [0, 100], send
    [100, 200], 2 hops: arrival 220), then 1 element from core 1 (write [0, 1], send [1, 2],
    1 hop: arrival 12). The relu reads the first buffer and waits only on the second recv,
    which the verifier accepts: the recvs share the network-in unit, which "runs its
    instructions one at a time in program order", so the second recv cannot complete before
    the first. The relu must therefore not start before 220; the simulator starts it at 12."""
    target = make_target(cores=3, topology="mesh", mesh_columns=3, communication="async",
                         execution="out_of_order")
    program = make_program([
        [(W, 0, 0, 0, 0, 100, ()), (SEND, 2, 0, 0, 0, 100, (0,))],
        [(W, 0, 0, 0, 0, 1, ()), (SEND, 2, 0, 0, 0, 1, (0,))],
        [(RECV, 0, 0, 0, 0, 100, ()), (RECV, 1, 200, 0, 0, 1, ()),
         (VEC, RELU, 300, 0, 0, 100, (1,))],
    ])
    timeline = simulate(program, target)
    first_recv_end = timeline.end[2][0]
    assert first_recv_end == 220.0
    assert timeline.end[2][1] >= first_recv_end
    assert timeline.start[2][2] >= first_recv_end


# ------------------------------------------------------------------ determinism, deadlock


def test_same_program_same_timeline():
    """Two runs, and a run of the program after a JSON round trip, agree bit for bit."""
    target = make_target(execution="out_of_order", communication="async")
    program = energy_program()
    first, second = run(program, target), run(program, target)
    copy = run(Program.from_jsonl(program.to_jsonl()), target)
    for other in (second, copy):
        assert other.makespan_ns == first.makespan_ns
        assert other.origin_ns == first.origin_ns
        for a, b in zip(first.start + first.end, other.start + other.end, strict=True):
            assert a.dtype == b.dtype
            assert np.array_equal(a, b)
    assert measure(program, target, first) == measure(program, target, second)


def exchange(recv_first: bool) -> Program:
    """Each core sends 4 elements to the other and receives 4; ``recv_first`` puts the recv
    before the send on both cores."""
    def core(peer: int) -> list:
        if recv_first:
            return [(RECV, peer, 0, 0, 0, 4, ()), (W, 0, 4, 0, 0, 4, ()),
                    (SEND, peer, 0, 4, 0, 4, (1,))]
        return [(W, 0, 0, 0, 0, 4, ()), (SEND, peer, 0, 0, 0, 4, (0,)),
                (RECV, peer, 4, 0, 0, 4, ())]
    return make_program([core(1), core(0)])


@pytest.mark.parametrize("communication", ["sync", "async"])
def test_recv_first_deadlocks(communication):
    """Both cores wait for data the other sends only after its own recv: no semantics helps."""
    target = make_target(communication=communication)
    program = exchange(recv_first=True)
    with pytest.raises(Deadlock, match=r"2 cores blocked, e\.g\. core 0 at instruction 0 \(recv"):
        run(program, target)
    report = verify(program, target)
    assert {(v.kind, v.core, v.instruction) for v in report.violations} == {
        ("deadlock", 0, 0), ("deadlock", 1, 0)}


def test_send_first_deadlocks_only_when_sync():
    """Both cores send first. sync: each send waits for the peer's recv, which sits behind the
    peer's own send: deadlock. async (in order): core 0 writes [0, 4] and sends [4, 8] (bus),
    arrival 18; core 1's send, also ready at 4, waits for the bus: [8, 12], arrival 22. Core
    0's recv may not start before its send (4) and ends on arrival: [4, 22]; core 1's recv
    [8, 18]. Makespan 22."""
    program = exchange(recv_first=False)
    sync = make_target(communication="sync")
    with pytest.raises(Deadlock, match="core 0 at instruction 1 \\(send core 1\\)"):
        run(program, sync)
    report = verify(program, sync)
    assert {(v.kind, v.core, v.instruction) for v in report.violations} == {
        ("deadlock", 0, 1), ("deadlock", 1, 1)}
    timeline = simulate(program, make_target(communication="async"))
    assert intervals(timeline, 0) == [(0, 4), (4, 8), (4, 22)]
    assert intervals(timeline, 1) == [(0, 4), (8, 12), (8, 18)]
    assert timeline.makespan_ns == 22.0
