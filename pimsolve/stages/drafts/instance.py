"""The solver-free draft instance: hardware constants, dimension sets and per-set options.

DCC Sec. 4.2: tensor dimensions get reference sets (the mapping functions that index them);
dimensions sharing a loop variable form a (complex) dimension set; a draft gives each set
``[groups, cores per group, representative mapping]`` with the products of groups and of cores
over all sets bounded by the hardware (DCC's recursive ``avail_{i+1} = avail_i / alloc_i`` with
integer division is exactly ``prod <= bound``). Because every cost term of ``cost.py`` is a
product of per-set factors, one set's choice is an *option* and a draft is one option per set.
See ``formulations/drafts.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from pimsolve.errors import InfeasibleError
from pimsolve.ir.kernel import (
    Access,
    Affine,
    DimensionSet,
    DimRef,
    IndexStrategy,
    KernelSpec,
    Statement,
)
from pimsolve.target import DramPimTarget

__all__ = [
    "Hardware", "SetOption", "DraftInstance", "hardware", "dimension_sets", "build_instance",
    "stream_operand", "count_drafts", "FS_PER_S", "check_supported", "prune_options",
]

FS_PER_S = 10**15
"""Costs are integers in femtoseconds, so every engine computes the very same numbers."""

@dataclass(frozen=True)
class Hardware:
    """The facts of a DRAM-PIM target the draft model uses, in integer units (fs, bytes)."""

    name: str
    groups: int
    """G: PIM groups in the system (devices x groups per device)."""
    cores_per_group: int
    """C: PIM cores per group (banks per group / banks per PIM core)."""
    simd: int
    """Elements one PIM command processes per core (one DRAM column access)."""
    elem_bytes: int
    unit: str
    special_units: tuple[str, ...]
    group_commands: bool
    """Broadcast (all-bank) commands per group: tiles are padded to the worst core."""
    t_cmd_fs: int
    """One PIM column command: tCCD x tCK."""
    t_row_fs: int
    """Opening a new row in every bank: (tRCD + tRP) x tCK."""
    cols_per_row: int
    """Column commands per DRAM row: row_buffer_bytes / (simd x elem_bytes)."""
    t_phase_fs: int
    """Fixed latency of each of the three phases: (tRCD + tCL + tRP) x tCK."""
    host_fs_per_byte: int
    """Host-side rearrangement: 1e6 / host bandwidth (GB/s), rounded to integer fs."""
    group_fs_per_byte: int
    """One group's own bus: tCK x burst_length / (bytes per burst x pseudo-channels per
    group), rounded to integer fs."""
    burst_elems: int
    """Elements per burst: a strided host gather pays up to one burst per element."""
    host_peak_flops: float
    host_bytes_per_s: float
    dram_pj_per_bit: float
    compute_pj_per_op: float
    bank_groups_per_group: int
    """Bank groups in one PIM group (the default layout's 'first dimension' level)."""
    cores_per_bank_group: int
    """PIM cores per bank group (the default layout's 'second dimension' level)."""

    @property
    def accumulator(self) -> bool:
        return "accumulator" in self.special_units


def hardware(target: DramPimTarget, spec: KernelSpec, *, check: bool = True) -> Hardware:
    """The integer hardware constants for ``spec`` on ``target``.

    Raises
    ------
    InfeasibleError
        If ``check`` and the PIM units cannot run one of the statements, or compute in
        another dtype.
    """
    if check:
        check_supported(target, spec)
    return _hardware(target, spec)


def check_supported(target: DramPimTarget, spec: KernelSpec) -> None:
    """Raise InfeasibleError if ``target``'s PIM units cannot run ``spec``."""
    pim = target.pim
    if spec.dtype_bits != pim.dtype_bits:
        raise InfeasibleError(f"kernel {spec.name} is {spec.dtype} but {target.name}'s PIM "
                              f"units compute {pim.dtype_bits}-bit elements")
    for st in spec.statements:
        problem = _unsupported(st, pim.unit, pim.special_units)
        if problem:
            raise InfeasibleError(f"kernel {spec.name}: '{st.text or st.target}' {problem} on "
                                  f"{target.name} (PIM unit '{pim.unit}', special units: "
                                  f"{', '.join(pim.special_units) or 'none'}); try "
                                  f"--engine gpu or another target")


def _hardware(target: DramPimTarget, spec: KernelSpec) -> Hardware:
    org, tim, pim = target.organization, target.timing, target.pim
    banks_per = {"channel": org.pseudo_channels_per_channel * org.ranks_per_pseudo_channel
                 * org.bank_groups_per_rank * org.banks_per_bank_group,
                 "pseudo_channel": org.ranks_per_pseudo_channel * org.bank_groups_per_rank
                 * org.banks_per_bank_group,
                 "rank": org.bank_groups_per_rank * org.banks_per_bank_group,
                 "bank_group": org.banks_per_bank_group}[pim.group_level]
    groups_per_device = org.channels_per_device * org.pseudo_channels_per_channel \
        * org.ranks_per_pseudo_channel * org.bank_groups_per_rank * org.banks_per_bank_group \
        // banks_per
    # A group's bus: a channel has its pseudo-channels' buses; smaller groups share one
    # pseudo-channel bus with the other groups on it.
    pch_banks = (org.ranks_per_pseudo_channel * org.bank_groups_per_rank
                 * org.banks_per_bank_group)
    tck_fs = round(tim.tck_ns * 10**6)
    burst_fs = tck_fs * tim.burst_length
    if banks_per >= pch_banks:
        group_fs = round(burst_fs / (org.bus_bytes_per_burst * (banks_per // pch_banks)))
    else:
        group_fs = round(burst_fs * (pch_banks // banks_per) / org.bus_bytes_per_burst)
    elem_bytes = spec.dtype_bits // 8
    per_bg = max(1, org.banks_per_bank_group // pim.banks_per_pim_core)
    return Hardware(
        name=target.name, groups=org.devices * groups_per_device,
        cores_per_group=banks_per // pim.banks_per_pim_core, simd=pim.simd_width,
        elem_bytes=elem_bytes, unit=pim.unit, special_units=tuple(pim.special_units),
        group_commands=pim.group_level_commands, t_cmd_fs=tim.tccd_cycles * tck_fs,
        t_row_fs=(tim.trcd_cycles + tim.trp_cycles) * tck_fs,
        cols_per_row=max(1, org.row_buffer_bytes // (pim.simd_width * elem_bytes)),
        t_phase_fs=(tim.trcd_cycles + tim.tcl_cycles + tim.trp_cycles) * tck_fs,
        host_fs_per_byte=max(1, round(10**6 / target.host.bandwidth_gb_per_s)),
        group_fs_per_byte=max(1, group_fs),
        burst_elems=max(1, org.bus_bytes_per_burst // elem_bytes),
        host_peak_flops=target.host.peak_tflops * 1e12,
        host_bytes_per_s=target.host.bandwidth_gb_per_s * 1e9,
        dram_pj_per_bit=pim.dram_energy_pj_per_bit,
        compute_pj_per_op=pim.compute_energy_pj_per_op,
        bank_groups_per_group=max(1, (banks_per // pim.banks_per_pim_core) // per_bg),
        cores_per_bank_group=per_bg)


def _unsupported(st: Statement, unit: str, special: Sequence[str]) -> str:
    if st.kind == "softmax":
        return "" if "softmax" in special else "needs a softmax unit"
    if st.kind == "map" and unit != "fpu":
        return f"is elementwise ({st.op}), which a '{unit}' unit cannot compute"
    return ""


def dimension_sets(spec: KernelSpec) -> tuple[DimensionSet, ...]:
    """DCC Sec. 4.2 step 1: reference sets per tensor dimension, grouped by shared variables.

    Dimensions indexed only by constants belong to no set. Sets are ordered by their first
    loop; members by the first access of their tensor, then axis.
    """
    refs: dict[tuple[str, int], set[Affine]] = {}
    order: dict[str, int] = {}
    for st in spec.statements:
        for acc in st.accesses:
            order.setdefault(acc.tensor, len(order))
            for axis, idx in enumerate(acc.indices):
                refs.setdefault((acc.tensor, axis), set()).add(idx)
    parent = {lp.var: lp.var for lp in spec.loops}

    def find(v: str) -> str:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for functions in refs.values():
        used = [f.var for f in functions if f.var is not None]
        for v in used[1:]:
            parent[find(v)] = find(used[0])
    loop_pos = {lp.var: k for k, lp in enumerate(spec.loops)}
    groups: dict[str, list[DimRef]] = {}
    for (tensor, axis), functions in sorted(refs.items(), key=lambda kv: (order[kv[0][0]],
                                                                         kv[0][1])):
        used = [f.var for f in functions if f.var is not None]
        if not used:
            continue
        ref = DimRef(tensor, axis, spec.tensor(tensor).shape[axis],
                     tuple(sorted(functions, key=_ref_key)))
        groups.setdefault(find(used[0]), []).append(ref)
    sets = []
    for root, members in groups.items():
        variables = sorted((v for v in parent if find(v) == root), key=loop_pos.__getitem__)
        sets.append((loop_pos[variables[0]], DimensionSet("+".join(variables),
                                                          tuple(members), tuple(variables))))
    return tuple(s for _, s in sorted(sets, key=lambda p: p[0]))


def _ref_key(f: Affine) -> tuple[int, str, int, int]:
    return (0 if f.var is not None else 1, f.var or "", f.coeff, f.offset)


@dataclass(frozen=True)
class SetOption:
    """One part of a draft: groups, cores per group and representative mapping for one set."""

    groups: int
    cores: int
    member: int
    """Index of the representative dimension in the set's members."""
    ref: int
    """Index of the representative mapping function in that member's reference set."""
    per_core: int
    """Data-tile size along the representative dimension: ceil(size / (groups x cores))."""


def stream_operand(st: Statement, spec: KernelSpec) -> Access:
    """The operand a PIM core streams from its bank: the resident one of a mac if exactly one
    is resident, else the one with more loop variables (ties: the second); else the first."""
    if st.kind != "mac":
        return st.operands[0]
    a, b = st.operands
    resident = [op for op in (a, b) if spec.tensor(op.tensor).role == "resident"]
    if len(resident) == 1:
        return resident[0]
    return a if len(a.variables) > len(b.variables) else b


@lru_cache(maxsize=65536)
def _extent(refs: tuple[Affine, ...], counts: tuple[tuple[str, int, int], ...],
            strategy: IndexStrategy, size: int) -> int:
    """Indices one core needs along a dimension with mapping functions ``refs`` when each
    variable runs over ``count`` consecutive values of its ``loop`` range (the worst core)."""
    n = {v: c for v, c, _ in counts}
    loop = {v: lp for v, _, lp in counts}
    var_refs = [r for r in refs if r.var is not None]
    consts = {r.offset for r in refs if r.var is None}
    if len(var_refs) == 1 and not consts:
        r = var_refs[0]
        return min(size, n[r.var] if strategy == "exact" else r.coeff * (n[r.var] - 1) + 1)
    worst = 0
    for at_end in (False, True):
        index: set[int] = set(consts)
        for r in var_refs:
            start = loop[r.var] - n[r.var] if at_end else 0
            index.update(r(v) for v in range(start, start + n[r.var]))
        worst = max(worst, len(index) if strategy == "exact" else max(index) - min(index) + 1)
    return min(size, worst)


@dataclass(eq=False)
class DraftInstance:
    """Everything the engines need: kernel, hardware, sets and their exact-reduced options.

    ``options[s]`` holds set ``s``'s options after the two pruning rules that provably keep an
    optimum (DCC Rule 1, and Rule 3 keeping the fewest cores, see ``prune_options``); the full
    and DCC-pruned option lists are kept for counting drafts as DCC Table 3 does.
    """

    spec: KernelSpec
    hw: Hardware
    sets: tuple[DimensionSet, ...]
    strategies: tuple[IndexStrategy, ...]
    all_options: tuple[tuple[SetOption, ...], ...]
    options: tuple[tuple[SetOption, ...], ...] = ()
    dcc_options: tuple[tuple[SetOption, ...], ...] = ()
    _cache: dict[tuple, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def loops(self) -> dict[str, int]:
        return {lp.var: lp.size for lp in self.spec.loops}

    def set_of(self, var: str) -> int:
        return next(k for k, s in enumerate(self.sets) if var in s.variables)

    def sets_of_tensor(self, tensor: str) -> tuple[int, ...]:
        return tuple(k for k, s in enumerate(self.sets)
                     if any(m.tensor == tensor for m in s.members))

    def representative(self, s: int, opt: SetOption) -> tuple[DimRef, Affine]:
        member = self.sets[s].members[opt.member]
        return member, member.refs[opt.ref]

    def counts(self, s: int, opt: SetOption) -> dict[str, int]:
        """Worst-core iterations of each loop variable of set ``s`` (DCC's compute tile)."""
        _, rep = self.representative(s, opt)
        loops = self.loops
        out = {}
        for v in self.sets[s].variables:
            if v == rep.var:
                out[v] = min(loops[v], -(-opt.per_core // rep.coeff))
            else:
                out[v] = loops[v]
        return out

    def extent(self, s: int, opt: SetOption, refs: tuple[Affine, ...], size: int,
               strategy: IndexStrategy) -> int:
        counts = self.counts(s, opt)
        loops = self.loops
        key = tuple(sorted((r.var, counts[r.var], loops[r.var])
                           for r in refs if r.var is not None))
        return _extent(refs, tuple(dict.fromkeys(key)), strategy, size)

    def lanes(self, elements: int) -> int:
        return -(-elements // self.hw.simd)


def _options(dset: DimensionSet, hw: Hardware) -> list[SetOption]:
    out = []
    for mi, member in enumerate(dset.members):
        for ri, ref in enumerate(member.refs):
            if ref.var is None:
                continue
            for g in range(1, min(hw.groups, member.size) + 1):
                for c in range(1, min(hw.cores_per_group, member.size // g) + 1):
                    out.append(SetOption(g, c, mi, ri, -(-member.size // (g * c))))
    return out


def _signature(inst: DraftInstance, s: int, opt: SetOption) -> tuple:
    """Everything the cost of set ``s`` depends on except its core count."""
    counts = inst.counts(s, opt)
    extents = tuple(inst.extent(s, opt, m.refs, m.size, st)
                    for m in inst.sets[s].members for st in inst.strategies)
    accesses = tuple(inst.extent(s, opt, (acc.indices[-1],), 1 << 62, st)
                     for k in inst.spec.statements for acc in k.accesses
                     if acc.indices[-1].var in inst.sets[s].variables for st in inst.strategies)
    return (opt.groups, tuple(sorted(counts.items())), extents, accesses)


def prune_options(inst: DraftInstance, s: int, options: Iterable[SetOption], *,
                  rule1: bool = True, rule2: bool = False, rule3: bool = True
                  ) -> list[SetOption]:
    """DCC's pruning rules applied to one set's options.

    Rule 1 drops an option whose representative mapping is the same function on a dimension
    of the same size as an earlier one with the same groups and cores (identical data tiles).
    Rule 2 (speculative; DCC skips it when no option satisfies it) drops options of a set that
    holds a SIMD lane dimension whose per-core size is not a multiple of the SIMD width.
    Rule 3 keeps, among options with the same groups and the same worst-core tile sizes, the one
    with the fewest cores: every cost term is non-decreasing in the core count when tiles are
    equal, so this (unlike DCC's arbitrary choice) never loses the optimum.
    """
    kept = list(options)
    if rule1:
        seen, out = set(), []
        for opt in kept:
            member, rep = inst.representative(s, opt)
            key = (opt.groups, opt.cores, rep, member.size)
            if key not in seen:
                seen.add(key)
                out.append(opt)
        kept = out
    if rule2:
        lane_vars = {stream_operand(st, inst.spec).indices[-1].var
                     for st in inst.spec.statements}
        if lane_vars & set(inst.sets[s].variables):
            aligned = [o for o in kept if o.per_core % inst.hw.simd == 0]
            kept = aligned or kept
    if rule3:
        best: dict[tuple, SetOption] = {}
        for opt in kept:
            key = _signature(inst, s, opt)
            if key not in best or opt.cores < best[key].cores:
                best[key] = opt
        keep = {id(o) for o in best.values()}
        kept = [o for o in kept if id(o) in keep]
    return kept


def build_instance(spec: KernelSpec, target: DramPimTarget | Hardware) -> DraftInstance:
    """The draft instance of ``spec`` on ``target`` (see ``DraftInstance``)."""
    hw = target if isinstance(target, Hardware) else hardware(target, spec)
    sets = dimension_sets(spec)
    strided = any(len(m.refs) > 1 or any(r.coeff > 1 for r in m.refs)
                  for s in sets for m in s.members)
    strategies: tuple[IndexStrategy, ...] = ("expand", "exact") if strided else ("exact",)
    inst = DraftInstance(spec, hw, sets, strategies,
                         tuple(tuple(_options(s, hw)) for s in sets))
    inst.options = tuple(tuple(prune_options(inst, k, opts))
                         for k, opts in enumerate(inst.all_options))
    inst.dcc_options = tuple(tuple(prune_options(inst, k, opts, rule2=True))
                             for k, opts in enumerate(inst.all_options))
    if count_drafts(inst.dcc_options, hw.groups, hw.cores_per_group) == 0:
        inst.dcc_options = inst.options  # no draft is aligned: DCC skips Rule 2
    return inst


def count_drafts(options: Sequence[Sequence[SetOption]], groups: int, cores: int,
                 strategies: int = 1) -> int:
    """Drafts = one option per set with prod(groups) <= G and prod(cores) <= C, times the
    index strategies; counted by dynamic programming over the products, not enumerated."""
    table = np.zeros((groups + 1, cores + 1), dtype=object)
    table[1, 1] = 1
    for opts in options:
        nxt = np.zeros_like(table)
        weight: dict[tuple[int, int], int] = {}
        for o in opts:
            weight[(o.groups, o.cores)] = weight.get((o.groups, o.cores), 0) + 1
        for (g, c), w in weight.items():
            nxt[g::g, c::c] += w * table[1: groups // g + 1, 1: cores // c + 1]
        table = nxt
    return int(table.sum()) * strategies


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)

