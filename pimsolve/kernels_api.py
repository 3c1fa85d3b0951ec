"""The DRAM-PIM kernel pipeline, one typed call per arrow (DESIGN.md's second flow).

>>> from pimsolve.kernels_api import compile_kernel
>>> plan = compile_kernel("red:batch=2,size=1024", target="hbm-pim", engine="enumerate")
>>> plan.draft.parts[0].dimension_set
'b'
"""

from __future__ import annotations

from pathlib import Path

from pimsolve.errors import InputError
from pimsolve.frontend.kernels import LLM_MODELS, load_kernel
from pimsolve.ir.kernel import KernelSpec
from pimsolve.solve.options import SolveOptions
from pimsolve.stages.drafts.llm import LlmRun, run_llm
from pimsolve.stages.drafts.select import Engine, KernelPlan, plan_kernel
from pimsolve.target import CrossbarTarget, DramPimTarget, load_target

__all__ = ["compile_kernel", "compile_llm", "dram_target"]


def dram_target(target: str | Path | DramPimTarget) -> DramPimTarget:
    """Load ``target`` and check it is a DRAM-PIM target."""
    loaded = target if isinstance(target, (CrossbarTarget, DramPimTarget)) else load_target(
        target)
    if not isinstance(loaded, DramPimTarget):
        raise InputError(f"target '{loaded.name}' is a crossbar target; kernels need a DRAM-PIM "
                         f"target (e.g. hbm-pim, attacc; see `pimsolve targets`)")
    return loaded


def compile_kernel(spec: str | Path | KernelSpec, *, target: str | Path | DramPimTarget,
                   engine: Engine = "cpsat", options: SolveOptions | None = None) -> KernelPlan:
    """Kernel spec (file, built-in ``NAME:key=value,...`` or object) -> its best draft.

    Raises
    ------
    InputError
        Bad spec, unknown or non-DRAM-PIM target, or (InfeasibleError) a kernel the target's
        PIM units cannot run.
    """
    kernel = spec if isinstance(spec, KernelSpec) else load_kernel(spec)
    loaded = dram_target(target)                       # target file -> DramPimTarget
    return plan_kernel(kernel, loaded, engine=engine,  # dimension sets -> drafts -> best
                       options=options)


def compile_llm(model: str, *, target: str | Path | DramPimTarget, batch: int, tokens_in: int,
                tokens_out: int, engine: Engine = "cpsat",
                options: SolveOptions | None = None) -> LlmRun:
    """One LLM inference with each decode kernel on GPU or PIM (DCC Fig. 11)."""
    if model not in LLM_MODELS:
        raise InputError(f"unknown model '{model}'; known: {', '.join(LLM_MODELS)}")
    if engine == "gpu":
        raise InputError("the llm command compares GPU and PIM itself; use --engine cpsat, "
                         "enumerate or default")
    return run_llm(LLM_MODELS[model], dram_target(target), batch=batch, tokens_in=tokens_in,
                   tokens_out=tokens_out, engine=engine, options=options)
