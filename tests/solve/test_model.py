"""The common solver layer: one integer model, solved by CP-SAT, CBC or HiGHS."""

from __future__ import annotations

import pulp
import pytest

from pimsolve.solve.model import MIN_TIME_LIMIT_S, IntModel, solve_model, total
from pimsolve.solve.options import SolveOptions
from pimsolve.solve.result import Status


def _knapsack() -> IntModel:
    model = IntModel("knapsack")
    x = [model.var(0, 1, f"x{i}") for i in range(3)]
    model.add(total([x[0] * 3, x[1] * 4, x[2] * 5]), hi=7, name="weight")
    model.minimize(total([x[0] * -4, x[1] * -5, x[2] * -6]))
    return model


@pytest.mark.parametrize("engine", ["cpsat", "milp", "milp-highs"])
def test_a_spent_time_limit_is_the_least_limit_not_none(engine, monkeypatch) -> None:
    """A caller whose budget is spent passes a negative limit: the engine gets
    MIN_TIME_LIMIT_S (HiGHS would reject the negative one and solve without a limit). CBC,
    a separate process, may find nothing in that hundredth of a second on a loaded machine
    (the whole suite on two cores): it gets the limit, and what it returns is valid."""
    asked = []
    real_highs, real_cbc = pulp.HiGHS, pulp.PULP_CBC_CMD

    def highs(**kwargs):
        asked.append(kwargs.get("time_limit"))
        return real_highs(**kwargs)

    def cbc(**kwargs):
        asked.append(kwargs.get("timeLimit"))
        return real_cbc(**kwargs)

    monkeypatch.setattr(pulp, "HiGHS", highs)
    monkeypatch.setattr(pulp, "PULP_CBC_CMD", cbc)
    result, values = solve_model(_knapsack(), engine, SolveOptions(time_limit_s=-3.0))
    if engine == "milp":
        assert asked == [MIN_TIME_LIMIT_S]
        assert values is None or result.objective >= -9
        return
    assert result.status in (Status.OPTIMAL, Status.FEASIBLE)
    assert values is not None and result.objective >= -9
    if engine == "milp-highs":
        assert asked == [MIN_TIME_LIMIT_S]


def test_highs_solves_again_with_another_number_of_workers() -> None:
    """HiGHS sizes one thread pool per process at its first solve; a later solve asking
    another size used to come back with nothing (status unknown: a two-worker map in the same
    process made every later one-worker HiGHS test fail). Each solve now starts the pool
    afresh."""
    for workers in (2, 1, 3):
        result, values = solve_model(_knapsack(), "milp-highs", SolveOptions(workers=workers))
        assert result.status == Status.OPTIMAL and result.objective == -9, workers
