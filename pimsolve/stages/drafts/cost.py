"""The draft cost model: input rearrangement + PIM compute + output rearrangement, in fs.

Every term is ``coef x ceil(scale x prod_s f_s(option_s) / div)`` where ``f_s`` is a product of
per-set *base factors* of the option chosen for set ``s`` (its tile sizes, its iteration
counts, its core count, or a 0/1 indicator). The exhaustive engine evaluates the terms on numpy
arrays, CP-SAT multiplies the same per-set factors as integer variables, so both compute the
same integer objective. Symbols and derivations: ``formulations/drafts.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from pimsolve.ir.kernel import IndexStrategy, KernelSpec
from pimsolve.stages.drafts.instance import (
    FS_PER_S,
    DraftInstance,
    Hardware,
    SetOption,
    stream_operand,
)

__all__ = [
    "BaseKey", "Term", "Breakdown", "terms", "draft_cost", "evaluate", "factor_array",
    "flops", "tensor_bytes", "gpu_time_s", "OPS_PER_ELEMENT",
]

BaseKey = tuple[str, ...] | tuple[str, str] | tuple[str, int]
"""('tile', T): T's per-core tile in SIMD lanes along this set's dimensions;
('iters', k): statement k's per-core SIMD steps along this set's variables; ('c',): cores;
('g1',): 1 if one group else 0; ('gc1',): 1 if one group of one core else 0."""

Phase = Literal["input", "compute", "output", "fixed"]

OPS_PER_ELEMENT = {"mac": 2, "reduce": 1, "map": 1, "softmax": 5}
"""Host FLOPs per statement instance (softmax: max, subtract, exp, sum, divide)."""


@dataclass(frozen=True)
class Term:
    """``coef_fs x ceil(scale x prod over sets of the product of keys[s] / div)``."""

    label: str
    phase: Phase
    coef_fs: int
    scale: int
    div: int
    keys: tuple[tuple[BaseKey, ...], ...]
    """Per set: the base factors multiplied for that set (empty: 1)."""
    traffic: Literal["", "group_bytes", "core_cmds", "group_cmds"] = ""
    """How the term's count turns into DRAM traffic for the energy estimate."""


@dataclass(frozen=True)
class Breakdown:
    """The cost of one draft, by phase (fs) and as seconds."""

    input_fs: int
    compute_fs: int
    output_fs: int
    fixed_fs: int
    energy_j: float

    @property
    def total_fs(self) -> int:
        return self.input_fs + self.compute_fs + self.output_fs + self.fixed_fs

    @property
    def latency_s(self) -> float:
        return self.total_fs / FS_PER_S

    @property
    def rearrangement_s(self) -> float:
        return (self.input_fs + self.output_fs) / FS_PER_S

    @property
    def compute_s(self) -> float:
        return (self.compute_fs + self.fixed_fs) / FS_PER_S


def tensor_bytes(spec: KernelSpec, name: str, hw: Hardware) -> int:
    return spec.tensor(name).elements * hw.elem_bytes


def flops(spec: KernelSpec) -> int:
    """Operations of the whole kernel (what the host would execute)."""
    loops = {lp.var: lp.size for lp in spec.loops}
    total = 0
    for st in spec.statements:
        instances = 1
        for v in st.variables:
            instances *= loops[v]
        total += instances * OPS_PER_ELEMENT[st.kind]
    return total


def gpu_time_s(spec: KernelSpec, hw: Hardware) -> float:
    """The GPU-only roofline, max(FLOPs / peak, bytes / bandwidth) over the kernel's inputs,
    resident tensors and outputs (temporaries stay on chip), plus one DRAM access latency
    (tRCD + tCL + tRP), the latency the PIM model charges per phase."""
    moved = sum(tensor_bytes(spec, t.name, hw) for t in spec.tensors if t.role != "temp")
    return max(flops(spec) / hw.host_peak_flops, moved / hw.host_bytes_per_s) \
        + hw.t_phase_fs / FS_PER_S


def _const(inst: DraftInstance, tensor: str) -> int:
    """T's tile factor over dimensions indexed only by constants (in no set)."""
    in_sets = {(m.tensor, m.axis) for s in inst.sets for m in s.members}
    decl = inst.spec.tensor(tensor)
    value = 1
    for axis in range(len(decl.shape)):
        if (tensor, axis) in in_sets:
            continue
        consts = {acc.indices[axis].offset for st in inst.spec.statements
                  for acc in st.accesses if acc.tensor == tensor}
        value *= inst.lanes(len(consts)) if axis == len(decl.shape) - 1 else len(consts)
    return value


def _host_bytes(inst: DraftInstance, tensor: str, strategy: IndexStrategy) -> int:
    """Bytes the host reads to stage an input: 'exact' gathers strided last-dimension indices
    at up to one burst per element; 'expand' reads contiguous ranges."""
    size = tensor_bytes(inst.spec, tensor, inst.hw)
    strides = [acc.indices[-1].coeff for st in inst.spec.statements for acc in st.accesses
               if acc.tensor == tensor and acc.indices[-1].var is not None]
    if strategy == "exact" and strides and max(strides) > 1:
        return size * min(max(strides), inst.hw.burst_elems)
    return size


def _reduction_sets(inst: DraftInstance, tensor: str) -> tuple[int, ...]:
    """Sets of the variables that producers of ``tensor`` sum over (partial results)."""
    out = set()
    for st in inst.spec.statements:
        if st.target.tensor == tensor and st.kind in ("mac", "reduce"):
            out.update(inst.set_of(v) for v in st.variables if v not in st.target.variables)
    return tuple(sorted(out))


def terms(inst: DraftInstance, strategy: IndexStrategy) -> tuple[Term, ...]:
    """All cost terms of ``inst`` under index strategy ``strategy`` (formulations/drafts.md)."""
    hw, spec, n = inst.hw, inst.spec, len(inst.sets)
    lane_bytes = hw.simd * hw.elem_bytes
    group_cmd = hw.group_commands
    out: list[Term] = []

    def per_set(rule) -> tuple[tuple[BaseKey, ...], ...]:
        return tuple(tuple(rule(s)) for s in range(n))

    def tile_keys(tensor: str, partial_sets: Sequence[int] = ()) -> tuple:
        own = inst.sets_of_tensor(tensor)
        return per_set(lambda s: (("tile", tensor), ("c",)) if s in own
                       else (("c",),) if s in partial_sets else ())

    for t in spec.tensors:
        if t.role != "input":
            continue
        out.append(Term(f"in:{t.name}:host", "input", hw.host_fs_per_byte,
                        _host_bytes(inst, t.name, strategy), 1, per_set(lambda s: ())))
        spread = () if group_cmd else range(n)  # bank-level writes: one copy per core
        out.append(Term(f"in:{t.name}:pim", "input", hw.group_fs_per_byte,
                        lane_bytes * _const(inst, t.name), 1, tile_keys(t.name, spread),
                        "group_bytes"))
    for k, st in enumerate(spec.statements):
        if st.kind == "softmax":
            name = st.target.tensor
            out.append(Term(f"compute:{k}:softmax", "compute", hw.t_cmd_fs, _const(inst, name),
                            1, tile_keys(name), "group_cmds"))
            continue
        ops = 1 if st.kind in ("mac", "reduce") else len(st.operands) + 1
        steps = per_set(lambda s, k=k: (("iters", k),) + (() if group_cmd else (("c",),)))
        rows = per_set(lambda s, k=k: (("iters", k),))
        out.append(Term(f"compute:{k}:cmds", "compute", hw.t_cmd_fs, ops, 1, steps,
                        "core_cmds" if group_cmd else "group_cmds"))
        out.append(Term(f"compute:{k}:rows", "compute", hw.t_row_fs, ops, hw.cols_per_row,
                        rows))
        if st.kind in ("mac", "reduce"):
            name = st.target.tensor
            own = inst.sets_of_tensor(name)
            wb = per_set(lambda s, own=own, name=name: ((("tile", name),) if s in own else ())
                         + (() if group_cmd else (("c",),)))
            out.append(Term(f"compute:{k}:writeback", "compute", hw.t_cmd_fs,
                            _const(inst, name), 1, wb,
                            "core_cmds" if group_cmd else "group_cmds"))
    for t in spec.tensors:
        partial = _reduction_sets(inst, t.name)
        spread = partial if not (hw.accumulator and group_cmd) else ()
        if t.role == "output":
            out.append(Term(f"out:{t.name}:pim", "output", hw.group_fs_per_byte,
                            lane_bytes * _const(inst, t.name), 1, tile_keys(t.name, spread),
                            "group_bytes"))
            out.append(Term(f"out:{t.name}:host", "output", hw.host_fs_per_byte,
                            tensor_bytes(spec, t.name, hw), 1, per_set(lambda s: ())))
        elif t.role == "temp":
            axes = {inst.set_of(st.axis) for st in spec.statements
                    if st.kind == "softmax" and any(a.tensor == t.name for a in st.operands)}
            if not partial and not axes:
                continue
            # Merging partial sums across groups (or cores, without an accumulator), or a
            # softmax axis split across groups, needs a round trip through the host.
            merged = ("g1",) if hw.accumulator else ("gc1",)
            ind = per_set(lambda s, p=partial, a=axes, m=merged:
                          ((m,) if s in p else ()) + ((("g1",),) if s in a else ()))
            group = tile_keys(t.name, spread)
            both = tuple(g + i for g, i in zip(group, ind, strict=True))
            bytes_ = tensor_bytes(spec, t.name, hw)
            scale = 2 * lane_bytes * _const(inst, t.name)
            out += [Term(f"xchg:{t.name}:pim", "compute", hw.group_fs_per_byte, scale, 1,
                         group, "group_bytes"),
                    Term(f"xchg:{t.name}:pim-saved", "compute", -hw.group_fs_per_byte, scale,
                         1, both, "group_bytes"),
                    Term(f"xchg:{t.name}:host", "compute", hw.host_fs_per_byte, 2 * bytes_, 1,
                         per_set(lambda s: ())),
                    Term(f"xchg:{t.name}:host-saved", "compute", -hw.host_fs_per_byte,
                         2 * bytes_, 1, ind)]
    out.append(Term("fixed", "fixed", hw.t_phase_fs, 3, 1, per_set(lambda s: ())))
    return tuple(out)


def base_value(inst: DraftInstance, s: int, opt: SetOption, key: BaseKey,
               strategy: IndexStrategy) -> int:
    """The value of one base factor for option ``opt`` of set ``s``."""
    kind = key[0]
    if kind == "c":
        return opt.cores
    if kind == "g1":
        return int(opt.groups == 1)
    if kind == "gc1":
        return int(opt.groups == 1 and opt.cores == 1)
    dset = inst.sets[s]
    if kind == "tile":
        value = 1
        for m in dset.members:
            if m.tensor != key[1]:
                continue
            e = inst.extent(s, opt, m.refs, m.size, strategy)
            last = m.axis == len(inst.spec.tensor(m.tensor).shape) - 1
            value *= inst.lanes(e) if last else e
        return value
    st = inst.spec.statements[int(key[1])]
    stream = stream_operand(st, inst.spec)
    lane = stream.indices[-1]
    counts = inst.counts(s, opt)
    value = 1
    for v in st.variables:
        if v in dset.variables and v != lane.var:
            value *= counts[v]
    if lane.var in dset.variables:
        size = inst.spec.tensor(stream.tensor).shape[-1]
        value *= inst.lanes(inst.extent(s, opt, (lane,), size, strategy))
    return value


def factor_value(inst: DraftInstance, s: int, opt: SetOption, keys: tuple[BaseKey, ...],
                 strategy: IndexStrategy) -> int:
    value = 1
    for key in keys:
        value *= base_value(inst, s, opt, key, strategy)
    return value


def factor_array(inst: DraftInstance, s: int, keys: tuple[BaseKey, ...],
                 strategy: IndexStrategy) -> np.ndarray:
    """``factor_value`` for every option of ``inst.options[s]`` (cached)."""
    cache_key = (s, keys, strategy)
    if cache_key not in inst._cache:
        inst._cache[cache_key] = np.array(
            [factor_value(inst, s, o, keys, strategy) for o in inst.options[s]], dtype=np.int64)
    return inst._cache[cache_key]


def _term_count(term: Term, values: Sequence[int]) -> int:
    prod = term.scale
    for v in values:
        prod *= v
    return -(-prod // term.div)


def draft_cost(inst: DraftInstance, choice: Sequence[SetOption],
               strategy: IndexStrategy) -> Breakdown:
    """The cost of one draft (any options, also ones outside ``inst.options``)."""
    phases = {"input": 0, "compute": 0, "output": 0, "fixed": 0}
    hw = inst.hw
    groups = cores = 1
    for opt in choice:
        groups, cores = groups * opt.groups, cores * opt.cores
    moved_bytes = 0
    for term in terms(inst, strategy):
        count = _term_count(term, [factor_value(inst, s, o, term.keys[s], strategy)
                                   for s, o in enumerate(choice)])
        phases[term.phase] += term.coef_fs * count
        sign = 1 if term.coef_fs > 0 else -1
        if term.traffic == "group_bytes":
            moved_bytes += sign * count * groups
        elif term.traffic == "core_cmds":
            moved_bytes += count * hw.simd * hw.elem_bytes * groups * cores
        elif term.traffic == "group_cmds":
            moved_bytes += count * hw.simd * hw.elem_bytes * groups
    energy = (moved_bytes * 8 * hw.dram_pj_per_bit + flops(inst.spec) * hw.compute_pj_per_op) \
        * 1e-12
    return Breakdown(phases["input"], phases["compute"], phases["output"], phases["fixed"],
                     energy)


def evaluate(inst: DraftInstance, index: Sequence[np.ndarray],
             strategy: IndexStrategy) -> np.ndarray:
    """Total cost (fs) of many drafts at once: ``index[s][i]`` is draft i's option of set s."""
    total = np.zeros(len(index[0]) if index else 1, dtype=np.int64)
    for term in terms(inst, strategy):
        prod = np.full(total.shape, term.scale, dtype=np.int64)
        for s, keys in enumerate(term.keys):
            if keys:
                prod *= factor_array(inst, s, keys, strategy)[index[s]]
        total += term.coef_fs * (-(-prod // term.div))
    return total
