"""CP-SAT model of draft selection: one option per dimension set, minimum modelled latency.

Variables ``x[s,o]`` pick option ``o`` of set ``s``; per-set factors are linear in ``x``; each
cost term multiplies its per-set factors (``add_multiplication_equality``) and takes a ceiling
(``add_division_equality``), exactly as ``cost.evaluate`` computes it, so the proven optimum
equals the exhaustive one. See ``formulations/drafts.md`` for the symbols.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pimsolve.ir.kernel import IndexStrategy
from pimsolve.solve.cpsat import CpModel, CpValues, IntVar, solve_cpsat
from pimsolve.solve.options import SolveOptions
from pimsolve.solve.result import SolveResult
from pimsolve.stages.drafts.cost import BaseKey, Term, factor_array, terms
from pimsolve.stages.drafts.instance import DraftInstance, SetOption

__all__ = ["DraftVars", "build_model", "solve", "CpsatDraft", "FAMILIES"]

FAMILIES = ("one_option", "group_budget", "core_budget")


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
            self.model.add(var == sum(v * x for v, x in zip(values, self.x[s], strict=True)))
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


def build_model(inst: DraftInstance, *, families: Sequence[str] = FAMILIES
                ) -> tuple[CpModel, DraftVars, IntVar | None]:
    """The CP-SAT model of ``inst``; returns the model, its variables and the strategy literal
    (true = the second strategy, 'exact'), or None with one strategy."""
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
    if len(costs) == 1:
        model.minimize(costs[0])
        return model, dv, None
    exact = model.new_bool_var("strategy_exact")
    total = model.new_int_var(-(1 << 60), 1 << 60, "latency_fs")
    model.add(total == costs[0]).only_enforce_if(~exact)
    model.add(total == costs[1]).only_enforce_if(exact)
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
    """Solve the draft model; ``hint`` (e.g. the default layout) seeds the search."""
    options = options or SolveOptions()
    inst._cache.clear()
    model, dv, exact = build_model(inst)
    pairs = []
    if hint is not None:
        choice, strategy = hint
        for s, opt in enumerate(choice):
            if opt in inst.options[s]:
                o = inst.options[s].index(opt)
                pairs += [(x, int(k == o)) for k, x in enumerate(dv.x[s])]
        if exact is not None:
            pairs.append((exact, int(strategy == inst.strategies[1])))
    result, values = solve_cpsat(model, options, hint=pairs or None)
    if not values:
        return CpsatDraft(None, None, result)
    strategy = inst.strategies[0] if exact is None or not values(exact) \
        else inst.strategies[1]
    return CpsatDraft(dv.extract(values), strategy, result)
