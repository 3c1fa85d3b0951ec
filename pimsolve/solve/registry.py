"""Solver backends by name, their availability, and a smoke solve that proves each one works.

HiGHS appears twice: bundled inside OR-Tools (``ortools-highs``, through its linear-solver
wrapper) and as ``highspy`` behind PuLP (``pulp-highs``). ortools 9.15 bundles HiGHS 1.12.0;
``highspy`` must be that same version, or importing both in one process fails.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Backend", "BACKENDS", "available_backends", "smoke_solve"]


@dataclass(frozen=True)
class Backend:
    """One solver engine: its name, the module it needs, and what it solves."""

    name: str
    module: str
    kind: str
    """'cp' (CP-SAT) or 'milp'."""
    description: str


BACKENDS = {
    b.name: b for b in (
        Backend("cpsat", "ortools.sat.python.cp_model", "cp", "OR-Tools CP-SAT"),
        Backend("ortools-highs", "ortools.linear_solver.pywraplp", "milp",
                "HiGHS bundled in OR-Tools (linear-solver wrapper)"),
        Backend("ortools-scip", "ortools.linear_solver.pywraplp", "milp",
                "SCIP bundled in OR-Tools (linear-solver wrapper)"),
        Backend("pulp-cbc", "pulp", "milp", "CBC bundled with PuLP 3"),
        Backend("pulp-highs", "highspy", "milp", "HiGHS through PuLP and highspy"),
    )
}


def available_backends() -> list[str]:
    """Names of the backends whose Python modules are installed (imports nothing heavy)."""
    return [name for name, b in BACKENDS.items()
            if importlib.util.find_spec(b.module.split(".")[0]) is not None]


def _knapsack() -> tuple[list[int], list[int], int]:
    """Values, weights, capacity: items 0 and 2 (value 8, weight 6) are the optimum."""
    return [5, 4, 3], [4, 3, 2], 6


def _cpsat() -> float:
    from ortools.sat.python import cp_model

    values, weights, cap = _knapsack()
    model = cp_model.CpModel()
    x = [model.new_bool_var(f"x[{i}]") for i in range(len(values))]
    model.add(sum(w * v for w, v in zip(weights, x, strict=True)) <= cap)
    model.maximize(sum(c * v for c, v in zip(values, x, strict=True)))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    if solver.solve(model) != cp_model.OPTIMAL:
        raise RuntimeError("cpsat did not prove optimality")
    return solver.objective_value


def _pywraplp(solver_id: str) -> Callable[[], float]:
    def run() -> float:
        from ortools.linear_solver import pywraplp

        values, weights, cap = _knapsack()
        solver = pywraplp.Solver.CreateSolver(solver_id)
        if solver is None:
            raise RuntimeError(f"OR-Tools was built without {solver_id}")
        solver.SuppressOutput()
        x = [solver.BoolVar(f"x[{i}]") for i in range(len(values))]
        solver.Add(sum(w * v for w, v in zip(weights, x, strict=True)) <= cap)
        solver.Maximize(sum(c * v for c, v in zip(values, x, strict=True)))
        if solver.Solve() != pywraplp.Solver.OPTIMAL:
            raise RuntimeError(f"{solver_id} did not prove optimality")
        return solver.Objective().Value()

    return run


def _pulp(solver_name: str) -> Callable[[], float]:
    def run() -> float:
        import pulp

        values, weights, cap = _knapsack()
        problem = pulp.LpProblem("smoke", pulp.LpMaximize)
        x = [pulp.LpVariable(f"x{i}", cat="Binary") for i in range(len(values))]
        problem += pulp.lpSum(c * v for c, v in zip(values, x, strict=True))
        problem += pulp.lpSum(w * v for w, v in zip(weights, x, strict=True)) <= cap
        status = problem.solve(pulp.getSolver(solver_name, msg=False))
        if pulp.LpStatus[status] != "Optimal":
            raise RuntimeError(f"{solver_name} did not prove optimality")
        return pulp.value(problem.objective)

    return run


_SMOKE: dict[str, Callable[[], float]] = {
    "cpsat": _cpsat,
    "ortools-highs": _pywraplp("HIGHS"),
    "ortools-scip": _pywraplp("SCIP"),
    "pulp-cbc": _pulp("PULP_CBC_CMD"),
    "pulp-highs": _pulp("HiGHS"),
}


def smoke_solve(name: str) -> float:
    """Solve a 3-item knapsack (optimum 8) with backend ``name``; return its objective."""
    return float(_SMOKE[name]())
