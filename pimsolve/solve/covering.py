"""A covering LP for column generation: min sum of the columns' values subject to each row
covered at least its demand, columns added one at a time, with the rows' duals.

``IntModel`` is integer and returns no duals; a configuration LP (``stages.placement
.home_packing``) needs both an LP and its duals after every column it adds, so it gets this
small interface to GLOP (OR-Tools' simplex), solved again warm after each column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ortools.linear_solver import pywraplp

__all__ = ["CoveringLP"]


class CoveringLP:
    """min sum_c x_c subject to sum_c a_{i,c} x_c >= demand_i, x >= 0."""

    def __init__(self, demand: Sequence[float]) -> None:
        self._solver = pywraplp.Solver.CreateSolver("GLOP")
        self._rows = [self._solver.Constraint(float(d), self._solver.infinity())
                      for d in demand]
        self._objective = self._solver.Objective()
        self._objective.SetMinimization()

    def add_column(self, counts: Mapping[int, float]) -> None:
        """A column covering row i ``counts[i]`` times, at cost 1."""
        x = self._solver.NumVar(0.0, self._solver.infinity(), "")
        self._objective.SetCoefficient(x, 1.0)
        for i, n in counts.items():
            self._rows[i].SetCoefficient(x, float(n))

    def solve(self) -> tuple[float, list[float]] | None:
        """The optimum and each row's dual (at least 0); None if the LP has none (a row no
        column covers)."""
        if self._solver.Solve() != pywraplp.Solver.OPTIMAL:
            return None
        return (self._objective.Value(),
                [max(0.0, row.dual_value()) for row in self._rows])
