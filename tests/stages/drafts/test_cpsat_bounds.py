"""The CP-SAT draft model's redundant families: valid set bounds, a feasible cutoff, same optimum.

``set_bound`` and ``cutoff`` may only make the proof faster: every ``LB[s,o]`` must be at most
the cost of every draft that gives set ``s`` option ``o`` (checked against all drafts), the
incumbent must be a draft within the budgets whose cost is exact, and the model without the two
families must prove the same optimum. Also the ``--time-limit`` option of ``pimsolve kernel``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from drafts_helpers import tiny_hardware
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pimsolve.cli import main
from pimsolve.frontend.kernels import attn, gemv, hgemv, parse_kernel, red, va
from pimsolve.solve.cpsat import solve_cpsat
from pimsolve.solve.options import SolveOptions
from pimsolve.solve.result import Status
from pimsolve.stages.drafts import cpsat
from pimsolve.stages.drafts.baselines import default_layout
from pimsolve.stages.drafts.cost import draft_cost, evaluate
from pimsolve.stages.drafts.enumerate import all_drafts, enumerate_drafts
from pimsolve.stages.drafts.instance import build_instance
from pimsolve.target import load_target

STRIDED = """kernel strided
loops b={b}, i={i}
input x[{b}, {n}]
output y[{b}, {n}]
y[b,i*2] = x[b,i*2] + x[b,i]
"""

BASE = ("one_option", "group_budget", "core_budget")


@st.composite
def instances(draw):
    kind = draw(st.sampled_from(["gemv", "red", "va", "attn", "strided"]))
    if kind == "gemv":
        spec = gemv(draw(st.integers(1, 4)), draw(st.integers(1, 40)), draw(st.integers(1, 40)))
    elif kind == "red":
        spec = red(draw(st.integers(1, 6)), draw(st.integers(1, 64)))
    elif kind == "va":
        spec = va(draw(st.integers(1, 6)), draw(st.integers(1, 64)))
    elif kind == "attn":
        spec = attn(draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 16)),
                    draw(st.integers(1, 8)))
    else:
        b, i = draw(st.integers(1, 4)), draw(st.integers(1, 12))
        spec = parse_kernel(STRIDED.format(b=b, i=i, n=2 * i - 1))
    hw = tiny_hardware(draw(st.sampled_from(["attacc", "hbm-pim"])),
                       groups=draw(st.integers(1, 8)), cores=draw(st.integers(1, 6)),
                       simd=draw(st.sampled_from([2, 4])))
    return build_instance(spec, hw)


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances())
def test_set_bounds_never_exceed_a_draft(inst) -> None:
    """LB[s,o] <= the cost of every draft with option o for set s (all drafts costed)."""
    index = all_drafts(inst.options, inst.hw.groups, inst.hw.cores_per_group)
    inst._cache.clear()
    for strategy in inst.strategies:
        bounds = cpsat.set_bounds(inst, strategy)
        cost = evaluate(inst, index, strategy)
        for s, lb in enumerate(bounds):
            cheapest = np.full(len(lb), np.iinfo(np.int64).max)
            np.minimum.at(cheapest, index[s], cost)
            used = cheapest < np.iinfo(np.int64).max
            assert (lb[used] <= cheapest[used]).all()


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances())
def test_redundant_families_keep_the_optimum(inst) -> None:
    """The exact model alone and with set_bound + cutoff prove the same optimum, which the
    exhaustive search confirms; the incumbent is a draft within budget, costed exactly."""
    best = enumerate_drafts(inst).cost_fs
    inst._cache.clear()
    bounds = {s: cpsat.set_bounds(inst, s) for s in inst.strategies}
    inc = cpsat.incumbent(inst, bounds, default_layout(inst))
    choice = tuple(inst.options[s][o] for s, o in enumerate(inc.index))
    assert np.prod([o.groups for o in choice]) <= inst.hw.groups
    assert np.prod([o.cores for o in choice]) <= inst.hw.cores_per_group
    assert draft_cost(inst, choice, inc.strategy).total_fs == inc.cost_fs >= best
    for families in (BASE, cpsat.FAMILIES):
        model, _, _ = cpsat.build_model(inst, families=families, bounds=bounds,
                                        upper_bound=inc.cost_fs)
        result, _ = solve_cpsat(model)
        assert result.status == Status.OPTIMAL and round(result.objective) == best


def test_full_size_bounds_prune_and_cpsat_proves() -> None:
    """On a full-size GEMV the cutoff and set bounds leave few options; CP-SAT proves the
    exhaustive optimum (the benchmark repeats this on 112 cases)."""
    inst = build_instance(hgemv(4, 32, 128, 1024), load_target("hbm-pim"))
    solved = cpsat.solve(inst, hint=default_layout(inst))
    assert solved.result.status == Status.OPTIMAL
    assert round(solved.result.objective) == enumerate_drafts(inst).cost_fs
    bounds = cpsat.set_bounds(inst, inst.strategies[0])
    upper = solved.result.stats["incumbent_fs"]
    kept = [int((lb <= upper).sum()) for lb in bounds]
    assert all(k < len(opts) // 4 for k, opts in zip(kept, inst.options, strict=True))


def test_time_limit_returns_a_draft() -> None:
    """However short the limit, a draft comes back: proven, or the descent's as FEASIBLE."""
    inst = build_instance(hgemv(4, 32, 128, 1024), load_target("attacc"))
    solved = cpsat.solve(inst, SolveOptions(time_limit_s=1e-9), hint=default_layout(inst))
    assert solved.choice is not None and solved.strategy is not None
    assert solved.result.status in (Status.OPTIMAL, Status.FEASIBLE)
    assert draft_cost(inst, solved.choice, solved.strategy).total_fs \
        == round(solved.result.objective)
    assert "max_time_in_seconds: 1e-09" in solved.result.params


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    out, err = capsys.readouterr()
    return code, out, err


def test_kernel_cli_time_limit(capsys) -> None:
    code, out, err = _cli(capsys, "kernel", "red:batch=2,size=1024", "-t", "hbm-pim",
                          "--time-limit", "30", "--json")
    assert code == 0, err
    solve = json.loads(out)["solves"][0]
    assert solve["status"] == "optimal" and "max_time_in_seconds: 30" in solve["params"]
    code, out, err = _cli(capsys, "kernel", "red:batch=2,size=1024", "-t", "hbm-pim",
                          "--time-limit", "1e-9", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["solves"][0]["status"] in ("optimal", "feasible")
    assert report["metrics"]["latency_s"] <= report["baselines"]["default_layout_s"]


@pytest.mark.parametrize("value", ["0", "-1", "nan"])
def test_kernel_cli_time_limit_must_be_positive(capsys, value: str) -> None:
    code, _, err = _cli(capsys, "kernel", "red", "-t", "hbm-pim", "--time-limit", value)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "--time-limit must be positive" in lines[0]
