"""Run a CP-SAT model with ``SolveOptions`` and return a ``SolveResult`` plus its values.

Formulations build ``CpModel`` objects with the CP-SAT API directly (re-exported here, so only
this package imports ortools) and hand them to ``solve_cpsat``. A time limit or an interrupt
returns the best solution found with its bound (or, before the first solution, the bound
alone); ``OPTIMAL`` means CP-SAT proved it.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from google.protobuf import text_format
from ortools.sat import sat_parameters_pb2
from ortools.sat.python.cp_model import (
    FEASIBLE,
    INFEASIBLE,
    MODEL_INVALID,
    OPTIMAL,
    CpModel,
    CpSolver,
    CpSolverSolutionCallback,
    IntVar,
    LinearExpr,
)

from pimsolve.errors import InputError, InternalError
from pimsolve.solve.options import SolveOptions
from pimsolve.solve.result import SolveResult, Status, relative_gap, stop_reason

__all__ = ["CpModel", "IntVar", "LinearExpr", "CpValues", "solve_cpsat", "parameters_text",
           "merge_parameters", "ONE_WORKER_DTIME"]

ONE_WORKER_DTIME = 3.0
"""Below this deterministic time limit, one worker. Several workers interleave their search
(the only way they repeat run to run) in batches of tasks, each task a chunk of about one
deterministic second (more where an LP root does not stop: 1.8), and CP-SAT checks the
limit only between batches, so a short limit ran over by up to a batch: the vgg8-28/PUMA HT
subproblem used 4.64 of its 2.04 deterministic seconds, the resnet18-28/ISAAC LL master 4.71
of 1.5. One worker checks the limit as it searches. Above it a batch may still run over; a
batch of one task per worker (``interleave_batch_size``) would bound that, but it changes
which of several optimal solutions comes back: the vgg8-28/ISAAC HT master then returned an
option set of the same value whose simulated cycle is 15% longer (80.3 against 69.9 us).
Not where the expert parameters ask for the local search alone (``use_ls_only``, as
``packing.pack_exact``), whose workers are what finds a packing at all."""


@dataclass(frozen=True)
class CpValues:
    """Values of the solution CP-SAT holds (empty when it holds none)."""

    _values: Mapping[int, int]

    def __call__(self, var: IntVar) -> int:
        """The value of ``var`` (a variable of the solved model)."""
        return self._values[var.index]

    def __bool__(self) -> bool:
        return bool(self._values)


def _parsed(text: str) -> sat_parameters_pb2.SatParameters:
    """SatParameters from their text format; a typo is a one-line input error."""
    try:
        return text_format.Parse(text, sat_parameters_pb2.SatParameters())
    except text_format.ParseError as exc:
        raise InputError(f"solver parameters: {exc}") from None


def merge_parameters(defaults: str, params: str) -> str:
    """SatParameters text: ``params`` with each field of ``defaults`` it does not set itself
    (a stage's defaults beside the user's parameters, which win field by field)."""
    given = _parsed(params)
    merged = _parsed(defaults)
    for field, _ in given.ListFields():  # the user's value of each field they set
        merged.ClearField(field.name)
    merged.MergeFrom(given)
    return text_format.MessageToString(merged, as_one_line=True)


def parameters_text(options: SolveOptions) -> str:
    """The SatParameters a solve with ``options`` uses, in text format (for the report)."""
    params = _parsed(options.params)
    params.random_seed = options.seed
    workers = options.workers
    if (options.deterministic_time is not None and options.deterministic_time < ONE_WORKER_DTIME
            and not params.use_ls_only):
        workers = 1
    params.num_workers = workers
    if workers > 1 and not params.HasField("interleave_search"):
        params.interleave_search = True  # unless the expert parameters say otherwise
    if options.time_limit_s is not None:
        params.max_time_in_seconds = options.time_limit_s
    if options.relative_gap is not None:
        params.relative_gap_limit = options.relative_gap
    if options.deterministic_time is not None:
        params.max_deterministic_time = options.deterministic_time
    return text_format.MessageToString(params, as_one_line=True)


def solve_cpsat(model: CpModel, options: SolveOptions | None = None, *,
                hint: Sequence[tuple[IntVar, int]] | None = None,
                engine: str = "cpsat",
                on_solution: Callable[[float, float, float], None] | None = None,
                ) -> tuple[SolveResult, CpValues]:
    """Solve ``model``; return the result record and an accessor for the solution's values.

    ``hint`` (variable, value) pairs seed the search; they never change the optimum.
    ``on_solution(wall_s, objective, bound)`` is called on every improving solution.
    """
    options = options or SolveOptions()
    if hint:
        model.clear_hints()
        for var, value in hint:
            model.add_hint(var, value)
    solver = CpSolver()
    text = parameters_text(options)
    solver.parameters.parse_text_format(text)
    start = time.perf_counter()
    last: list[float] = []  # when the last improving solution came
    callback = None
    if on_solution is not None or options.stall_s is not None:
        class _Callback(CpSolverSolutionCallback):
            def on_solution_callback(self) -> None:
                last.append(time.perf_counter())
                if on_solution is not None:
                    on_solution(last[-1] - start, self.objective_value,
                                self.best_objective_bound)

        callback = _Callback()
    done = threading.Event()
    if options.stall_s is not None:
        def watch() -> None:
            while not done.wait(min(0.05, options.stall_s)):
                if last and time.perf_counter() - last[-1] > options.stall_s:
                    solver.stop_search()
                    return

        threading.Thread(target=watch, daemon=True).start()
    try:
        code = solver.solve(model, callback)
        interrupted = False
    except KeyboardInterrupt:  # pragma: no cover - interactive only
        code, interrupted = solver.status_name(), True
    finally:
        done.set()
    wall = time.perf_counter() - start
    if code == MODEL_INVALID:
        raise InternalError(f"CP-SAT rejected the model: {model.validate()}")
    status = {OPTIMAL: Status.OPTIMAL, FEASIBLE: Status.FEASIBLE,
              INFEASIBLE: Status.INFEASIBLE}.get(code, Status.UNKNOWN)
    stop = stop_reason(status, interrupted=interrupted,
                       deterministic_limit=options.deterministic_time,
                       deterministic_used=solver.deterministic_time)
    has = status in (Status.OPTIMAL, Status.FEASIBLE)
    objective = solver.objective_value if has else None
    bound = (solver.best_objective_bound if status != Status.INFEASIBLE
             and math.isfinite(solver.best_objective_bound) else None)
    values = CpValues({i: solver.value(model.get_int_var_from_proto_index(i))
                       for i in range(len(model.proto.variables))} if has else {})
    result = SolveResult(
        engine=engine, status=status, objective=objective, bound=bound,
        gap=0.0 if status == Status.OPTIMAL else relative_gap(objective, bound),
        wall_s=wall, deterministic_s=solver.deterministic_time, seed=options.seed,
        stop_reason=stop, params=text,
        stats={"branches": float(solver.num_branches), "conflicts": float(solver.num_conflicts)})
    return result, values
