"""Reports of the DRAM-PIM kernel branch: ``kernel`` and ``llm`` as JSON-ready dicts and tables.

Schema (version 1) of ``pimsolve kernel --json``: ``metrics.latency_s`` (one kernel call),
``metrics.energy_j`` (estimate, not optimized), the phase times, ``draft.parts`` with, per
dimension set, ``draft`` = ``[groups, cores_per_group, per_core_size]`` and its name,
``baselines`` (GPU roofline and the backend's default layout, with speedups), ``drafts``
(counts as DCC Table 3), ``bounds`` and ``solves`` (one record per solve).
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from pimsolve.frontend.kernels import kernel_text
from pimsolve.ir.kernel import Draft
from pimsolve.stages.drafts.llm import PHASES, LlmRun
from pimsolve.stages.drafts.select import KernelPlan

__all__ = ["SCHEMA_VERSION", "kernel_report", "kernel_tables", "llm_report", "llm_tables"]

SCHEMA_VERSION = 1


def _draft(draft: Draft | None, plan: KernelPlan) -> dict[str, Any] | None:
    if draft is None:
        return None
    members = {s.name: [str(m) for m in s.members] for s in plan.sets}
    return {"strategy": draft.strategy, "groups": draft.groups,
            "cores_per_group": draft.cores_per_group,
            "parts": [{"dimension_set": p.dimension_set,
                       "members": members.get(p.dimension_set, []),
                       "draft": [p.groups, p.cores_per_group, p.per_core_size],
                       "representative": p.representative} for p in draft.parts]}


def _bound_s(plan: KernelPlan) -> float:
    """Every element of the streamed (input and resident) tensors passes one SIMD lane of some
    PIM core once: their elements / (all lanes) x one command slot."""
    hw = plan.hw
    streamed = sum(t.elements for t in plan.spec.tensors if t.role in ("input", "resident"))
    lanes = hw.groups * hw.cores_per_group * hw.simd
    return streamed / lanes * hw.t_cmd_fs / 1e15


def kernel_report(plan: KernelPlan, stage: str = "drafts") -> dict[str, Any]:
    """The JSON-ready report of one kernel plan."""
    b = plan.breakdown
    metrics: dict[str, Any] = {"latency_s": plan.latency_s,
                               "throughput_per_s": 1.0 / plan.latency_s}
    if b is not None:
        metrics.update(energy_j=b.energy_j, input_rearrangement_s=b.input_fs / 1e15,
                       compute_s=b.compute_fs / 1e15, output_rearrangement_s=b.output_fs / 1e15,
                       fixed_s=b.fixed_fs / 1e15)
    baselines: dict[str, Any] = {"gpu_s": plan.gpu_s,
                                 "speedup_vs_gpu": plan.gpu_s / plan.latency_s}
    if plan.default_s is not None:
        baselines.update(default_layout_s=plan.default_s,
                         speedup_vs_default=plan.default_s / plan.latency_s,
                         default_layout=_draft(plan.default_draft, plan))
    counts = plan.counts
    return {
        "schema_version": SCHEMA_VERSION, "kind": "kernel", "kernel": plan.spec.name,
        "spec": kernel_text(plan.spec), "target": plan.target, "engine": plan.engine,
        "metrics": metrics,
        "bounds": {"latency_s": _bound_s(plan) if b is not None else plan.gpu_s},
        "dimension_sets": [{"name": s.name, "members": [str(m) for m in s.members]}
                           for s in plan.sets],
        "draft": _draft(plan.draft, plan), "baselines": baselines,
        "drafts": None if counts is None else {
            "unpruned": counts.unpruned, "dcc_pruned": counts.dcc_pruned,
            "searched": counts.exact_reduced},
        "solves": [r.as_record(stage) for r in plan.solves],
    }


def _us(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:,.3f} us"


def kernel_tables(report: dict[str, Any]) -> list[Table]:
    """The draft table and the summary table of a ``kernel`` report."""
    tables = []
    if report["draft"] is not None:
        draft = Table(title=f"{report['kernel']} on {report['target']}: draft "
                      f"({report['engine']}, index strategy {report['draft']['strategy']})",
                      title_justify="left")
        for column in ("dimension set", "members", "groups", "cores/group", "per-core size",
                       "representative"):
            draft.add_column(column)
        for p in report["draft"]["parts"]:
            draft.add_row(p["dimension_set"], " ".join(p["members"]),
                          *(str(v) for v in p["draft"]), p["representative"])
        tables.append(draft)
    summary = Table(title="summary", title_justify="left", show_header=False)
    summary.add_column("what")
    summary.add_column("value", justify="right")
    m, base = report["metrics"], report["baselines"]
    summary.add_row("latency", _us(m["latency_s"]))
    for key, label in (("input_rearrangement_s", "input rearrangement"),
                       ("compute_s", "PIM compute"), ("output_rearrangement_s",
                                                      "output rearrangement"),
                       ("fixed_s", "fixed DRAM latencies")):
        if key in m:
            summary.add_row(f"  {label}", _us(m[key]))
    if "energy_j" in m:
        summary.add_row("energy (estimate)", f"{m['energy_j'] * 1e6:,.3f} uJ")
    summary.add_row("bound (all lanes busy)", _us(report["bounds"]["latency_s"]))
    summary.add_row("GPU roofline", f"{_us(base['gpu_s'])}  ({base['speedup_vs_gpu']:.2f}x)")
    if "default_layout_s" in base:
        summary.add_row("default layout", f"{_us(base['default_layout_s'])}  "
                        f"({base['speedup_vs_default']:.2f}x)")
    if report["drafts"]:
        d = report["drafts"]
        summary.add_row("drafts: unpruned / DCC-pruned / searched",
                        f"{d['unpruned']:,} / {d['dcc_pruned']:,} / {d['searched']:,}")
    for s in report["solves"]:
        summary.add_row(f"solve ({s['engine']})",
                        f"{s['status']}, {s['wall_s']:.3f} s")
    tables.append(summary)
    return tables


def llm_report(run: LlmRun) -> dict[str, Any]:
    """The JSON-ready report of an LLM run (times per phase, in seconds)."""
    totals = {k: LlmRun.total(v) for k, v in
              (("gpu", run.gpu), ("default", run.default), ("dcc", run.dcc))}
    return {
        "schema_version": SCHEMA_VERSION, "kind": "llm", "model": run.model,
        "target": run.target, "batch": run.batch, "tokens_in": run.tokens_in,
        "tokens_out": run.tokens_out,
        "metrics": {"latency_s": totals["dcc"],
                    "throughput_per_s": run.batch * run.tokens_out / totals["dcc"]},
        "phases": {"gpu": run.gpu, "default": run.default, "dcc": run.dcc},
        "totals": totals,
        "speedup": {"vs_gpu": totals["gpu"] / totals["dcc"],
                    "vs_default": totals["default"] / totals["dcc"]},
        "kernels": [{"phase": k.phase, "kernel": k.kernel, "calls": k.calls, "gpu_s": k.gpu_s,
                     "pim_s": k.pim_s, "default_s": k.default_s, "placed": k.placed}
                    for k in run.kernels],
        "solves": [r.as_record("drafts") for r in run.solves],
    }


def llm_tables(report: dict[str, Any]) -> list[Table]:
    """Time per phase for GPU only, the default PIM layout and DCC-style placement."""
    table = Table(title=f"{report['model']} on {report['target']}: batch {report['batch']}, "
                  f"{report['tokens_in']} in, {report['tokens_out']} out (ms)",
                  title_justify="left")
    table.add_column("phase")
    for column in ("GPU", "default", "DCC"):
        table.add_column(column, justify="right")
    for phase in PHASES:
        table.add_row(phase, *(f"{report['phases'][k][phase] * 1e3:,.3f}"
                               for k in ("gpu", "default", "dcc")))
    table.add_row("total", *(f"{report['totals'][k] * 1e3:,.3f}"
                             for k in ("gpu", "default", "dcc")))
    table.add_row("speedup", f"{report['speedup']['vs_gpu']:.2f}x vs GPU", "",
                  f"{report['speedup']['vs_default']:.2f}x vs default")
    return [table]
