"""DCC Sec. 4.2 on its Fig. 5 example kernel: reference sets, dimension sets, the draft space
and the three pruning rules, reproduced exactly."""

from __future__ import annotations

import dataclasses

from drafts_helpers import tiny_hardware

from pimsolve.frontend.kernels import builtin, parse_kernel
from pimsolve.stages.drafts.decode import representative_name
from pimsolve.stages.drafts.instance import (
    SetOption,
    build_instance,
    count_drafts,
    dimension_sets,
    prune_options,
)

# Fig. 5's kernel: A[b][i] and A[b+1][i*2], B[i][k], C[b][k]; A_0 = C_0 = 12, B_1 = C_1 = 16.
FIG5 = """kernel fig5
loops b=11, i=8, k=16
output A[12, 16]
input B[8, 16]
input C[12, 16]
A[b][i] += B[i][k] * C[b][k]
A[b+1][i*2] = A[b][i]
"""


def test_fig5_reference_and_dimension_sets() -> None:
    sets = dimension_sets(parse_kernel(FIG5))
    assert [str(s) for s in sets] == [
        "(A_0={b, b+1}, C_0={b})",
        "(A_1={i, i*2}, B_0={i})",
        "(B_1={k}, C_1={k})",
    ]
    assert [s.variables for s in sets] == [("b",), ("i",), ("k",)]
    assert [len(s.members) for s in sets] == [2, 2, 2]  # all three are complex sets


def test_fig5_representative_mappings_and_first_draft() -> None:
    inst = build_instance(parse_kernel(FIG5), tiny_hardware(groups=2, cores=4, simd=16))
    first = [next(o for o in opts if (o.groups, o.cores) == (1, 1))
             for opts in inst.all_options]
    names = [{representative_name(inst, s, o) for o in inst.all_options[s]
              if (o.groups, o.cores) == (1, 1)} for s in range(3)]
    assert names == [{"A_0^b", "A_0^b+1", "C_0^b"}, {"A_1^i", "A_1^i*2", "B_0^i"},
                     {"B_1^k", "C_1^k"}]
    assert all(o.per_core == m.size for o, m in
               zip(first, [s.members[0] for s in inst.sets], strict=True))
    assert inst.strategies == ("expand", "exact")  # A_1's indices can be non-contiguous


def test_fig5_seventh_draft_data_tile() -> None:
    """[1, 4, C_0^b]: C_0 / (groups x cores) = 12 / (1 x 4) = 3 per core; b in [0, 3)."""
    inst = build_instance(parse_kernel(FIG5), tiny_hardware(groups=2, cores=4, simd=16))
    opt = next(o for o in inst.all_options[0] if (o.groups, o.cores) == (1, 4)
               and representative_name(inst, 0, o) == "C_0^b")
    assert opt.per_core == 3 and inst.counts(0, opt) == {"b": 3}


def test_fig5_rule1_equivalent_representatives() -> None:
    """C_0^b and A_0^b are the same function on dimensions of the same size: one is kept."""
    inst = build_instance(parse_kernel(FIG5), tiny_hardware(groups=2, cores=4, simd=16))
    kept = prune_options(inst, 0, inst.all_options[0], rule1=True, rule3=False)
    at_2x4 = {representative_name(inst, 0, o) for o in kept if (o.groups, o.cores) == (2, 4)}
    assert at_2x4 == {"A_0^b", "A_0^b+1"}


def test_fig5_rule2_simd_alignment() -> None:
    """16-way SIMD: 4 cores on (B_1, C_1) leave 4 elements per core, not a multiple of 16."""
    inst = build_instance(parse_kernel(FIG5), tiny_hardware(groups=2, cores=4, simd=16))
    kept = prune_options(inst, 2, inst.all_options[2], rule1=False, rule2=True, rule3=False)
    assert all(o.per_core % 16 == 0 for o in kept)
    assert not any((o.groups, o.cores) == (1, 4) for o in kept)
    # no option of set b is aligned to 16, so DCC skips the rule there
    assert prune_options(inst, 0, inst.all_options[0], rule1=False, rule2=True,
                         rule3=False) == list(inst.all_options[0])


def test_fig5_rule3_same_worst_core() -> None:
    """[2, 3, A_0^b] and [2, 4, A_0^b] both leave 2 rows of A_0 (12) per core: one remains,
    the one with fewer cores."""
    inst = build_instance(parse_kernel(FIG5), tiny_hardware(groups=2, cores=4, simd=16))
    rep = next(o for o in inst.all_options[0] if representative_name(inst, 0, o) == "A_0^b")
    three = dataclasses.replace(rep, groups=2, cores=3, per_core=2)
    four = dataclasses.replace(rep, groups=2, cores=4, per_core=2)
    assert prune_options(inst, 0, [three, four], rule1=False) == [three]


def test_counts_match_enumeration_and_gemv_sets() -> None:
    inst = build_instance(builtin("gemv:batch=2,in=8,out=8"), tiny_hardware())
    assert [s.name for s in inst.sets] == ["b", "i", "j"]
    total = sum(1 for a in inst.all_options[0] for b in inst.all_options[1]
                for c in inst.all_options[2]
                if a.groups * b.groups * c.groups <= 4 and a.cores * b.cores * c.cores <= 4)
    assert count_drafts(inst.all_options, 4, 4) == total
    assert count_drafts([[SetOption(1, 1, 0, 0, 1)]], 4, 4) == 1
