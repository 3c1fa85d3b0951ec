"""Pick a kernel's draft with one engine, and cost the baselines beside it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pimsolve.errors import InputError, InternalError
from pimsolve.ir.kernel import DimensionSet, Draft, KernelSpec
from pimsolve.solve.options import SolveOptions
from pimsolve.solve.result import SolveResult
from pimsolve.stages.drafts import cpsat
from pimsolve.stages.drafts.baselines import default_layout
from pimsolve.stages.drafts.cost import Breakdown, draft_cost, gpu_time_s
from pimsolve.stages.drafts.decode import decode
from pimsolve.stages.drafts.enumerate import DraftCounts, draft_counts, enumerate_drafts
from pimsolve.stages.drafts.instance import Hardware, build_instance, hardware
from pimsolve.target import DramPimTarget

__all__ = ["ENGINES", "Engine", "KernelPlan", "plan_kernel"]

Engine = Literal["cpsat", "enumerate", "default", "gpu"]
ENGINES: tuple[Engine, ...] = ("cpsat", "enumerate", "default", "gpu")


@dataclass(frozen=True)
class KernelPlan:
    """A kernel on a DRAM-PIM target: the chosen draft, its cost, and the baselines."""

    spec: KernelSpec
    target: str
    engine: Engine
    hw: Hardware
    sets: tuple[DimensionSet, ...]
    draft: Draft | None
    """None for the GPU engine."""
    breakdown: Breakdown | None
    latency_s: float
    gpu_s: float
    default_s: float | None
    """The backend's default layout (None for the GPU engine)."""
    default_draft: Draft | None
    counts: DraftCounts | None
    solves: tuple[SolveResult, ...]


def plan_kernel(spec: KernelSpec, target: DramPimTarget, *, engine: Engine = "cpsat",
                options: SolveOptions | None = None) -> KernelPlan:
    """Choose ``spec``'s draft on ``target`` with ``engine`` and cost the baselines.

    Raises
    ------
    InfeasibleError
        If the PIM units cannot run the kernel (any engine but 'gpu').
    """
    if engine not in ENGINES:
        raise InputError(f"unknown engine '{engine}'; engines: {', '.join(ENGINES)}")
    if engine == "gpu":
        hw = hardware(target, spec, check=False)
        gpu = gpu_time_s(spec, hw)
        return KernelPlan(spec, target.name, engine, hw, (), None, None, gpu, gpu, None, None,
                          None, ())
    inst = build_instance(spec, target)
    default_choice, default_strategy = default_layout(inst)
    default = draft_cost(inst, default_choice, default_strategy)
    solves: tuple[SolveResult, ...] = ()
    if engine == "default":
        choice, strategy = default_choice, default_strategy
    elif engine == "enumerate":
        found = enumerate_drafts(inst)
        choice, strategy, solves = found.choice, found.strategy, (found.result,)
    else:
        result = cpsat.solve(inst, options, hint=(default_choice, default_strategy))
        if result.choice is None or result.strategy is None:
            raise InternalError(f"CP-SAT found no draft for {spec.name} "
                                f"({result.result.status.value}); the space is never empty")
        choice, strategy, solves = result.choice, result.strategy, (result.result,)
    breakdown = draft_cost(inst, choice, strategy)
    return KernelPlan(spec, target.name, engine, inst.hw, inst.sets,
                      decode(inst, choice, strategy), breakdown, breakdown.latency_s,
                      gpu_time_s(spec, inst.hw), default.latency_s,
                      decode(inst, default_choice, default_strategy), draft_counts(inst), solves)
