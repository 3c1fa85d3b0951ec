"""Choose and run a placement engine: exact (CP-SAT, MILP), the GA, a baseline, or 'auto'.

The exact engines solve the formulation by decomposition (``decompose.py``: a master over the
options, a linear placement subproblem per option set, cuts), each model with the engine
named. ``auto`` runs CP-SAT when the placement subproblem is small enough
(``AUTO_MAX_VARIABLES``) and falls back to the GA when it is larger, or when CP-SAT finds no
placement within the time limit; ``PlacementOutcome.rule`` says which rule fired.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from pimsolve.errors import InfeasibleError, InputError
from pimsolve.ir import Workload
from pimsolve.ir.mapping import Mapping
from pimsolve.solve.model import ENGINES as EXACT
from pimsolve.solve.model import Progress, export_model
from pimsolve.solve.options import SolveOptions
from pimsolve.solve.result import SolveResult, Status, StopReason
from pimsolve.stages.placement.baselines import level_search
from pimsolve.stages.placement.decompose import solve_decomposed
from pimsolve.stages.placement.evaluate import LayerCounts, Prediction, decode, predict
from pimsolve.stages.placement.formulation import build_model, objective_scale
from pimsolve.stages.placement.instance import PlacementInstance

__all__ = ["engine_names", "engine_clock", "AUTO_MAX_VARIABLES", "PlacementOutcome", "place"]

AUTO_MAX_VARIABLES = 200_000
"""Above this many subproblem variables the exact model is too large for `auto` (GA)."""

EXPORT_MAX_WINDOWS = 2_000_000
"""LL: the full model gives each option of a layer its own windows; ``--export-model`` refuses
above this many (vgg8-28/isaac has 284,300; resnet34/isaac at 224 x 224 15.5 million)."""


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
    return None if value is None else value / objective_scale(objective)


def place(instance: PlacementInstance, workload: Workload, *, objective: str, engine: str,
          options: SolveOptions | None = None, export: str | Path | None = None,
          progress: Callable[[Progress], None] | None = None,
          ga_progress: Callable[[int, float], None] | None = None) -> PlacementOutcome:
    """Place ``instance`` with ``engine`` for ``objective``. ``progress`` and
    ``ga_progress`` see values in ``predict``'s units (ns, pJ, pJ x ns)."""
    options = options or SolveOptions()
    names = engine_names()
    if engine not in names:
        raise InputError(f"unknown engine {engine!r}; engines: {', '.join(names)}")
    options = replace(options, clock=engine_clock(engine, options.clock))
    order = tuple(workload.order)
    baselines = _baselines()
    if engine in baselines:
        started = time.perf_counter()
        counts = baselines[engine](instance, objective)
        return _outcome(instance, counts, engine, objective, order, _heuristic(
            engine, instance, counts, objective, options, time.perf_counter() - started))
    if engine == "ga":
        return _ga(instance, objective, options, order, ga_progress)
    if export is not None:
        windows = _option_windows(instance)
        if windows > EXPORT_MAX_WINDOWS:
            raise InputError(f"--export-model: the full LL model of {instance.model} would hold "
                             f"{windows:,} option windows (at most {EXPORT_MAX_WINDOWS:,}); "
                             "export a smaller model or the HT one")
        export_model(build_model(instance, objective).model, export)
    rule = ""
    size = _size(instance)
    if engine == "auto":
        if size["subproblem_variables"] > AUTO_MAX_VARIABLES:
            out = _ga(instance, objective, options, order, ga_progress)
            return PlacementOutcome(out.mapping, out.result, out.prediction, "ga",
                                    f"auto: the placement subproblem has "
                                    f"{size['subproblem_variables']} variables "
                                    f"(> {AUTO_MAX_VARIABLES}); ran the GA", size)
        engine, rule = "cpsat", (f"auto: the placement subproblem has "
                                 f"{size['subproblem_variables']} variables "
                                 f"(<= {AUTO_MAX_VARIABLES}); ran CP-SAT (decomposition)")
    start = _best_baseline(instance, objective)
    scaled = None if progress is None else lambda p: progress(
        Progress(p.wall_s, _scale(objective, p.objective), _scale(objective, p.bound)))
    result, counts = solve_decomposed(instance, objective, engine, options, start=start,
                                      progress=scaled)
    if counts is None:
        if result.status == Status.INFEASIBLE:
            raise InfeasibleError(f"{instance.model} cannot be placed on {instance.target}: "
                                  "the crossbars do not hold one replica of every layer "
                                  "(partition the model)")
        if rule:
            out = _ga(instance, objective, options, order, ga_progress)
            return PlacementOutcome(out.mapping, out.result, out.prediction, "ga",
                                    rule + "; it found no placement in the time limit, so "
                                    "the GA ran", size)
        raise InfeasibleError(f"{engine} found no placement within the time limit; raise "
                              "--time-limit or use --engine auto")
    result = replace(result, objective=_scale(objective, result.objective),
                     bound=_scale(objective, result.bound))
    out = _outcome(instance, counts, engine, objective, order, result)
    return PlacementOutcome(out.mapping, out.result, out.prediction, engine, rule, size)


def engine_clock(engine: str, clock: str) -> str:
    """The clock ``engine`` counts its time limit on: ``clock``, but the MILP engines have
    no count of their work and always use the wall clock."""
    return "wall" if engine in ("milp", "milp-highs") else clock


def _size(instance: PlacementInstance) -> dict[str, int]:
    """Master booleans and subproblem variables (y, rho, ell per layer and core; in LL one
    window time per window)."""
    options = sum(len(x.choices) * len(x.replications) for x in instance.layers)
    windows = sum(x.windows for x in instance.layers) if instance.mode == "ll" else 0
    return {"master_options": options,
            "subproblem_variables": 3 * len(instance.layers) * instance.cores + windows}


def _option_windows(instance: PlacementInstance) -> int:
    """LL: the windows the full model holds, one set per option of each layer (0 in HT)."""
    if instance.mode != "ll":
        return 0
    return sum(len(x.choices) * len(x.replications) * x.windows for x in instance.layers)


def _best_baseline(instance: PlacementInstance, objective: str) -> list[LayerCounts] | None:
    """The exact engines' first incumbent: the best baseline placement, or the best
    re-placement of a baseline's options by ``level_search`` (layers mixed on the cores)."""
    best, value = None, float("inf")
    leveled_options = set()
    for fn in _baselines().values():
        try:
            counts = fn(instance, objective)
        except InfeasibleError:
            continue
        options = tuple((c.choice, c.replication) for c in counts)
        leveled = None
        if options not in leveled_options:
            leveled_options.add(options)
            leveled = level_search(instance, *zip(*options, strict=True), objective)
        for found in (counts, leveled):
            v = predict(instance, found).objective(objective) if found else float("inf")
            if v < value:
                best, value = found, v
    return best


def _heuristic(engine: str, instance: PlacementInstance, counts: list[LayerCounts],
               objective: str, options: SolveOptions, wall: float) -> SolveResult:
    value = predict(instance, counts).objective(objective)
    return SolveResult(engine=engine, status=Status.FEASIBLE, objective=value, bound=None,
                       gap=None, wall_s=wall, deterministic_s=None, seed=options.seed,
                       stop_reason=StopReason.COMPLETED, params="", stats={})


def _ga(instance, objective, options, order, ga_progress) -> PlacementOutcome:
    from pimsolve.stages.placement.ga import GaOptions, run_ga

    ga = GaOptions(time_limit_s=options.time_limit_s, seed=options.seed, clock=options.clock)
    counts, result = run_ga(instance, objective, ga, progress=ga_progress)
    return _outcome(instance, counts, "ga", objective, order, result)


def _outcome(instance, counts, engine, objective, order, result) -> PlacementOutcome:
    mapping = decode(instance, counts, engine=engine, layer_order=order)
    return PlacementOutcome(mapping, result, predict(instance, counts), engine)
