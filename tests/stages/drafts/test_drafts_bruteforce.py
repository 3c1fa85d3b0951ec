"""CP-SAT and the exhaustive engine against brute force over the *unpruned* draft space.

Small random kernels on tiny hardware: every draft (all representative mappings, all group and
core allocations within the budgets, both index strategies) is costed; CP-SAT's proven optimum
and ``enumerate`` (which searches only what Rules 1 and 3 keep) must equal the minimum; DCC's
speculative Rule 2 may lose it but never beats it; the scalar and vectorized cost agree.
"""

from __future__ import annotations

import itertools

import numpy as np
from drafts_helpers import tiny_hardware
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pimsolve.frontend.kernels import attn, gemv, parse_kernel, red, relu, va
from pimsolve.solve.result import Status
from pimsolve.stages.drafts import cpsat
from pimsolve.stages.drafts.cost import draft_cost, evaluate
from pimsolve.stages.drafts.enumerate import enumerate_drafts
from pimsolve.stages.drafts.instance import build_instance, count_drafts

STRIDED = """kernel strided
loops b={b}, i={i}
input x[{b}, {n}]
output y[{b}, {n}]
y[b,i*2] = x[b,i*2] + x[b,i]
"""


@st.composite
def kernels(draw):
    kind = draw(st.sampled_from(["gemv", "red", "va", "relu", "attn", "strided"]))
    small = st.integers(1, 12)
    if kind == "gemv":
        return gemv(draw(st.integers(1, 3)), draw(small), draw(small))
    if kind == "red":
        return red(draw(st.integers(1, 4)), draw(st.integers(1, 24)))
    if kind in ("va", "relu"):
        return (va if kind == "va" else relu)(draw(st.integers(1, 3)), draw(st.integers(1, 24)))
    if kind == "attn":
        return attn(draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 8)),
                    draw(st.integers(1, 6)))
    b, i = draw(st.integers(1, 3)), draw(st.integers(1, 6))
    return parse_kernel(STRIDED.format(b=b, i=i, n=2 * i - 1))


def brute_force(inst):
    """(min cost, number of drafts) over the unpruned space, vectorized."""
    hw = inst.hw
    rows = [combo for combo in itertools.product(*[range(len(o)) for o in inst.all_options])
            if np.prod([inst.all_options[s][k].groups for s, k in enumerate(combo)]) <= hw.groups
            and np.prod([inst.all_options[s][k].cores for s, k in enumerate(combo)])
            <= hw.cores_per_group]
    index = [np.array([r[s] for r in rows], dtype=np.int64) for s in range(len(inst.sets))]
    saved, inst.options = inst.options, inst.all_options
    inst._cache.clear()
    try:
        costs = {st_: evaluate(inst, index, st_) for st_ in inst.strategies}
    finally:
        inst.options = saved
        inst._cache.clear()
    best = min((int(c.min()), st_, int(c.argmin())) for st_, c in costs.items())
    choice = tuple(inst.all_options[s][rows[best[2]][s]] for s in range(len(inst.sets)))
    return best[0], len(rows) * len(inst.strategies), choice, best[1]


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(spec=kernels(), groups=st.integers(1, 4), cores=st.integers(1, 4),
       simd=st.sampled_from([2, 4]), base=st.sampled_from(["attacc", "hbm-pim"]))
def test_engines_match_brute_force(spec, groups, cores, simd, base) -> None:
    inst = build_instance(spec, tiny_hardware(base, groups=groups, cores=cores, simd=simd))
    best, drafts, choice, strategy = brute_force(inst)
    assert count_drafts(inst.all_options, groups, cores, len(inst.strategies)) == drafts
    assert draft_cost(inst, choice, strategy).total_fs == best  # scalar == vectorized
    found = enumerate_drafts(inst)
    assert found.cost_fs == best and found.result.status == Status.OPTIMAL
    assert draft_cost(inst, found.choice, found.strategy).total_fs == best
    solved = cpsat.solve(inst)
    assert solved.result.status == Status.OPTIMAL
    assert round(solved.result.objective) == best
    assert draft_cost(inst, solved.choice, solved.strategy).total_fs == best
    dcc = enumerate_drafts(inst, dcc_pruning=True)
    assert dcc.cost_fs >= best and dcc.result.status == Status.FEASIBLE


def test_cpsat_hint_and_families_matter() -> None:
    """A hint never changes the optimum; dropping the core budget lets the model cheat."""
    from pimsolve.stages.drafts.baselines import default_layout

    inst = build_instance(gemv(2, 12, 12), tiny_hardware(groups=3, cores=4))
    plain = cpsat.solve(inst).result.objective
    assert cpsat.solve(inst, hint=default_layout(inst)).result.objective == plain
    model, _, _ = cpsat.build_model(inst, families=("one_option", "group_budget"))
    from pimsolve.solve.cpsat import solve_cpsat

    relaxed, _ = solve_cpsat(model)
    assert relaxed.objective < plain
