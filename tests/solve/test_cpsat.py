"""The CP-SAT runner: result records, statuses, hints, parameters, determinism."""

from __future__ import annotations

import pytest

from pimsolve.errors import InputError
from pimsolve.solve.cpsat import (
    ONE_WORKER_DTIME,
    CpModel,
    merge_parameters,
    parameters_text,
    solve_cpsat,
)
from pimsolve.solve.options import SolveOptions
from pimsolve.solve.result import SolveResult, Status, StopReason


def _knapsack() -> tuple[CpModel, list]:
    model = CpModel()
    x = [model.new_bool_var(f"x[{i}]") for i in range(3)]
    model.add(4 * x[0] + 3 * x[1] + 2 * x[2] <= 6)
    model.maximize(5 * x[0] + 4 * x[1] + 3 * x[2])
    return model, x


def test_optimal_record_and_values() -> None:
    model, x = _knapsack()
    result, values = solve_cpsat(model, SolveOptions(seed=3))
    assert result.status == Status.OPTIMAL and result.stop_reason == StopReason.PROVEN
    assert result.objective == result.bound == 8 and result.gap == 0.0
    assert [values(v) for v in x] == [1, 0, 1]
    assert "random_seed: 3" in result.params and result.seed == 3
    record = result.as_record("drafts")
    assert {"stage", "engine", "status", "objective", "bound", "gap", "wall_s"} <= set(record)
    assert record["status"] == "optimal"


def test_infeasible_has_no_values() -> None:
    model = CpModel()
    v = model.new_int_var(0, 3, "v")
    model.add(v >= 5)
    result, values = solve_cpsat(model)
    assert result.status == Status.INFEASIBLE and not values and result.objective is None


def test_hint_keeps_optimum_and_expert_params() -> None:
    model, x = _knapsack()
    result, _ = solve_cpsat(model, SolveOptions(params="linearization_level: 2"),
                            hint=[(x[0], 0), (x[1], 1), (x[2], 0)])
    assert result.objective == 8 and "linearization_level: 2" in result.params
    with pytest.raises(InputError, match="solver parameters"):
        solve_cpsat(model, SolveOptions(params="no_such_field: 1"))


def test_deterministic_limit_reports_its_reason() -> None:
    model = CpModel()
    xs = [model.new_int_var(0, 50, f"v{i}") for i in range(30)]
    model.add_all_different(xs)
    model.maximize(sum((i % 7 + 1) * v for i, v in enumerate(xs)))
    result, _ = solve_cpsat(model, SolveOptions(deterministic_time=1e-6))
    assert result.stop_reason in (StopReason.DET_TIME_LIMIT, StopReason.PROVEN)
    if result.status != Status.OPTIMAL:
        assert result.stop_reason == StopReason.DET_TIME_LIMIT


def test_heuristic_status_never_claims_optimal() -> None:
    fields = SolveResult.__dataclass_fields__
    assert {"engine", "status", "objective", "bound", "gap", "wall_s", "deterministic_s",
            "seed", "stop_reason", "params"} <= set(fields)


def test_workers_interleave_unless_the_parameters_say() -> None:
    """Two workers interleave on one thread (reproducible) by default; expert parameters
    that set ``interleave_search`` keep their choice (``packing`` runs its local search on
    parallel threads)."""
    assert "interleave_search: true" in parameters_text(SolveOptions(workers=2))
    assert "interleave_search" not in parameters_text(SolveOptions(workers=1))
    text = parameters_text(SolveOptions(workers=2, params="interleave_search: false"))
    assert "interleave_search: false" in text


def _multi_knapsack(n: int = 60, m: int = 5) -> CpModel:
    model = CpModel()
    x = [model.new_bool_var(f"x[{i}]") for i in range(n)]
    for j in range(m):
        w = [((37 + j) * i * i + (11 + 3 * j) * i) % 97 + 20 for i in range(n)]
        model.add(sum(a * v for a, v in zip(w, x, strict=True)) <= sum(w) // 3)
    model.maximize(sum(((53 * i + 7 * i * i) % 89 + 15) * v for i, v in enumerate(x)))
    return model


def test_a_short_deterministic_limit_holds() -> None:
    """Interleaved workers check the limit only between batches of about a deterministic
    second a task: on this knapsack two of them used 0.63 of a 0.3 limit, where one worker
    proves the optimum in 0.01. Below ``ONE_WORKER_DTIME`` one worker searches."""
    result, _ = solve_cpsat(_multi_knapsack(), SolveOptions(deterministic_time=0.3, workers=2))
    assert result.status == Status.OPTIMAL and result.deterministic_s <= 0.3
    assert "num_workers: 1" in result.params and "interleave_search" not in result.params
    text = parameters_text(SolveOptions(deterministic_time=ONE_WORKER_DTIME, workers=2))
    assert "num_workers: 2" in text and "interleave_search: true" in text
    text = parameters_text(SolveOptions(deterministic_time=1.0, workers=2,
                                        params="use_ls_only: true"))
    assert "num_workers: 2" in text  # the local search alone keeps its workers


def test_a_stalled_local_search_stops_before_its_limit() -> None:
    """``stall_s``: CP-SAT's local search proves nothing, so on a two-constraint knapsack of
    200 items it would run out its 30 s; it stops once 0.2 s pass without a better solution,
    and keeps the best it found."""
    model = CpModel()
    x = [model.new_bool_var(f"x[{i}]") for i in range(200)]
    weight = [(37 * i * i + 11 * i) % 97 + 20 for i in range(200)]
    model.add(sum(w * v for w, v in zip(weight, x, strict=True)) <= 2000)
    model.add(sum(((31 * i) % 17 + 3) * v for i, v in enumerate(x)) <= 400)
    model.maximize(sum(((53 * i + 7 * i * i) % 89 + 15) * v for i, v in enumerate(x)))
    result, values = solve_cpsat(model, SolveOptions(
        time_limit_s=30, stall_s=0.2, params="use_ls_only: true"))
    assert result.status == Status.FEASIBLE and result.wall_s < 10
    assert sum(w * values(v) for w, v in zip(weight, x, strict=True)) <= 2000


def test_merged_parameters_keep_the_users_field_by_field() -> None:
    """A stage's default parameters beside the user's: each field the user set keeps the
    user's value (no duplicate field, which CP-SAT's text format rejects), the others take
    the defaults; a user's typo is a one-line input error."""
    merged = merge_parameters("linearization_level:2 use_implied_bounds:false",
                              "use_implied_bounds:true max_presolve_iterations:1")
    assert merged == ("linearization_level: 2 max_presolve_iterations: 1 "
                      "use_implied_bounds: true")
    assert merge_parameters("linearization_level:2", "") == "linearization_level: 2"
    assert "linearization_level: 2" in parameters_text(SolveOptions(params=merged))
    with pytest.raises(InputError, match="solver parameters"):
        merge_parameters("linearization_level:2", "no_such_field:1")
