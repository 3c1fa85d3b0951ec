"""One LLM inference (prefill, then decode steps) with each decode kernel on GPU or PIM.

Like DCC Fig. 11: per decoder layer, QKV generation, attention, projection and feed-forward are
memory-bound GEMV-type kernels in decode; each runs where it is faster (GPU roofline or the
PIM draft the chosen engine finds). Prefill and 'other' (norms, residuals, activation, LM
head) run on the GPU (roofline). Three systems are compared: GPU only; the backend's default
(attention on PIM with its default layout, as AttAcc_Base); and DCC-style placement with
optimal drafts. Attention is planned at context lengths rounded up to ``kv_block`` tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

from pimsolve.errors import InfeasibleError, InputError
from pimsolve.frontend.kernels import LlmShape, attn, gemv
from pimsolve.ir.kernel import KernelSpec
from pimsolve.solve.options import SolveOptions
from pimsolve.solve.result import SolveResult
from pimsolve.stages.drafts.select import Engine, plan_kernel
from pimsolve.target import DramPimTarget

__all__ = ["PHASES", "KernelChoice", "LlmRun", "run_llm"]

PHASES = ("qkv", "attention", "projection", "ffn", "other", "prefill")


@dataclass(frozen=True)
class KernelChoice:
    """One decode kernel: its time on each side and where it runs."""

    phase: str
    kernel: str
    calls: int
    """Calls over the whole run (layers x decode steps using this shape)."""
    gpu_s: float
    pim_s: float | None
    """Best draft's latency; None when the PIM units cannot run it."""
    default_s: float | None
    placed: str
    """'pim' or 'gpu' (DCC-style placement)."""


@dataclass(frozen=True)
class LlmRun:
    """Time per phase (seconds, whole run) for GPU only, the default, and DCC placement."""

    model: str
    target: str
    batch: int
    tokens_in: int
    tokens_out: int
    gpu: dict[str, float]
    default: dict[str, float]
    dcc: dict[str, float]
    kernels: tuple[KernelChoice, ...]
    solves: tuple[SolveResult, ...]

    @staticmethod
    def total(phases: dict[str, float]) -> float:
        return sum(phases.values())


def _roofline(target: DramPimTarget, flops: float, moved_bytes: float) -> float:
    return max(flops / (target.host.peak_tflops * 1e12),
               moved_bytes / (target.host.bandwidth_gb_per_s * 1e9))


def _decode_kernels(shape: LlmShape, batch: int, context: int) -> list[tuple[str, KernelSpec]]:
    ffn_up = shape.ffn * (2 if shape.gated else 1)
    return [("qkv", gemv(batch, shape.hidden, 3 * shape.hidden, name="qkv")),
            ("attention", attn(batch, shape.heads, context, shape.head_dim)),
            ("projection", gemv(batch, shape.heads * shape.head_dim, shape.hidden,
                                name="proj")),
            ("ffn", gemv(batch, shape.hidden, ffn_up, name="ffn_up")),
            ("ffn", gemv(batch, shape.ffn, shape.hidden, name="ffn_down"))]


def run_llm(shape: LlmShape, target: DramPimTarget, *, batch: int, tokens_in: int,
            tokens_out: int, engine: Engine = "cpsat", kv_block: int = 128,
            options: SolveOptions | None = None) -> LlmRun:
    """Plan every decode kernel once per distinct shape and add up the run."""
    if min(batch, tokens_in, tokens_out, kv_block) <= 0:
        raise InputError("batch, tokens-in, tokens-out and kv-block must be positive")
    eb = 2
    contexts: dict[int, int] = {}
    for step in range(tokens_out):
        length = -(-(tokens_in + step + 1) // kv_block) * kv_block
        contexts[length] = contexts.get(length, 0) + 1
    systems: dict[str, dict[str, float]] = {k: dict.fromkeys(PHASES, 0.0)
                                            for k in ("gpu", "default", "dcc")}
    choices: list[KernelChoice] = []
    solves: list[SolveResult] = []
    cache: dict[tuple, tuple[float, float | None, float | None, tuple]] = {}
    for context, steps in sorted(contexts.items()):
        for phase, spec in _decode_kernels(shape, batch, context):
            key = (spec.name, tuple((lp.var, lp.size) for lp in spec.loops))
            if key not in cache:
                gpu = plan_kernel(spec, target, engine="gpu").latency_s
                try:
                    plan = plan_kernel(spec, target, engine=engine, options=options)
                    cache[key] = (gpu, plan.latency_s, plan.default_s, plan.solves)
                except InfeasibleError:
                    cache[key] = (gpu, None, None, ())
                solves.extend(cache[key][3])
            gpu, pim, default, _ = cache[key]
            calls = steps * shape.layers
            best_pim = pim is not None and pim < gpu
            choices.append(KernelChoice(phase, spec.name, calls, gpu, pim, default,
                                        "pim" if best_pim else "gpu"))
            systems["gpu"][phase] += calls * gpu
            systems["dcc"][phase] += calls * (pim if best_pim and pim is not None else gpu)
            on_pim = phase == "attention" and default is not None
            systems["default"][phase] += calls * (default if on_pim and default else gpu)
    h, vocab = shape.hidden, shape.vocab
    per_layer = (4 * batch * h + 3 * batch * h + 2 * batch * shape.ffn) * eb
    other = shape.layers * _roofline(target, 10.0 * batch * h, per_layer) \
        + _roofline(target, 2.0 * batch * h * vocab, h * vocab * eb)
    ffn_up = shape.ffn * (2 if shape.gated else 1)
    weights = h * 3 * h + h * h + h * ffn_up + shape.ffn * h
    tokens = batch * tokens_in
    prefill_flops = shape.layers * (2.0 * tokens * weights
                                    + 4.0 * batch * tokens_in**2 * shape.heads * shape.head_dim)
    prefill = _roofline(target, prefill_flops, shape.layers * weights * eb)
    for phases in systems.values():
        phases["other"] = tokens_out * other
        phases["prefill"] = prefill
    return LlmRun(shape.name, target.name, batch, tokens_in, tokens_out, systems["gpu"],
                  systems["default"], systems["dcc"], tuple(choices), tuple(solves))
