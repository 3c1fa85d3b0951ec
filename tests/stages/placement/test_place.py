"""Choosing and running a placement engine: what the exact engines' time limit covers."""

from __future__ import annotations

import pytest

from pimsolve.solve.clock import WORK_S
from pimsolve.solve.options import SolveOptions
from pimsolve.stages.placement import place as place_module
from pimsolve.stages.placement.baselines import PASS_COST
from pimsolve.stages.placement.place import EXACT_SHARE, place
from tests.stages.placement.test_baselines import vgg8


@pytest.mark.parametrize("limit", [4.0, 0.2])
def test_the_baselines_count_against_the_time_limit(monkeypatch, limit: float) -> None:
    """The best baseline the exact engines start from is found within the time limit: on
    the work clock its packing passes are charged, and the decomposition gets what is left
    (``EXACT_SHARE`` of the limit at least)."""
    inst, ins = vgg8("isaac", "ht")
    seen = []
    solve = place_module.solve_decomposed

    def spy(instance, objective, engine, options, **kwargs):
        seen.append(options.time_limit_s)
        return solve(instance, objective, engine, options, **kwargs)

    monkeypatch.setattr(place_module, "solve_decomposed", spy)
    out = place(inst, ins.workload, objective="throughput", engine="cpsat",
                options=SolveOptions(time_limit_s=limit, clock="work"))
    spent = out.result.stats["baselines_s"]
    one_pass = PASS_COST["pack"] * WORK_S["replica"] * len(inst.layers)  # a replica a layer
    assert spent >= one_pass
    assert seen == [pytest.approx(max(limit - spent, EXACT_SHARE * limit))]
    assert (limit - spent < EXACT_SHARE * limit) == (limit < 1)  # both branches taken
