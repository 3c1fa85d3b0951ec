"""Shared pieces of the simulator tests: a tiny target with round numbers and a Program builder.

The tiny target is chosen so timing and energy can be derived by hand: activations are 8 bits
(one byte per element) and every bandwidth is 1 GB/s, i.e. exactly 1 byte per ns, so moving
``e`` elements takes ``e`` ns. Defaults (``tiny_target()``):

* 1 chip of 2 cores, bus, ``communication`` sync, cores ``in_order``;
* interconnect 1 byte/ns, 10 ns per hop, 3 pJ per byte per hop;
* global memory 1 byte/ns, 100 ns latency, 2 pJ per byte;
* local memory 1 KiB (1024 elements), 1 byte/ns, 0.5 pJ per byte;
* vector unit 4 lanes, 2 ns per lanes-wide op, 1 pJ per element;
* crossbars 4 x 4, all 4 rows read at once (XBM), 50 ns per MVM, issue interval 0; per full
  MVM and crossbar: array read 10 pJ, ADC 1 pJ, DAC 1 pJ; a row write takes 5 ns, a cell write
  0.25 pJ;
* leakage 0 (chip and core), unless asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from pimsolve.ir.program import ArrayGroupSlot, CoreStream, Program
from pimsolve.target import CrossbarTarget

Row = tuple[int, int, int, int, int, int, tuple[int, ...]]
"""One instruction for ``make_program``: ``(op, a, b, c, d, e, deps)``."""


def make_target(*, execution: str = "in_order", communication: str = "sync",
                topology: str = "bus", cores: int = 2, mesh_columns: int | None = None,
                parallel_rows: int = 4, mvm_issue_interval_ns: float = 0.0,
                core_leakage_mw: float = 0.0, chip_leakage_mw: float = 0.0) -> CrossbarTarget:
    """The tiny round-number target described in the module docstring."""
    return CrossbarTarget.model_validate({
        "schema_version": 1,
        "kind": "crossbar",
        "name": "tiny",
        "description": "a hand-checkable toy target",
        "source": "tests/simulate/conftest.py",
        "chips": 1,
        "computing_mode": "XBM" if parallel_rows == 4 else "WLM",
        "numerics": {"weight_bits": 8, "activation_bits": 8, "signed_weights": "native"},
        "chip": {
            "cores": cores,
            "leakage_mw": chip_leakage_mw,
            "global_memory": {"size_mib": 1, "bandwidth_gb_per_s": 1.0, "latency_ns": 100.0,
                              "energy_pj_per_byte": 2.0},
            "interconnect": {"topology": topology, "bandwidth_gb_per_s": 1.0,
                             "hop_latency_ns": 10.0, "energy_pj_per_byte_hop": 3.0,
                             "communication": communication, "mesh_columns": mesh_columns},
        },
        "core": {
            "crossbars": 4,
            "mvm_issue_interval_ns": mvm_issue_interval_ns,
            "execution": execution,
            "leakage_mw": core_leakage_mw,
            "local_memory": {"size_kib": 1, "bandwidth_gb_per_s": 1.0,
                             "energy_pj_per_byte": 0.5},
            "vector_unit": {"lanes": 4, "op_latency_ns": 2.0, "energy_pj_per_op": 1.0},
        },
        "crossbar": {
            "rows": 4, "cols": 4, "cell_bits": 8, "dac_bits": 1, "adc_bits": 8,
            "parallel_rows": parallel_rows, "mvm_latency_ns": 50.0, "mvm_energy_pj": 10.0,
            "adc_energy_pj": 1.0, "dac_energy_pj": 1.0,
            "device": {"type": "reram", "read_latency_ns": 1.0, "write_latency_ns": 5.0,
                       "write_energy_pj_per_cell": 0.25, "endurance_writes": 1e6},
        },
    })


def slot(core: int, *, layer: str = "L", ag: int = 0, rows: int = 4, cols: int = 4,
         crossbars: int = 1, row_start: int = 0, preloaded: bool = True) -> ArrayGroupSlot:
    """An array group of ``layer`` (replica 0, matrix 0) on ``core``."""
    return ArrayGroupSlot(layer, 0, ag, core, 0, row_start, rows, cols, crossbars, preloaded)


def make_program(cores: Sequence[Sequence[Row]], array_groups: Sequence[ArrayGroupSlot] = (),
                 *, windows: dict[str, int] | None = None, global_elements: int = 1024,
                 constants: tuple[float, ...] = (0.0,)) -> Program:
    """A Program from per-core lists of ``(op, a, b, c, d, e, deps)``; 8-bit elements."""
    streams = []
    for rows in cores:
        code = [(int(op), a, b, c, d, e) for op, a, b, c, d, e, _ in rows]
        deps = [tuple(dep) for *_, dep in rows]
        streams.append(CoreStream.build(code, deps))
    return Program(model="micro", target="tiny", mode="ll", element_bits=8,
                   cores=tuple(streams), array_groups=tuple(array_groups),
                   constants=constants, global_elements=global_elements,
                   windows=dict(windows or {}))


@pytest.fixture
def tiny_target() -> Callable[..., CrossbarTarget]:
    """``make_target`` as a fixture: call it with the variant wanted."""
    return make_target


@pytest.fixture
def program_of() -> Callable[..., Program]:
    """``make_program`` as a fixture."""
    return make_program


__all__ = ["Row", "make_target", "make_program", "slot"]
