"""Choose and run a placement engine: exact (CP-SAT, MILP), the GA, a baseline, or 'auto'.

``auto`` runs CP-SAT when the model is small enough (``AUTO_MAX_PRODUCTS`` products of two
variables) and falls back to the GA when it is larger, or when CP-SAT finds no feasible
placement within the time limit; ``PlacementOutcome.rule`` says which rule fired.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pimsolve.errors import InfeasibleError, InputError
from pimsolve.ir import Workload
from pimsolve.ir.mapping import Mapping
from pimsolve.solve.model import ENGINES as EXACT
from pimsolve.solve.model import Progress, export_model, solve_model
from pimsolve.solve.options import SolveOptions
from pimsolve.solve.result import SolveResult, Status, StopReason
from pimsolve.stages.placement.evaluate import LayerCounts, Prediction, decode, predict
from pimsolve.stages.placement.formulation import (
    ENERGY_UNIT_PJ,
    TICKS_PER_NS,
    build_model,
    decode_values,
    hint_values,
)
from pimsolve.stages.placement.instance import PlacementInstance

__all__ = ["engine_names", "AUTO_MAX_PRODUCTS", "PlacementOutcome", "place"]

AUTO_MAX_PRODUCTS = 40_000
"""Above this many products the exact model is too large for `auto`, which runs the GA."""


def _baselines() -> dict[str, Callable]:
    from pimsolve.stages.placement.baselines import BASELINES

    return BASELINES


def engine_names() -> tuple[str, ...]:
    """Every placement engine: exact, GA, auto, the baselines, and 'none' (reference)."""
    return (*EXACT, "ga", "auto", *_baselines(), "none")


@dataclass(frozen=True)
class PlacementOutcome:
    """The decided mapping, its solve record and what the model predicts for it."""

    mapping: Mapping
    result: SolveResult
    prediction: Prediction
    engine: str
    rule: str = ""
    """For 'auto': why this engine ran."""
    size: dict[str, int] = field(default_factory=dict)


def _scale(objective: str, value: float | None) -> float | None:
    """Model units back to ns (time), pJ (energy) or pJ x ns (EDP), as ``predict``."""
    if value is None:
        return None
    if objective in ("latency", "throughput"):
        return value / TICKS_PER_NS
    if objective == "energy":
        return value * ENERGY_UNIT_PJ
    return value * ENERGY_UNIT_PJ / TICKS_PER_NS


def place(instance: PlacementInstance, workload: Workload, *, objective: str, engine: str,
          options: SolveOptions | None = None, export: str | Path | None = None,
          progress: Callable[[Progress], None] | None = None,
          ga_progress: Callable[[int, float], None] | None = None) -> PlacementOutcome:
    """Place ``instance`` with ``engine`` for ``objective``."""
    options = options or SolveOptions()
    names = engine_names()
    if engine not in names:
        raise InputError(f"unknown engine {engine!r}; engines: {', '.join(names)}")
    order = tuple(workload.order)
    baselines = _baselines()
    if engine in baselines:
        started = time.perf_counter()
        counts = baselines[engine](instance, objective)
        return _outcome(instance, counts, engine, objective, order, _heuristic(
            engine, instance, counts, objective, options, time.perf_counter() - started))
    if engine == "ga":
        return _ga(instance, objective, options, order, ga_progress)
    pm = build_model(instance, objective)
    if export is not None:
        export_model(pm.model, export)
    size = pm.model.size
    rule = ""
    if engine == "auto":
        if size["products"] > AUTO_MAX_PRODUCTS:
            out = _ga(instance, objective, options, order, ga_progress)
            return PlacementOutcome(out.mapping, out.result, out.prediction, "ga",
                                    f"auto: the exact model has {size['products']} products "
                                    f"(> {AUTO_MAX_PRODUCTS}); ran the GA", size)
        engine, rule = "cpsat", (f"auto: the exact model has {size['products']} products "
                                 f"(<= {AUTO_MAX_PRODUCTS}); ran CP-SAT")
    seed_counts = _best_baseline(instance, objective)
    hint = hint_values(pm, seed_counts) if seed_counts is not None else None
    result, values = solve_model(pm.model, engine, options, hint=hint, progress=progress)
    if values is None:
        if result.status == Status.INFEASIBLE:
            raise InfeasibleError(f"{instance.model} cannot be placed on {instance.target}: "
                                  "the crossbars do not hold one replica of every layer "
                                  "(partition the model)")
        if seed_counts is not None:  # keep the hint: the best baseline, not proven
            kept = SolveResult(
                engine=result.engine, status=Status.FEASIBLE,
                objective=predict(instance, seed_counts).objective(objective), bound=None,
                gap=None, wall_s=result.wall_s, deterministic_s=result.deterministic_s,
                seed=result.seed, stop_reason=result.stop_reason, params=result.params,
                stats=result.stats)
            out = _outcome(instance, seed_counts, engine, objective, order, kept)
            return PlacementOutcome(out.mapping, kept, out.prediction, engine,
                                    (rule + "; " if rule else "") + f"{engine} found no "
                                    "placement within the time limit: kept its hint, the best "
                                    "baseline (no bound)", size)
        if rule:
            out = _ga(instance, objective, options, order, ga_progress)
            return PlacementOutcome(out.mapping, out.result, out.prediction, "ga",
                                    rule + "; it found no placement in the time limit, so "
                                    "the GA ran", size)
        raise InfeasibleError(f"{engine} found no placement within the time limit; raise "
                              "--time-limit or use --engine auto")
    counts = decode_values(pm, values)
    result = SolveResult(
        engine=result.engine, status=result.status,
        objective=_scale(objective, result.objective), bound=_scale(objective, result.bound),
        gap=result.gap, wall_s=result.wall_s, deterministic_s=result.deterministic_s,
        seed=result.seed, stop_reason=result.stop_reason, params=result.params,
        stats=result.stats)
    out = _outcome(instance, counts, engine, objective, order, result)
    return PlacementOutcome(out.mapping, out.result, out.prediction, engine, rule, size)


def _best_baseline(instance: PlacementInstance, objective: str) -> list[LayerCounts] | None:
    best, value = None, float("inf")
    for fn in _baselines().values():
        try:
            counts = fn(instance, objective)
        except InfeasibleError:
            continue
        v = predict(instance, counts).objective(objective)
        if v < value:
            best, value = counts, v
    return best


def _heuristic(engine: str, instance: PlacementInstance, counts: list[LayerCounts],
               objective: str, options: SolveOptions, wall: float) -> SolveResult:
    value = predict(instance, counts).objective(objective)
    return SolveResult(engine=engine, status=Status.FEASIBLE, objective=value, bound=None,
                       gap=None, wall_s=wall, deterministic_s=None, seed=options.seed,
                       stop_reason=StopReason.COMPLETED, params="", stats={})


def _ga(instance, objective, options, order, ga_progress) -> PlacementOutcome:
    from pimsolve.stages.placement.ga import GaOptions, run_ga

    ga = GaOptions(time_limit_s=options.time_limit_s, seed=options.seed)
    counts, result = run_ga(instance, objective, ga, progress=ga_progress)
    return _outcome(instance, counts, "ga", objective, order, result)


def _outcome(instance, counts, engine, objective, order, result) -> PlacementOutcome:
    mapping = decode(instance, counts, engine=engine, layer_order=order)
    return PlacementOutcome(mapping, result, predict(instance, counts), engine)
