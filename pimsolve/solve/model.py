"""One integer model, two exact engines: CP-SAT and MILP through PuLP.

A formulation writes its model once, with integer variables, linear constraints and products of
two integer variables, and ``solve_model`` hands it to an engine:

* ``cpsat``: every constraint as is; a product is ``AddMultiplicationEquality``.
* ``milp`` (CBC bundled with PuLP) and ``milp-highs`` (HiGHS through highspy): linear
  constraints as is; a product ``p = x * y`` of a variable ``x`` in ``[0, X]`` and ``y`` in
  ``[0, Y]`` is linearized exactly by the binary expansion ``x = sum_b 2^b beta_b`` and
  ``q_b = beta_b * y`` (``q_b <= Y beta_b``, ``q_b <= y``, ``q_b >= y - Y (1 - beta_b)``),
  ``p = sum_b 2^b q_b``.

Coefficients are integers (the formulation chooses the units), so both engines solve the very
same problem and their optima agree exactly.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from pimsolve.errors import InputError, InternalError
from pimsolve.solve.clock import WORK_S
from pimsolve.solve.options import SolveOptions
from pimsolve.solve.result import SolveResult, Status, relative_gap, stop_reason

__all__ = ["Var", "Expr", "IntModel", "Progress", "ENGINES", "solve_model", "export_model",
           "check_values", "total"]

ENGINES = ("cpsat", "milp", "milp-highs")
MIN_TIME_LIMIT_S = 0.01
"""The least time limit an engine gets: a caller's spent budget (zero or negative) becomes this,
never no limit, which is what HiGHS makes of a negative one (it rejects the option and keeps
its default, infinity: a benchmark run hung 20 minutes in one decomposition subproblem)."""
"""Exact engines ``solve_model`` runs."""


@dataclass(frozen=True)
class Var:
    """An integer variable of an ``IntModel`` (index into its tables)."""

    index: int

    def __mul__(self, c: int) -> Expr:
        return Expr({self.index: c})

    __rmul__ = __mul__

    def __add__(self, other: Expr | Var | int) -> Expr:
        return Expr({self.index: 1}) + other

    __radd__ = __add__

    def __sub__(self, other: Expr | Var | int) -> Expr:
        return Expr({self.index: 1}) - other


@dataclass
class Expr:
    """A linear expression: integer coefficients by variable index, plus a constant."""

    terms: dict[int, int] = field(default_factory=dict)
    constant: int = 0

    @staticmethod
    def of(value: Expr | Var | int) -> Expr:
        if isinstance(value, Expr):
            return value
        if isinstance(value, Var):
            return Expr({value.index: 1})
        return Expr({}, int(value))

    def __add__(self, other: Expr | Var | int) -> Expr:
        o = Expr.of(other)
        terms = dict(self.terms)
        for k, c in o.terms.items():
            terms[k] = terms.get(k, 0) + c
        return Expr(terms, self.constant + o.constant)

    __radd__ = __add__

    def __sub__(self, other: Expr | Var | int) -> Expr:
        return self + Expr.of(other) * -1

    def __mul__(self, c: int) -> Expr:
        return Expr({k: v * c for k, v in self.terms.items()}, self.constant * c)

    __rmul__ = __mul__


def total(items: Iterable[Expr | Var | int]) -> Expr:
    """The sum of ``items`` (linear time, unlike ``sum``)."""
    terms: dict[int, int] = {}
    constant = 0
    for item in items:
        e = Expr.of(item)
        constant += e.constant
        for k, c in e.terms.items():
            terms[k] = terms.get(k, 0) + c
    return Expr(terms, constant)


@dataclass
class IntModel:
    """Integer variables with bounds, linear constraints ``lo <= expr <= hi``, products, and a
    linear objective to minimize."""

    name: str = "model"
    lower: list[int] = field(default_factory=list)
    upper: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    constraints: list[tuple[Expr, int | None, int | None, str]] = field(default_factory=list)
    products: list[tuple[int, int, int, str]] = field(default_factory=list)
    """(p, x, y, name): p = x * y."""
    objective: Expr = field(default_factory=Expr)
    implied: set[int] = field(default_factory=set)
    """Variables some optimum takes integral anyway (e.g. a longest path over integer
    durations): the MILP engines may solve them as continuous, which spares the branching."""

    def var(self, lo: int, hi: int, name: str, *, implied: bool = False) -> Var:
        """A new integer variable in ``[lo, hi]`` (``implied``: see ``IntModel.implied``)."""
        if lo > hi:
            raise InternalError(f"variable {name}: empty domain [{lo}, {hi}]")
        self.lower.append(int(lo))
        self.upper.append(int(hi))
        self.names.append(name)
        if implied:
            self.implied.add(len(self.lower) - 1)
        return Var(len(self.lower) - 1)

    def boolean(self, name: str) -> Var:
        return self.var(0, 1, name)

    def add(self, expr: Expr | Var, lo: int | None = None, hi: int | None = None,
            name: str = "") -> None:
        """``lo <= expr <= hi`` (either side may be None)."""
        self.constraints.append((Expr.of(expr), lo, hi, name or f"c{len(self.constraints)}"))

    def equal(self, expr: Expr | Var, value: int = 0, name: str = "") -> None:
        self.add(expr, value, value, name)

    def product(self, x: Var, y: Var, name: str) -> Var | Expr:
        """A new variable equal to ``x * y`` (both non-negative); when one factor is fixed
        by its bounds, the linear expression ``c * x`` instead (no product is added)."""
        if self.lower[x.index] < 0 or self.lower[y.index] < 0:
            raise InternalError(f"product {name}: factors must be non-negative")
        if self.lower[y.index] == self.upper[y.index]:
            return x * self.lower[y.index]
        if self.lower[x.index] == self.upper[x.index]:
            return y * self.lower[x.index]
        p = self.var(self.lower[x.index] * self.lower[y.index],
                     self.upper[x.index] * self.upper[y.index], name)
        self.products.append((p.index, x.index, y.index, name))
        return p

    def minimize(self, expr: Expr | Var) -> None:
        self.objective = Expr.of(expr)

    def bounds_of(self, expr: Expr) -> tuple[int, int]:
        """Smallest and largest value ``expr`` can take over the variable bounds."""
        lo = hi = expr.constant
        for k, c in expr.terms.items():
            a, b = c * self.lower[k], c * self.upper[k]
            lo += min(a, b)
            hi += max(a, b)
        return lo, hi

    @property
    def terms(self) -> int:
        """Terms of the constraints and the objective (what building the model costs)."""
        return sum(len(e.terms) for e, *_ in self.constraints) + len(self.objective.terms)

    @property
    def size(self) -> dict[str, int]:
        """Variables, constraints and products (for the report and `auto`'s size rule)."""
        return {"variables": len(self.lower), "constraints": len(self.constraints),
                "products": len(self.products)}


@dataclass(frozen=True)
class Progress:
    """One improvement seen while solving: for the live progress line."""

    wall_s: float
    objective: float
    bound: float

    @property
    def gap(self) -> float | None:
        return relative_gap(self.objective, self.bound)


def solve_model(model: IntModel, engine: str = "cpsat", options: SolveOptions | None = None, *,
                hint: Mapping[Var, int] | None = None,
                progress: Callable[[Progress], None] | None = None,
                ) -> tuple[SolveResult, list[int] | None]:
    """Solve ``model`` with ``engine``; the result record and all variable values (or None)."""
    options = options or SolveOptions()
    if options.clock == "work":
        if engine != "cpsat":
            raise InputError(f"{engine} counts its time limit on the wall clock only; the "
                             "work clock (deterministic runs) needs the cpsat engine")
        options = _on_work_clock(options)
    if options.time_limit_s is not None and options.time_limit_s < MIN_TIME_LIMIT_S:
        options = replace(options, time_limit_s=MIN_TIME_LIMIT_S)
    if engine == "cpsat":
        return _solve_cpsat(model, options, hint, progress)
    if engine in ("milp", "milp-highs"):
        return _solve_pulp(model, engine, options, hint)
    raise InputError(f"unknown exact engine {engine!r}; engines: {', '.join(ENGINES)}")


def _on_work_clock(options: SolveOptions) -> SolveOptions:
    """The time limit as CP-SAT's deterministic time (``clock.WORK_S``), no wall-clock stop."""
    limit = options.time_limit_s
    if limit is not None:
        limit = max(MIN_TIME_LIMIT_S, limit) / WORK_S[options.work_price]
        if options.deterministic_time is not None:
            limit = min(limit, options.deterministic_time)
    else:
        limit = options.deterministic_time
    return replace(options, time_limit_s=None, deterministic_time=limit, stall_s=None)


# ---- CP-SAT -----------------------------------------------------------------------------------
def _cp_model(model: IntModel):
    from ortools.sat.python import cp_model

    cp = cp_model.CpModel()
    cp.name = model.name
    xs = [cp.new_int_var(lo, hi, n) for lo, hi, n in
          zip(model.lower, model.upper, model.names, strict=True)]

    def lin(e: Expr):
        return sum((c * xs[k] for k, c in e.terms.items()), e.constant)

    for expr, lo, hi, _ in model.constraints:
        body = lin(expr)
        if lo is not None and lo == hi:
            cp.add(body == lo)
            continue
        if lo is not None:
            cp.add(body >= lo)
        if hi is not None:
            cp.add(body <= hi)
    for p, x, y, _ in model.products:
        cp.add_multiplication_equality(xs[p], [xs[x], xs[y]])
    cp.minimize(lin(model.objective))
    return cp, xs


def _solve_cpsat(model: IntModel, options: SolveOptions, hint, progress):
    from pimsolve.solve.cpsat import solve_cpsat

    began = time.perf_counter()
    cp, xs = _cp_model(model)
    if options.time_limit_s is not None:  # the limit covers building CP-SAT's model
        options = replace(options, time_limit_s=max(
            MIN_TIME_LIMIT_S, options.time_limit_s - (time.perf_counter() - began)))
    pairs = [(xs[var.index], int(value)) for var, value in (hint or {}).items()]
    on_solution = None if progress is None else (
        lambda wall, objective, bound: progress(Progress(wall, objective, bound)))
    result, values = solve_cpsat(cp, options, hint=pairs, on_solution=on_solution)
    result = replace(result, stats={**result.stats,
                                    **{k: float(v) for k, v in model.size.items()}})
    return result, ([values(x) for x in xs] if values else None)


# ---- MILP through PuLP ------------------------------------------------------------------------
def _lp_problem(model: IntModel):
    import pulp

    problem = pulp.LpProblem(model.name.replace(" ", "_"), pulp.LpMinimize)
    xs = [pulp.LpVariable(f"x{i}", lo, hi,
                          cat="Continuous" if i in model.implied else "Integer")
          for i, (lo, hi) in enumerate(zip(model.lower, model.upper, strict=True))]

    def lin(e: Expr):
        return pulp.LpAffineExpression([(xs[k], c) for k, c in e.terms.items()], e.constant)

    for n, (expr, lo, hi, _) in enumerate(model.constraints):
        body = lin(expr)
        if lo is not None and lo == hi:
            problem += (body == lo, f"c{n}")
            continue
        if lo is not None:
            problem += (body >= lo, f"c{n}l")
        if hi is not None:
            problem += (body <= hi, f"c{n}u")
    for n, (p, x, y, _) in enumerate(model.products):
        bits = max(1, model.upper[x].bit_length())
        ymax = model.upper[y]
        beta = [pulp.LpVariable(f"b{n}_{b}", cat="Binary") for b in range(bits)]
        q = [pulp.LpVariable(f"q{n}_{b}", 0, ymax) for b in range(bits)]
        problem += (xs[x] == pulp.lpSum(2 ** b * beta[b] for b in range(bits)), f"p{n}x")
        for b in range(bits):
            problem += (q[b] <= ymax * beta[b], f"p{n}_{b}a")
            problem += (q[b] <= xs[y], f"p{n}_{b}b")
            problem += (q[b] >= xs[y] - ymax * (1 - beta[b]), f"p{n}_{b}c")
        problem += (xs[p] == pulp.lpSum(2 ** b * q[b] for b in range(bits)), f"p{n}")
    problem += lin(model.objective)
    return problem, xs


def _solve_pulp(model: IntModel, engine: str, options: SolveOptions, hint):
    import pulp

    problem, xs = _lp_problem(model)
    warm = bool(hint)
    for var, value in (hint or {}).items():
        xs[var.index].setInitialValue(int(value))
    limit = options.time_limit_s
    if engine == "milp":
        solver = pulp.PULP_CBC_CMD(msg=False, timeLimit=limit, warmStart=warm,
                                   gapRel=options.relative_gap,
                                   options=[f"randomSeed {options.seed + 1}",
                                            f"randomCbcSeed {options.seed + 1}"],
                                   threads=options.workers)
        name = "milp-cbc"
    else:
        kwargs = {"msg": False, "time_limit": limit, "threads": options.workers,
                  "random_seed": options.seed, "gapRel": options.relative_gap}
        solver = pulp.HiGHS(**{k: v for k, v in kwargs.items() if v is not None})
        name = "milp-highs"
        import highspy

        # HiGHS keeps one thread pool per process, sized by its first solve; a later solve
        # asking another size returns nothing (status unknown), so each starts it afresh
        highspy.Highs.resetGlobalScheduler(True)
    start = time.perf_counter()
    try:
        problem.solve(solver)
    except pulp.PulpSolverError as exc:
        raise InternalError(f"{name}: {exc}") from None
    wall = time.perf_counter() - start
    raw = pulp.LpStatus[problem.status]
    sol = problem.sol_status if hasattr(problem, "sol_status") else None
    values = None
    if all(v.varValue is not None for v in xs) and raw != "Infeasible":
        values = [int(round(v.varValue)) for v in xs]
        has = check_values(model, values)
    else:
        has = False
    if raw == "Infeasible":
        status = Status.INFEASIBLE
    elif has and raw == "Optimal" and sol in (None, pulp.LpSolutionOptimal):
        status = Status.OPTIMAL
    elif has:
        status = Status.FEASIBLE
    else:
        status, values = Status.UNKNOWN, None
    objective = float(_value(model.objective, values)) if values else None
    bound = _pulp_bound(problem, solver, objective, status)
    return SolveResult(
        engine=name, status=status, objective=objective, bound=bound,
        gap=0.0 if status == Status.OPTIMAL else relative_gap(objective, bound), wall_s=wall,
        deterministic_s=None, seed=options.seed,
        stop_reason=stop_reason(status), params="",
        stats={k: float(v) for k, v in model.size.items()}), values


def _pulp_bound(problem, solver, objective: float | None, status: Status) -> float | None:
    if status == Status.OPTIMAL:
        return objective
    try:  # HiGHS exposes the dual bound; CBC through PuLP does not
        return float(solver.solverModel.getInfo().mip_dual_bound)
    except Exception:  # noqa: BLE001 - any failure means: no bound known
        return None


def _value(expr: Expr, values: Sequence[int]) -> int:
    return expr.constant + sum(c * values[k] for k, c in expr.terms.items())


def check_values(model: IntModel, values: Sequence[int]) -> bool:
    """Whether ``values`` satisfy every bound, constraint and product of ``model``."""
    if any(not lo <= v <= hi for v, lo, hi in zip(values, model.lower, model.upper,
                                                     strict=True)):
        return False
    for expr, lo, hi, _ in model.constraints:
        v = _value(expr, values)
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            return False
    return all(values[p] == values[x] * values[y] for p, x, y, _ in model.products)



def export_model(model: IntModel, path: str | Path) -> Path:
    """Write ``model`` as MPS (``.mps``) or LP (``.lp``) through PuLP, with products in their
    exact MILP linearization, or as a CP-SAT model proto in text (``.pb.txt``)."""
    path = Path(path)
    suffix = "".join(path.suffixes[-2:]) if path.name.endswith(".pb.txt") else path.suffix
    if suffix not in (".mps", ".lp", ".pb.txt"):
        raise InputError(f"{path}: --export-model writes .mps, .lp or .pb.txt, not "
                         f"'{path.suffix or path.name}'")
    if path.parent and not path.parent.is_dir():
        raise InputError(f"{path.parent}: no such directory")
    if suffix == ".pb.txt":
        cp, _ = _cp_model(model)
        path.write_text(str(cp.proto), encoding="utf-8")
        return path
    problem, _ = _lp_problem(model)
    if suffix == ".mps":
        problem.writeMPS(str(path))
    else:
        problem.writeLP(str(path))
    return path
