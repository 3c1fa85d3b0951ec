"""The work clock counts only what is charged to it, so a run's shares and stops repeat on
any machine; the wall clock ignores charges; CP-SAT gets its limit as deterministic time."""

from __future__ import annotations

import math
import time

import pytest

from pimsolve.errors import InputError
from pimsolve.solve.clock import WORK_S, Clock
from pimsolve.solve.model import IntModel, solve_model, total
from pimsolve.solve.options import SolveOptions
from pimsolve.solve.result import SolveResult, Status, StopReason


def _record(deterministic_s: float) -> SolveResult:
    return SolveResult(engine="cpsat", status=Status.FEASIBLE, objective=1.0, bound=0.0,
                       gap=1.0, wall_s=0.5, deterministic_s=deterministic_s, seed=0,
                       stop_reason=StopReason.DET_TIME_LIMIT)


def test_work_clock_counts_only_charges() -> None:
    clock = Clock.named("work", 2.0)
    time.sleep(0.01)
    assert clock.now() == 0.0 and clock.left() == 2.0
    clock.charge(1_000_000, "cell")
    assert clock.now() == pytest.approx(1_000_000 * WORK_S["cell"])
    clock.charge_solve(_record(0.1234567891))  # rounded to 1e-6: summation order hides
    assert clock.now() == pytest.approx(1e6 * WORK_S["cell"] + 0.123457 * WORK_S["dtime"])
    assert clock.left() == pytest.approx(2.0 - clock.now())


def test_wall_clock_ignores_charges() -> None:
    clock = Clock.named("wall", None)
    clock.charge(10**12, "cell")
    clock.charge_solve(_record(100.0))
    assert clock.limit == math.inf and clock.now() < 1.0


def test_unknown_clock_is_an_error() -> None:
    with pytest.raises(ValueError, match="wall, work"):
        Clock.named("sundial", 1.0)


def _knapsack() -> IntModel:
    model = IntModel("knapsack")
    xs = [model.var(0, 3, f"x{i}") for i in range(6)]
    model.add(total(x * (i + 2) for i, x in enumerate(xs)), hi=17)
    model.minimize(total(x * -(i * 3 + 1) for i, x in enumerate(xs)))
    return model


def test_work_clock_gives_cpsat_deterministic_time_only() -> None:
    result, values = solve_model(_knapsack(), "cpsat",
                                 SolveOptions(time_limit_s=5.0, clock="work", stall_s=1.0))
    assert values is not None and result.status == Status.OPTIMAL
    assert f"max_deterministic_time: {5.0 / WORK_S['dtime']:g}" in result.params
    assert "max_time_in_seconds" not in result.params


@pytest.mark.parametrize("engine", ["milp", "milp-highs"])
def test_milp_engines_refuse_the_work_clock(engine: str) -> None:
    with pytest.raises(InputError, match="wall clock only"):
        solve_model(_knapsack(), engine, SolveOptions(time_limit_s=5.0, clock="work"))
