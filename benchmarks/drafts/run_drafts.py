"""DCC kernels x sizes x backends: CP-SAT vs exhaustive optimum, time, draft counts, speedups.

One run writes into ``benchmarks/results/``:
  drafts_kernels.csv / .md   per case: optimum (enumerate) vs CP-SAT, CP-SAT time (all of
                             cpsat.solve, and CP-SAT's search alone), counts,
                             latency of DCC-optimal / default layout / GPU roofline
  drafts_table3.csv          draft counts without / with DCC pruning (DCC Table 3 settings)
  drafts_llm.csv             LLM end-to-end time per phase (DCC Fig. 11 style)
  drafts_summary.md          the headline numbers beside DCC's published averages
  drafts.png                 speedups over GPU and CP-SAT times

Run: PYTHONPATH=. python benchmarks/drafts/run_drafts.py [--quick]
The cost model is not tuned to DCC's numbers: they are printed for a comparison of trends.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import time
from pathlib import Path

from pimsolve.frontend.kernels import LLM_MODELS, attn, hgemv, red, relu, va
from pimsolve.solve.options import SolveOptions
from pimsolve.stages.drafts import cpsat
from pimsolve.stages.drafts.baselines import default_layout
from pimsolve.stages.drafts.cost import draft_cost, gpu_time_s
from pimsolve.stages.drafts.enumerate import draft_counts, enumerate_drafts
from pimsolve.stages.drafts.instance import _extent, build_instance
from pimsolve.stages.drafts.llm import PHASES, LlmRun, run_llm
from pimsolve.target import load_target

OUT = Path(__file__).resolve().parents[1] / "results"

# DCC (paper 001) Sec. 5.1 averages: DCC over the backend's default layout, and over GPU.
DCC_VS_DEFAULT = {("attacc", "attn"): 1.23, ("attacc", "gemv"): 1.26, ("attacc", "red"): 1.48,
                  ("hbm-pim", "gemv"): 1.53, ("hbm-pim", "red"): 2.09,
                  ("hbm-pim", "va"): 1.64, ("hbm-pim", "relu"): 1.54}
DCC_VS_GPU = {("hbm-pim", "gemv"): 5.59, ("hbm-pim", "red"): 1.35, ("hbm-pim", "va"): 2.07,
              ("hbm-pim", "relu"): 2.66,
              # AttAcc: the default's average over GPU times DCC's over the default (Sec. 5.1)
              ("attacc", "attn"): 10.35 * 1.23, ("attacc", "gemv"): 7.61 * 1.26,
              ("attacc", "red"): 1.58 * 1.48}
KERNELS = {"attacc": ("gemv", "red", "attn"), "hbm-pim": ("gemv", "red", "va", "relu")}


def build(kernel: str, batch: int, size: int):
    if kernel == "gemv":  # DCC's GEMV: attention-layer GEMV, 32 heads, input 128
        return hgemv(batch, 32, 128, size)
    if kernel == "attn":
        return attn(batch, 32, size, 128)
    return {"red": red, "va": va, "relu": relu}[kernel](batch, size)


def geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values)) if values else float("nan")


def kernel_cases(sizes, batches) -> list[dict]:
    rows = []
    for backend, kernels in KERNELS.items():
        target = load_target(backend)
        for kernel in kernels:
            for batch in batches:
                for size in sizes:
                    spec = build(kernel, batch, size)
                    inst = build_instance(spec, target)
                    hint = default_layout(inst)
                    _extent.cache_clear()  # each engine computes its tiles from scratch
                    solved = cpsat.solve(inst, SolveOptions(seed=0), hint=hint)
                    _extent.cache_clear()
                    found = enumerate_drafts(inst)
                    cost = draft_cost(inst, solved.choice, solved.strategy)
                    default = draft_cost(inst, *hint).latency_s
                    gpu = gpu_time_s(spec, inst.hw)
                    counts = draft_counts(inst)
                    rows.append({
                        "backend": backend, "kernel": kernel, "batch": batch, "size": size,
                        "optimum_fs": found.cost_fs, "cpsat_fs": cost.total_fs,
                        "cpsat_status": solved.result.status.value,
                        "same_cost": cost.total_fs == found.cost_fs,
                        "incumbent_fs": int(solved.result.stats["incumbent_fs"]),
                        "cpsat_s": round(solved.result.wall_s, 4),
                        "cpsat_solver_s": round(solved.result.stats["solver_s"], 4),
                        "cpsat_branches": int(solved.result.stats["branches"]),
                        "cpsat_det_s": round(solved.result.deterministic_s or 0.0, 4),
                        "enumerate_s": round(found.result.wall_s, 4),
                        "drafts_unpruned": counts.unpruned, "drafts_dcc_pruned": counts.dcc_pruned,
                        "drafts_searched": counts.exact_reduced,
                        "dcc_pruned_best_fs": enumerate_drafts(inst, dcc_pruning=True).cost_fs,
                        "latency_us": cost.latency_s * 1e6, "default_us": default * 1e6,
                        "gpu_us": gpu * 1e6, "rearrangement_share":
                            round(cost.rearrangement_s / cost.latency_s, 3),
                        "speedup_vs_gpu": gpu / cost.latency_s,
                        "speedup_vs_default": default / cost.latency_s})
                    print(f"{backend:8s} {kernel:5s} b={batch:3d} n={size:5d} "
                          f"opt={found.cost_fs} cpsat={cost.total_fs} "
                          f"{solved.result.status.value} t={solved.result.wall_s:.3f}s "
                          f"(search {solved.result.stats['solver_s']:.3f}s)", flush=True)
    return rows


def table3() -> list[dict]:
    """DCC Table 3's settings: ATTN / GEMV, 32 heads, 128 in + 128 out tokens (seq 256),
    5 or 10 PIM devices per GPU, batch 4 or 64."""
    rows = []
    for devices in (5, 10):
        base = load_target("attacc")
        target = base.model_copy(update={"organization": base.organization.model_copy(
            update={"devices": devices})})
        for kernel, make in (("ATTN", lambda b: attn(b, 32, 256, 128)),
                             ("GEMV", lambda b: hgemv(b, 32, 128, 256))):
            for batch in (4, 64):
                counts = draft_counts(build_instance(make(batch), target))
                rows.append({"kernel": kernel, "devices": devices, "batch": batch,
                             "unpruned": counts.unpruned, "dcc_pruned": counts.dcc_pruned,
                             "searched": counts.exact_reduced,
                             "reduction": round(counts.unpruned / counts.dcc_pruned, 2)})
    return rows


def llm_rows(configs) -> list[dict]:
    rows = []
    target = load_target("attacc")
    for model in ("gpt3-13b", "llama2-33b", "opt-1.3b"):
        for batch, tin, tout in configs:
            run = run_llm(LLM_MODELS[model], target, batch=batch, tokens_in=tin,
                          tokens_out=tout, engine="enumerate")
            for system, phases in (("gpu", run.gpu), ("default", run.default),
                                   ("dcc", run.dcc)):
                rows.append({"model": model, "batch": batch, "tokens_in": tin,
                             "tokens_out": tout, "system": system,
                             **{p: round(phases[p] * 1e3, 4) for p in PHASES},
                             "total_ms": round(LlmRun.total(phases) * 1e3, 4)})
            print(f"{model} b={batch} {tin}/{tout}: gpu {LlmRun.total(run.gpu)*1e3:.1f} ms, "
                  f"default {LlmRun.total(run.default)*1e3:.1f} ms, "
                  f"dcc {LlmRun.total(run.dcc)*1e3:.1f} ms", flush=True)
    return rows


def write_csv(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def markdown(rows: list[dict], columns: list[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        lines.append("| " + " | ".join(f"{r[c]:.3g}" if isinstance(r[c], float) else str(r[c])
                                       for c in columns) + " |")
    return "\n".join(lines)


def summary(rows, t3, llm) -> str:
    agree = sum(r["same_cost"] for r in rows)
    proven = sum(r["cpsat_status"] == "optimal" for r in rows)
    times = [r["cpsat_s"] for r in rows]
    search = [r["cpsat_solver_s"] for r in rows]
    warm = sum(r["incumbent_fs"] == r["optimum_fs"] for r in rows)
    lost = sum(r["dcc_pruned_best_fs"] > r["optimum_fs"] for r in rows)
    out = ["# Drafts benchmark (DCC kernels on HBM-PIM and AttAcc)", "",
           f"- cases: {len(rows)}; CP-SAT cost == exhaustive optimum in {agree}/{len(rows)} "
           f"({100 * agree / len(rows):.1f}%; DCC's predictor: 89.28% on single kernels); "
           f"status OPTIMAL (proven) in {proven}/{len(rows)}",
           f"- CP-SAT wall time per case (all of cpsat.solve: set bounds, coordinate descent, "
           f"model, search): median {statistics.median(times):.3f} s, max {max(times):.3f} s "
           f"(target < 0.5 s; 1 worker, seed 0); the search alone: median "
           f"{statistics.median(search):.3f} s, max {max(search):.3f} s, median "
           f"{statistics.median(r['cpsat_branches'] for r in rows):.0f} branches; exhaustive "
           f"enumeration median {statistics.median(r['enumerate_s'] for r in rows):.3f} s",
           f"- the coordinate-descent draft (hint and cutoff) is already optimal in {warm}/"
           f"{len(rows)} cases; CP-SAT proves (and otherwise finds) the optimum",
           f"- DCC's three pruning rules (Rule 2 speculative) lose the optimum in {lost}/"
           f"{len(rows)} cases", "",
           "## Speedups (geometric means over batch x size) beside DCC's published averages",
           "", "| backend | kernel | vs GPU | DCC vs GPU | vs default | DCC vs default | "
           "rearrangement share |", "|---|---|---|---|---|---|---|"]
    for backend, kernels in KERNELS.items():
        for kernel in kernels:
            sel = [r for r in rows if r["backend"] == backend and r["kernel"] == kernel]
            if not sel:
                continue
            out.append(f"| {backend} | {kernel} | "
                       f"{geomean([r['speedup_vs_gpu'] for r in sel]):.2f} | "
                       f"{DCC_VS_GPU[(backend, kernel)]:.2f} | "
                       f"{geomean([r['speedup_vs_default'] for r in sel]):.2f} | "
                       f"{DCC_VS_DEFAULT[(backend, kernel)]:.2f} | "
                       f"{statistics.fmean(r['rearrangement_share'] for r in sel):.2f} |")
    out += ["", "DCC vs GPU for AttAcc is the default's average over GPU times DCC's over the "
            "default (Sec. 5.1); the GPU baseline here is a roofline (peak FLOP/s, bandwidth) "
            "plus one DRAM latency, which is far stronger than DCC's simulated GPU for small, "
            "rearrangement-bound kernels.", "",
            "## Draft counts (DCC Table 3 settings; DCC: 32186 / 4274 at 5 devices, batch 4)", "",
            markdown(t3, list(t3[0])), "",
            "## LLM end to end on AttAcc (ms; DCC Fig. 11 style)", "",
            markdown(llm, list(llm[0]))]
    return "\n".join(out) + "\n"


def plot(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for backend, kernels in KERNELS.items():
        for kernel in kernels:
            sel = [r for r in rows if r["backend"] == backend and r["kernel"] == kernel]
            sizes = sorted({r["size"] for r in sel})
            ax1.plot(sizes, [geomean([r["speedup_vs_gpu"] for r in sel if r["size"] == s])
                             for s in sizes], marker="o", label=f"{backend} {kernel}")
    ax1.set_xscale("log", base=2)
    ax1.set_yscale("log")
    ax1.axhline(1, color="grey", lw=0.8)
    ax1.set_xlabel("tensor size")
    ax1.set_ylabel("speedup over GPU roofline (geomean over batch)")
    ax1.legend(fontsize=7)
    ax2.hist([r["cpsat_s"] for r in rows], bins=30)
    ax2.axvline(0.5, color="red", lw=0.8)
    ax2.set_xlabel("CP-SAT wall time per case (s)")
    ax2.set_ylabel("cases")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 sizes x 2 batches only")
    args = parser.parse_args()
    sizes = (1024, 2048) if args.quick else (1024, 2048, 4096, 8192)
    batches = (1, 4) if args.quick else (1, 4, 16, 64)
    configs = ((1, 128, 128),) if args.quick else ((1, 128, 128), (16, 128, 128),
                                                     (1, 2048, 128), (16, 2048, 128))
    OUT.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    rows = kernel_cases(sizes, batches)
    t3 = table3()
    llm = llm_rows(configs)
    write_csv(OUT / "drafts_kernels.csv", rows)
    write_csv(OUT / "drafts_table3.csv", t3)
    write_csv(OUT / "drafts_llm.csv", llm)
    (OUT / "drafts_kernels.md").write_text(markdown(rows, [
        "backend", "kernel", "batch", "size", "same_cost", "cpsat_s", "cpsat_solver_s",
        "drafts_unpruned",
        "drafts_dcc_pruned", "drafts_searched", "latency_us", "default_us", "gpu_us",
        "speedup_vs_gpu", "speedup_vs_default"]) + "\n")
    (OUT / "drafts_summary.md").write_text(summary(rows, t3, llm))
    plot(rows, OUT / "drafts.png")
    print(summary(rows, t3, llm))
    print(f"total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
