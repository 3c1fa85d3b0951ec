"""What the judge reports: latency, throughput, energy by component, utilization, traffic.

Energy per instruction (pJ), from the target:

* crossbar read / DAC: ``mvm_energy_pj`` / ``dac_energy_pj`` per crossbar of the AG, times the
  fraction of rows read; ADC: ``adc_energy_pj`` per crossbar per block of ``parallel_rows`` rows
  (wordline mode converts once per block).
* vector unit: ``energy_pj_per_op`` per element; local memory: ``energy_pj_per_byte`` for every
  byte read or written locally (mvm inputs and outputs, vec operands and result, copy both
  ways, write, and the local side of load / store / send / recv); global memory per byte loaded
  or stored; interconnect per byte per hop (off-chip: per byte on the link).
* crossbar writes (``prog``): every cell of the AG's crossbars; leakage: chips and cores times
  the simulated time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pimsolve.ir.program import Op, Program, VecOp
from pimsolve.simulate.simulator import Timeline, hops
from pimsolve.target import CrossbarTarget

__all__ = ["Metrics", "measure", "ENERGY_COMPONENTS"]

ENERGY_COMPONENTS = ("crossbar_read", "adc", "dac", "vector_unit", "local_memory",
                     "global_memory", "interconnect", "crossbar_write", "leakage")


@dataclass(frozen=True)
class Metrics:
    """The simulated metrics of one program (seconds, joules, bytes)."""

    latency_s: float
    """One inference, first input to last output (HT: pipeline depth x cycle)."""
    throughput_per_s: float
    """Inferences per second in steady state."""
    energy_j: float
    """Per inference."""
    cycle_s: float
    """HT: one steady-state pipeline cycle; LL: equal to latency."""
    energy_by_component_j: dict[str, float]
    instructions: int
    instructions_by_op: dict[str, int]
    core_utilization: tuple[float, ...]
    """Per core: crossbar-busy time over (crossbars on the core x cycle)."""
    crossbar_utilization: float
    """All used crossbars: busy crossbar-time over (crossbars used x cycle)."""
    ag_utilization: tuple[float, ...]
    """Per array-group slot (its crossbars are busy together)."""
    global_memory_bytes: int
    interconnect_bytes: int
    interconnect_byte_hops: int
    peak_local_memory_bytes: tuple[int, ...]
    """Per core: the highest local address used, in bytes."""
    peak_active_crossbars: int
    crossbar_writes: int
    """Cells written per inference."""
    lifetime_s: float | None
    """OCC eq. 1: endurance x cells / write rate; None when no cell is rewritten."""
    weight_programming_s: float
    """Time before the inference to program the weights (up to barrier 0)."""
    layer_finish_s: dict[str, float] = field(default_factory=dict)
    """LL: when each layer's last MVM or vector operation ends, from the inference's start,
    by layer name (beside the model's ``Prediction.layer_finish_ns`` it shows where the
    simulator falls behind); HT: empty (every layer runs throughout a cycle)."""


def _peak_active(starts: np.ndarray, ends: np.ndarray, weight: np.ndarray) -> int:
    if len(starts) == 0:
        return 0
    times = np.concatenate([ends, starts])
    delta = np.concatenate([-weight, weight])
    order = np.lexsort((delta, times))  # at equal times, ends before starts
    return int(np.max(np.cumsum(delta[order])))


def measure(program: Program, target: CrossbarTarget, timeline: Timeline) -> Metrics:
    """Metrics of ``program`` from its ``timeline``."""
    xb, core = target.crossbar, target.core
    eb = program.element_bits / 8
    slots = program.array_groups
    xbars = np.array([g.crossbars for g in slots] + [0], dtype=np.float64)
    slot_cols = np.array([g.cols for g in slots] + [0], dtype=np.float64)
    energy = dict.fromkeys(ENERGY_COMPONENTS, 0.0)
    busy = np.zeros(len(slots) + 1)
    by_op = np.zeros(len(Op), dtype=np.int64)
    global_bytes = net_bytes = byte_hops = writes = 0
    peaks = []
    mvm_s, mvm_e, mvm_w = [], [], []
    origin = timeline.origin_ns
    finish = np.full(len(program.layers), -np.inf)
    for c, s in enumerate(program.cores):
        code = s.code
        ops, a, e = code[:, 0], code[:, 1], code[:, 5].astype(np.float64)
        by_op += np.bincount(ops, minlength=len(Op))
        mvm = ops == Op.MVM
        slot = np.where(mvm | (ops == Op.PROG), a, len(slots))
        k = xbars[slot]
        frac = np.where(mvm, e / xb.rows, 0.0)
        steps = np.where(mvm, np.ceil(e / xb.parallel_rows), 0.0)
        energy["crossbar_read"] += float(np.sum(k * frac)) * xb.mvm_energy_pj
        energy["dac"] += float(np.sum(k * frac)) * xb.dac_energy_pj
        energy["adc"] += float(np.sum(k * steps)) * xb.adc_energy_pj
        vec = ops == Op.VEC
        energy["vector_unit"] += float(e[vec].sum()) * core.vector_unit.energy_pj_per_op
        cols = slot_cols[slot]
        unary = vec & np.isin(a, (VecOp.RELU, VecOp.SCALE, VecOp.OTHER))
        local = np.select(
            [mvm, unary, vec, ops == Op.COPY, ops == Op.BARRIER, ops == Op.PROG],
            [e + cols, 2 * e, 3 * e, 2 * e, 0 * e, 0 * e], e)
        energy["local_memory"] += float(local.sum()) * eb * core.local_memory.energy_pj_per_byte
        glob = (ops == Op.LOAD) | (ops == Op.STORE)
        g_bytes = float(e[glob].sum()) * eb
        global_bytes += int(round(g_bytes))
        energy["global_memory"] += g_bytes * target.chip.global_memory.energy_pj_per_byte
        for i in np.flatnonzero(ops == Op.SEND):
            nbytes = float(e[i]) * eb
            peer = int(a[i])
            net_bytes += int(round(nbytes))
            if peer // target.chip.cores != c // target.chip.cores:
                energy["interconnect"] += nbytes * target.off_chip.energy_pj_per_byte
            else:
                h = hops(target, c, peer)
                byte_hops += int(round(nbytes * h))
                energy["interconnect"] += (nbytes * h
                                           * target.chip.interconnect.energy_pj_per_byte_hop)
        prog = ops == Op.PROG
        if prog.any():
            cells = float(np.sum(k[prog])) * xb.rows * xb.cols
            writes += int(cells)
            energy["crossbar_write"] += cells * xb.device.write_energy_pj_per_cell
        start, end = timeline.start[c], timeline.end[c]
        if program.mode == "ll":
            work = (mvm | (ops == Op.VEC)) & (s.tags >= 0)
            np.maximum.at(finish, s.tags[work], end[work])
        if mvm.any():
            np.add.at(busy, a[mvm], end[mvm] - start[mvm])
            mvm_s.append(start[mvm])
            mvm_e.append(end[mvm])
            mvm_w.append(k[mvm])
        top_src = np.where(np.isin(ops, (Op.MVM, Op.VEC, Op.COPY, Op.STORE, Op.SEND)),
                           code[:, 3] + code[:, 5], 0)
        binary = vec & ~np.isin(a, (VecOp.RELU, VecOp.SCALE, VecOp.OTHER))
        top_src = np.maximum(top_src, np.where(binary, code[:, 4] + code[:, 5], 0))
        top_dst = np.where(np.isin(ops, (Op.VEC, Op.COPY, Op.WRITE, Op.LOAD, Op.RECV)),
                           code[:, 2] + code[:, 5], 0)
        top_mvm = np.where(mvm, code[:, 2] + cols, 0)
        top = max(int(top_src.max(initial=0)), int(top_dst.max(initial=0)),
                  int(top_mvm.max(initial=0)))
        peaks.append(int(top * eb))
    span_ns = max(timeline.makespan_ns - origin, 0.0)
    leak_mw = target.chips * target.chip.leakage_mw + target.cores * core.leakage_mw
    energy["leakage"] = leak_mw * span_ns  # mW x ns = pJ
    cycle_s = span_ns * 1e-9
    latency_s = cycle_s * program.pipeline_depth
    throughput = 1.0 / cycle_s if cycle_s > 0 else float("inf")
    per_slot = busy[:-1] / span_ns if span_ns > 0 else np.zeros(len(slots))
    core_busy = np.zeros(target.cores)
    for g, b in zip(slots, busy[:-1], strict=True):
        core_busy[g.core] += b * g.crossbars
    core_util = core_busy / (core.crossbars * span_ns) if span_ns > 0 else core_busy
    used = sum(g.crossbars for g in slots)
    xbar_util = float(np.dot(busy[:-1], xbars[:-1]) / (used * span_ns)) if used and span_ns \
        else 0.0
    peak = _peak_active(np.concatenate(mvm_s), np.concatenate(mvm_e),
                        np.concatenate(mvm_w)) if mvm_s else 0
    cells = sum(g.crossbars for g in slots) * xb.rows * xb.cols
    lifetime = (xb.device.endurance_writes * cells / (writes * throughput)
                if writes and throughput > 0 else None)
    total_pj = sum(energy.values())
    return Metrics(
        latency_s=latency_s, throughput_per_s=throughput, energy_j=total_pj * 1e-12,
        cycle_s=cycle_s, energy_by_component_j={k: v * 1e-12 for k, v in energy.items()},
        instructions=program.instructions,
        instructions_by_op={Op(k).name.lower(): int(v) for k, v in enumerate(by_op) if v},
        core_utilization=tuple(float(x) for x in core_util),
        crossbar_utilization=xbar_util, ag_utilization=tuple(float(x) for x in per_slot),
        global_memory_bytes=global_bytes, interconnect_bytes=net_bytes,
        interconnect_byte_hops=byte_hops, peak_local_memory_bytes=tuple(peaks),
        peak_active_crossbars=peak, crossbar_writes=writes, lifetime_s=lifetime,
        weight_programming_s=origin * 1e-9,
        layer_finish_s={name: (float(f) - origin) * 1e-9
                        for name, f in zip(program.layers, finish, strict=True) if f > -np.inf})
