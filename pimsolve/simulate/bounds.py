"""Physical bounds beside every simulated result (DESIGN.md "Measuring").

For the layers and windows of a program, on its target, whatever the mapping:

* compute: every window needs one read of every crossbar of one replica, ``mvm_latency_ns``
  per block of ``parallel_rows`` rows; spread perfectly over all crossbars of the target, that
  is the shortest possible cycle ("every crossbar busy every cycle");
* input / output: the model's inputs and outputs must cross global memory once, at the full
  bandwidth of every chip;
* the energy of exactly those crossbar reads and bytes.

The cycle bound is the larger of the two times; throughput is at most its inverse; the latency
of one inference is at least the cycle bound, and in HT mode at least pipeline depth times it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pimsolve.ir.program import Program
from pimsolve.target import CrossbarTarget

__all__ = ["Bounds", "bounds"]


@dataclass(frozen=True)
class Bounds:
    """Best values any mapping could reach (same keys as Metrics)."""

    latency_s: float
    throughput_per_s: float
    energy_j: float
    compute_cycle_s: float
    io_s: float


def bounds(program: Program, target: CrossbarTarget) -> Bounds:
    """The bounds for ``program``'s layers and windows on ``target``."""
    xb = target.crossbar
    crossbar_ns = 0.0
    reads = 0.0
    for g in program.array_groups:
        windows = program.windows.get(g.layer)
        if g.replica == 0 and windows is not None:
            steps = math.ceil(g.rows / xb.parallel_rows)
            crossbar_ns += windows * g.crossbars * steps * xb.mvm_latency_ns
            reads += windows * g.crossbars * (
                (xb.mvm_energy_pj + xb.dac_energy_pj) * g.rows / xb.rows + xb.adc_energy_pj * steps)
    compute_ns = crossbar_ns / target.crossbars
    io_elements = sum(n for name, (_, n) in program.tensors.items()
                      if not name.startswith("bias:"))
    io_bytes = io_elements * program.element_bits / 8
    gm = target.chip.global_memory
    io_ns = io_bytes / (gm.bandwidth_gb_per_s * target.chips)
    cycle_ns = max(compute_ns, io_ns)
    latency_ns = cycle_ns * (program.pipeline_depth if program.mode == "ht" else 1)
    energy_pj = reads + io_bytes * gm.energy_pj_per_byte
    return Bounds(latency_ns * 1e-9, 1e9 / cycle_ns if cycle_ns > 0 else float("inf"),
                  energy_pj * 1e-12, compute_ns * 1e-9, io_ns * 1e-9)
