"""CP-SAT model of draft selection: one option per dimension set, minimum modelled latency.

Variables ``x[s,o]`` pick option ``o`` of set ``s``; per-set factors are linear in ``x``; each
cost term multiplies its per-set factors (``add_multiplication_equality``) and takes a ceiling
(``add_division_equality``), exactly as ``cost.evaluate`` computes it, so the proven optimum
equals the exhaustive one.

Two families of redundant (valid) constraints make the proof fast:

- ``set_bound[s]``: ``latency >= sum_o LB[s,o] x[s,o]``, where ``LB[s,o]`` is a lower bound on
  the cost of every draft that gives set ``s`` option ``o``: each cost term minimized on its
  own over the other sets' options that fit in the budget ``o`` leaves (``set_bounds``, a
  dynamic program over the residual budgets ``floor(G/k)`` x ``floor(C/k)``).
- ``cutoff``: ``latency <= U``, the cost of a draft found by coordinate descent
  (``incumbent``), which is also the search hint.

Neither removes an optimal draft; CP-SAT still proves the optimum of the exact model. See
``formulations/drafts.md`` for the symbols.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pimsolve.errors import InternalError
from pimsolve.ir.kernel import IndexStrategy
from pimsolve.solve.cpsat import CpModel, CpValues, IntVar, LinearExpr, solve_cpsat
from pimsolve.solve.options import SolveOptions
from pimsolve.solve.result import SolveResult, Status
from pimsolve.stages.drafts.cost import BaseKey, Term, evaluate, factor_array, terms
from pimsolve.stages.drafts.instance import DraftInstance, SetOption

__all__ = ["DraftVars", "build_model", "solve", "CpsatDraft", "FAMILIES", "set_bounds",
           "incumbent", "Incumbent"]

FAMILIES = ("one_option", "group_budget", "core_budget", "set_bound", "cutoff")

SetBounds = dict[IndexStrategy, list[np.ndarray]]
"""Per strategy, per set: ``LB[s,o]`` for every option ``o`` of ``inst.options[s]`` (fs)."""


class DraftVars:
    """The decision variables and the factor / product variables derived from them (P3)."""

    def __init__(self, model: CpModel, inst: DraftInstance) -> None:
        self.model, self.inst = model, inst
        self.x = [[model.new_bool_var(f"x[{s},{o}]") for o in range(len(opts))]
                  for s, opts in enumerate(inst.options)]
        self._factors: dict[tuple[int, bytes], IntVar | int] = {}
        self._products: dict[tuple[int, ...], IntVar] = {}
        self.bounds: dict[int, tuple[int, int]] = {}

    def new_int(self, lo: int, hi: int, name: str) -> IntVar:
        var = self.model.new_int_var(lo, hi, name)
        self.bounds[var.index] = (lo, hi)
        return var

    def linear(self, s: int, values: Sequence[int], name: str) -> IntVar | int:
        """A variable equal to ``values[o]`` for the chosen option ``o`` of set ``s``."""
        values = [int(v) for v in values]
        if min(values) == max(values):
            return values[0]
        key = (s, str(values).encode())
        if key not in self._factors:
            var = self.new_int(min(values), max(values), name)
            self.model.add(var == LinearExpr.weighted_sum(self.x[s], values))
            self._factors[key] = var
        return self._factors[key]

    def factor(self, s: int, keys: tuple[BaseKey, ...], strategy: IndexStrategy) -> IntVar | int:
        if not keys:
            return 1
        return self.linear(s, factor_array(self.inst, s, keys, strategy).tolist(),
                           f"f[{s},{'*'.join(k[0] + ''.join(map(str, k[1:])) for k in keys)},"
                           f"{strategy}]")

    def product(self, factors: Sequence[IntVar]) -> IntVar:
        key = tuple(sorted(f.index for f in factors))
        if key not in self._products:
            lo = hi = 1
            for f in factors:
                lo, hi = lo * self.bounds[f.index][0], hi * self.bounds[f.index][1]
            var = self.new_int(lo, hi, f"prod[{','.join(f.name for f in factors)}]")
            self.model.add_multiplication_equality(var, list(factors))
            self._products[key] = var
        return self._products[key]

    def extract(self, values: CpValues) -> tuple[SetOption, ...]:
        return tuple(self.inst.options[s][next(o for o, x in enumerate(xs) if values(x))]
                     for s, xs in enumerate(self.x))


def _term_expr(dv: DraftVars, term: Term, strategy: IndexStrategy):
    const, variables = term.scale, []
    for s, keys in enumerate(term.keys):
        f = dv.factor(s, keys, strategy)
        if isinstance(f, int):
            const *= f
        else:
            variables.append(f)
    if not variables:
        return -(-const // term.div)
    prod = variables[0] if len(variables) == 1 else dv.product(variables)
    if term.div == 1:
        return const * prod
    lo, hi = dv.bounds[prod.index]
    q = dv.new_int(-(-const * lo // term.div), -(-const * hi // term.div),
                             f"ceil[{term.label}]")
    dv.model.add_division_equality(q, const * prod + term.div - 1, term.div)
    dv.model.add(term.div * q >= const * prod)  # redundant: the LP sees the ceiling
    return q


def add_budget(dv: DraftVars, attr: str, bound: int, name: str) -> None:
    """prod over sets of the chosen options' ``attr`` (groups or cores) <= ``bound``."""
    per_set = [dv.linear(s, [getattr(o, attr) for o in opts], f"{attr}[{s}]")
               for s, opts in enumerate(dv.inst.options)]
    variables = [v for v in per_set if not isinstance(v, int)]
    const = 1
    for v in per_set:
        if isinstance(v, int):
            const *= v
    if len(variables) >= 2:
        dv.model.add(const * dv.product(variables) <= bound).with_name(name)
    elif variables:
        dv.model.add(const * variables[0] <= bound).with_name(name)


# --- per-set lower bounds -------------------------------------------------------------------

_EMPTY = np.iinfo(np.int64).max


class _Residuals:
    """The budgets left after some sets took their groups and cores.

    ``floor(floor(G / a) / b) = floor(G / (a b))``, so every residual group budget is one of
    the about ``2 sqrt(G)`` values ``floor(G / k)`` (likewise for cores): a dynamic program over
    the residual budgets needs only this grid, not every pair ``(0..G, 0..C)``.
    """

    def __init__(self, groups: int, cores: int) -> None:
        self.groups, self.cores = groups, cores
        self.gv = np.array(sorted({groups // k for k in range(1, groups + 1)}), dtype=np.int64)
        self.cv = np.array(sorted({cores // k for k in range(1, cores + 1)}), dtype=np.int64)
        self.gpos = np.full(groups + 1, -1, dtype=np.int64)
        self.gpos[self.gv] = np.arange(len(self.gv))
        self.cpos = np.full(cores + 1, -1, dtype=np.int64)
        self.cpos[self.cv] = np.arange(len(self.cv))

    def start(self) -> tuple[np.ndarray, np.ndarray]:
        """No set chosen yet: the empty product 1, feasible for every budget."""
        shape = (len(self.gv), len(self.cv))
        return np.ones(shape, dtype=np.int64), np.ones(shape, dtype=bool)

    def _best_in_box(self, g: np.ndarray, c: np.ndarray, f: np.ndarray,
                     largest: bool) -> tuple[np.ndarray, np.ndarray]:
        """``B[a, b]``: the smallest (largest) ``f`` over options with ``g <= a``, ``c <= b``,
        as ``sign x f`` with ``int64 max`` for empty boxes, and the exact-cell values."""
        sign = -1 if largest else 1
        cell = np.full((self.groups + 1, self.cores + 1), _EMPTY, dtype=np.int64)
        np.minimum.at(cell, (g, c), sign * f)
        return np.minimum.accumulate(np.minimum.accumulate(cell, 0), 1), cell

    def step(self, state: tuple[np.ndarray, np.ndarray], g: np.ndarray, c: np.ndarray,
             f: np.ndarray, largest: bool) -> tuple[np.ndarray, np.ndarray]:
        """Add one set: ``H'(R) = min (or max) over its options o with g_o <= R_g,
        c_o <= R_c of f_o H(floor(R_g / g_o), floor(R_c / c_o))``; ``ok`` marks budgets with
        at least one fitting combination.

        Only options that no other option dominates (fewer or equal groups and cores, and a
        smaller, or for ``largest`` larger, factor) can attain it, since ``H`` does not get
        worse with a larger budget. From the start state it is a box minimum.
        """
        sign = -1 if largest else 1
        box, cell = self._best_in_box(g, c, f, largest)
        h, ok = state
        if ok.all() and (h == 1).all():
            best = box[np.ix_(self.gv, self.cv)]
            found = best != _EMPTY
            return np.where(found, sign * best, 0), found
        below = np.full_like(box, _EMPTY)
        below[1:, :] = box[:-1, :]
        below[:, 1:] = np.minimum(below[:, 1:], box[:, :-1])
        keep = (cell[g, c] == sign * f) & (sign * f < below[g, c])
        g, c, f = g[keep], c[keep], f[keep]
        gi = self.gpos[self.gv[None, :] // g[:, None]]
        ci = self.cpos[self.cv[None, :] // c[:, None]]
        gi0, ci0 = np.maximum(gi, 0)[:, :, None], np.maximum(ci, 0)[:, None, :]
        fits = (gi >= 0)[:, :, None] & (ci >= 0)[:, None, :] & ok[gi0, ci0]
        values = f[:, None, None] * np.where(fits, h[gi0, ci0], 0)
        if largest:
            best = np.where(fits, values, -1).max(axis=0)
        else:
            best = np.where(fits, values, _EMPTY).min(axis=0)
        new_ok = fits.any(axis=0)
        return np.where(new_ok, best, 0), new_ok

    def at(self, state: tuple[np.ndarray, np.ndarray], g: np.ndarray,
           c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``H`` and ``ok`` at the budgets left by options with groups ``g``, cores ``c``."""
        h, ok = state
        where = (self.gpos[self.groups // g], self.cpos[self.cores // c])
        return h[where], ok[where]


def set_bounds(inst: DraftInstance, strategy: IndexStrategy) -> list[np.ndarray]:
    """``LB[s][o]``: a lower bound (fs) on the cost under ``strategy`` of every draft that
    gives set ``s`` option ``o`` of ``inst.options[s]``.

    Each term ``coef x ceil(scale x prod_s f_s / div)`` is bounded on its own: with ``o``
    fixed, the product over the other sets is minimized (maximized if ``coef < 0``) over their
    options within the budgets ``floor(G / g_o)``, ``floor(C / c_o)`` by a dynamic program
    over the residual budgets; factors are non-negative, so the smallest product of the other
    sets times ``f_s(o)`` is the smallest product. A saving term (an exchange that vanishes
    when indicators are 1) is bounded together with its charge: their sum is the charge if
    an indicator of ``o`` is 0, else at least 0. The sum over terms bounds the sum. Options
    with no fitting completion get 0 (valid: no draft uses them).
    """
    hw, n = inst.hw, len(inst.sets)
    grid = _Residuals(hw.groups, hw.cores_per_group)
    g = [np.array([o.groups for o in opts], dtype=np.int64) for opts in inst.options]
    c = [np.array([o.cores for o in opts], dtype=np.int64) for opts in inst.options]
    unit_option = [bool(np.any((g[s] == 1) & (c[s] == 1))) for s in range(n)]

    def values(s: int, keys: tuple[BaseKey, ...]) -> np.ndarray:
        if not keys:
            return np.ones(len(g[s]), dtype=np.int64)
        return factor_array(inst, s, keys, strategy)

    cache: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}

    def others(rest: tuple[tuple[int, tuple[BaseKey, ...]], ...], largest: bool):
        rest = tuple(sorted(rest, key=lambda p: -len(g[p[0]])))  # the biggest set first
        key = (rest, largest)
        if key not in cache:
            state, scale = grid.start(), 1
            for s, keys in rest:
                f = values(s, keys)
                if unit_option[s] and f.min() == f.max():
                    # A constant factor: the option with one group and one core leaves the
                    # whole budget, which is best for the product of the other sets.
                    scale *= int(f[0])
                    continue
                state = grid.step(state, g[s], c[s], f, largest)
            cache[key] = (state[0] * scale, state[1])
        return cache[key]

    def bound(term: Term, s: int, largest: bool) -> tuple[np.ndarray, np.ndarray]:
        rest = tuple((k, term.keys[k]) for k in range(n) if k != s)
        h, ok = grid.at(others(rest, largest), g[s], c[s])
        count = -(-(term.scale * values(s, term.keys[s]) * h) // term.div)
        return term.coef_fs * np.where(ok, count, 0), ok

    out = [np.zeros(len(opts), dtype=np.int64) for opts in inst.options]
    feasible = [np.ones(len(opts), dtype=bool) for opts in inst.options]
    all_terms = terms(inst, strategy)
    savings = _savings(all_terms)
    charges = {j: i for i, j in savings.items()}
    for k, term in enumerate(all_terms):
        if k in savings:
            continue  # bounded with its charge
        for s in range(n):
            lb, ok = bound(term, s, term.coef_fs < 0)
            if k in charges:
                # charge - saving = X prod_s P_s (1 - prod_s I_s): exactly the charge when
                # I_s(o) = 0, and at least 0 otherwise.
                keys = tuple(key for key in all_terms[charges[k]].keys[s] if key in _INDICATORS)
                lb = np.where(values(s, keys) == 0, lb, 0)
            out[s] += lb
            feasible[s] &= ok
    return [np.where(ok, lb, 0) for lb, ok in zip(out, feasible, strict=True)]


_INDICATORS = (("g1",), ("gc1",))


def _savings(all_terms: Sequence[Term]) -> dict[int, int]:
    """Saving terms and their charges, by index: a saving ``-X prod_s P_s I_s`` (``I_s``
    the 0/1 indicator keys) pairs with a charge ``X prod_s P_s`` (same ``X``, ``div = 1``)."""
    pairs: dict[int, int] = {}
    for i, neg in enumerate(all_terms):
        if neg.coef_fs >= 0 or neg.div != 1:
            continue
        rest = [sorted((k for k in keys if k not in _INDICATORS), key=repr) for keys in neg.keys]
        for j, pos in enumerate(all_terms):
            if (j not in pairs.values() and pos.coef_fs == -neg.coef_fs and pos.div == 1
                    and pos.scale == neg.scale
                    and rest == [sorted(keys, key=repr) for keys in pos.keys]):
                pairs[i] = j
                break
    return pairs


# --- incumbent ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Incumbent:
    """A draft (option indices into ``inst.options``), its strategy and its exact cost (fs)."""

    index: tuple[int, ...]
    strategy: IndexStrategy
    cost_fs: int


def _descend(inst: DraftInstance, index: list[int], strategy: IndexStrategy) -> Incumbent:
    """Coordinate descent: re-pick one set's option at a time (all others fixed, every option
    that fits the budgets costed at once) until no set improves."""
    hw, n = inst.hw, len(inst.sets)
    g = [np.array([o.groups for o in opts], dtype=np.int64) for opts in inst.options]
    c = [np.array([o.cores for o in opts], dtype=np.int64) for opts in inst.options]
    cost = int(evaluate(inst, [np.array([i]) for i in index], strategy)[0])
    improved = True
    while improved:
        improved = False
        for s in range(n):
            pg = int(np.prod([g[k][index[k]] for k in range(n) if k != s]))
            pc = int(np.prod([c[k][index[k]] for k in range(n) if k != s]))
            cand = np.flatnonzero((g[s] * pg <= hw.groups) & (c[s] * pc <= hw.cores_per_group))
            trial = [cand if k == s else np.full(len(cand), index[k]) for k in range(n)]
            costs = evaluate(inst, trial, strategy)
            best = int(np.argmin(costs))
            if int(costs[best]) < cost:
                cost, index[s], improved = int(costs[best]), int(cand[best]), True
    return Incumbent(tuple(index), strategy, cost)


def _greedy(inst: DraftInstance, bounds: list[np.ndarray], first: int) -> list[int] | None:
    """Set by set, starting with set ``first``, the option with the smallest ``LB`` among
    those that fit what is left (None if some set has no option left that fits)."""
    left_g, left_c = inst.hw.groups, inst.hw.cores_per_group
    index = [0] * len(inst.options)
    for s in [first] + [k for k in range(len(inst.options)) if k != first]:
        opts = inst.options[s]
        fits = [o for o, opt in enumerate(opts) if opt.groups <= left_g and opt.cores <= left_c]
        if not fits:
            return None
        index[s] = min(fits, key=lambda k: (bounds[s][k], k))
        left_g, left_c = left_g // opts[index[s]].groups, left_c // opts[index[s]].cores
    return index


def incumbent(inst: DraftInstance, bounds: SetBounds,
              start: tuple[tuple[SetOption, ...], IndexStrategy] | None = None) -> Incumbent:
    """A good draft: coordinate descent from ``start`` (if its options are in
    ``inst.options``) and from the greedy choices by ``bounds`` (one per first set), for
    every strategy."""
    best: Incumbent | None = None
    for strategy in inst.strategies:
        starts = [_greedy(inst, bounds[strategy], s) for s in range(len(inst.options))]
        if start is not None and all(opt in inst.options[s] for s, opt in enumerate(start[0])):
            starts.append([inst.options[s].index(opt) for s, opt in enumerate(start[0])])
        for index in starts:
            if index is None:
                continue
            found = _descend(inst, list(index), strategy)
            if best is None or found.cost_fs < best.cost_fs:
                best = found
    if best is None:  # every set has a one-group, one-core option, so greedy always fits
        raise InternalError(f"no draft of {inst.spec.name} to start the search from")
    return best


# --- model ----------------------------------------------------------------------------------

def build_model(inst: DraftInstance, *, families: Sequence[str] = FAMILIES,
                bounds: SetBounds | None = None, upper_bound: int | None = None
                ) -> tuple[CpModel, DraftVars, IntVar | None]:
    """The CP-SAT model of ``inst``; returns the model, its variables and the strategy literal
    (true = the second strategy, 'exact'), or None with one strategy.

    ``set_bound`` uses ``bounds`` (computed by ``set_bounds`` when None); ``cutoff`` needs
    ``upper_bound``, the cost of a feasible draft (skipped when None).
    """
    model = CpModel()
    dv = DraftVars(model, inst)
    if "one_option" in families:
        for s, xs in enumerate(dv.x):
            model.add_exactly_one(xs).with_name(f"one_option[{s}]")
    if "group_budget" in families:
        add_budget(dv, "groups", inst.hw.groups, "group_budget")
    if "core_budget" in families:
        add_budget(dv, "cores", inst.hw.cores_per_group, "core_budget")
    costs = [sum(term.coef_fs * _term_expr(dv, term, st) for term in terms(inst, st))
             for st in inst.strategies]
    total = model.new_int_var(-(1 << 60), 1 << 60, "latency_fs")
    exact = None
    if len(costs) == 1:
        model.add(total == costs[0])
        when = {inst.strategies[0]: []}
    else:
        exact = model.new_bool_var("strategy_exact")
        model.add(total == costs[0]).only_enforce_if(~exact)
        model.add(total == costs[1]).only_enforce_if(exact)
        when = {inst.strategies[0]: [~exact], inst.strategies[1]: [exact]}
    if "set_bound" in families:
        if bounds is None:
            bounds = {st: set_bounds(inst, st) for st in inst.strategies}
        for st, enforce in when.items():
            for s, lb in enumerate(bounds[st]):
                if lb.max() <= 0:
                    continue
                used = np.flatnonzero(lb > 0)
                expr = LinearExpr.weighted_sum([dv.x[s][o] for o in used], lb[used].tolist())
                ct = model.add(total >= expr).with_name(f"set_bound[{s},{st}]")
                ct.only_enforce_if(enforce)
    if "cutoff" in families and upper_bound is not None:
        model.add(total <= upper_bound).with_name("cutoff")
    model.minimize(total)
    return model, dv, exact


@dataclass(frozen=True)
class CpsatDraft:
    """CP-SAT's draft and its result record."""

    choice: tuple[SetOption, ...] | None
    strategy: IndexStrategy | None
    result: SolveResult


def solve(inst: DraftInstance, options: SolveOptions | None = None, *,
          hint: tuple[tuple[SetOption, ...], IndexStrategy] | None = None) -> CpsatDraft:
    """Solve the draft model; ``hint`` (e.g. the default layout) is one start of the
    coordinate descent whose draft seeds the search and gives the cutoff.

    The result's ``wall_s`` covers everything (bounds, descent, model, search);
    ``stats['solver_s']`` is CP-SAT's own time. If a limit stops CP-SAT before it holds a
    solution, the descent's draft is returned as FEASIBLE (the limit applies to the search).
    """
    start = time.perf_counter()
    options = options or SolveOptions()
    inst._cache.clear()
    bounds = {st: set_bounds(inst, st) for st in inst.strategies}
    best = incumbent(inst, bounds, hint)
    model, dv, exact = build_model(inst, bounds=bounds, upper_bound=best.cost_fs)
    pairs = [(x, int(k == best.index[s])) for s, xs in enumerate(dv.x) for k, x in enumerate(xs)]
    if exact is not None:
        pairs.append((exact, int(best.strategy == inst.strategies[1])))
    result, values = solve_cpsat(model, options, hint=pairs)
    stats = {**result.stats, "solver_s": result.wall_s, "incumbent_fs": float(best.cost_fs)}
    wall = time.perf_counter() - start
    if not values:
        if result.status != Status.UNKNOWN:  # the cutoff is a feasible draft's cost
            raise InternalError(f"CP-SAT: {result.status.value} draft model for "
                                f"{inst.spec.name}, but a draft costs {best.cost_fs} fs")
        result = dataclasses.replace(result, status=Status.FEASIBLE,
                                     objective=float(best.cost_fs), gap=None, wall_s=wall,
                                     stats=stats)
        return CpsatDraft(tuple(inst.options[s][o] for s, o in enumerate(best.index)),
                          best.strategy, result)
    result = dataclasses.replace(result, wall_s=wall, stats=stats)
    strategy = inst.strategies[0] if exact is None or not values(exact) \
        else inst.strategies[1]
    return CpsatDraft(dv.extract(values), strategy, result)
