"""The judge's benchmark: simulator speed, and the reference mapping scored on three targets.

One run writes ``benchmarks/results/judge.csv`` and ``judge.md``:

* simulated instructions per second on resnet18 (224x224) on isaac, both modes (the GA
  fallback uses the simulator as its fitness, so it must stay fast);
* for vgg8 and resnet18 (28x28, as PIMCOMP evaluates them), resnet34 and googlenet (224x224)
  on isaac, puma and arch-c, in both modes: the reference mapping's (no replication, greedy
  placement) simulated latency, throughput and energy beside the physical bounds, achieved /
  bound, the verifier's verdict, and the time of each step.

Usage: ``python benchmarks/run_judge.py [--models vgg8-28,...] [--targets isaac,...]``
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

from pimsolve.codegen.generate import generate
from pimsolve.errors import InputError
from pimsolve.frontend import load_onnx, zoo
from pimsolve.lowering import lower
from pimsolve.simulate.bounds import bounds
from pimsolve.simulate.checks import verify
from pimsolve.simulate.metrics import measure
from pimsolve.simulate.simulator import run
from pimsolve.stages.placement import reference_mapping
from pimsolve.target import load_target

RESULTS = Path(__file__).resolve().parent / "results"
MODELS = ["vgg8-28", "resnet18-28", "resnet34", "googlenet"]
TARGETS = ["isaac", "puma", "arch-c"]


def speed(rows: list[dict]) -> None:
    target = load_target("isaac")
    graph = load_onnx(zoo.build("resnet18"), name="resnet18")
    workload = lower(graph, target)
    for mode in ("ht", "ll"):
        program = generate(graph, workload, reference_mapping(workload, target, mode), target)
        started = time.perf_counter()
        run(program, target)
        wall = time.perf_counter() - started
        rows.append({"model": "resnet18", "target": "isaac", "mode": mode,
                     "instructions": program.instructions, "simulate_s": round(wall, 3),
                     "instructions_per_s": round(program.instructions / wall)})


def score(model: str, target_name: str, mode: str) -> dict:
    target = load_target(target_name)
    row: dict = {"model": model, "target": target_name, "mode": mode}
    graph = load_onnx(zoo.build(model), name=model)
    workload = lower(graph, target)
    try:
        mapping = reference_mapping(workload, target, mode)
    except InputError as exc:
        row["note"] = str(exc)
        return row
    t0 = time.perf_counter()
    program = generate(graph, workload, mapping, target)
    t1 = time.perf_counter()
    timeline = run(program, target)
    t2 = time.perf_counter()
    metrics = measure(program, target, timeline)
    bound = bounds(program, target)
    t3 = time.perf_counter()
    checks = verify(program, target)
    t4 = time.perf_counter()
    row.update({
        "instructions": program.instructions,
        "latency_s": metrics.latency_s, "latency_bound_s": bound.latency_s,
        "latency_bound_over_achieved": bound.latency_s / metrics.latency_s,
        "throughput_per_s": metrics.throughput_per_s,
        "throughput_bound_per_s": bound.throughput_per_s,
        "throughput_achieved_over_bound": metrics.throughput_per_s / bound.throughput_per_s,
        "energy_j": metrics.energy_j, "energy_bound_j": bound.energy_j,
        "energy_bound_over_achieved": bound.energy_j / metrics.energy_j,
        "crossbar_utilization": metrics.crossbar_utilization,
        "peak_local_memory_bytes": max(metrics.peak_local_memory_bytes),
        "checks_passed": checks.passed,
        "violations": len(checks.violations),
        "first_violation": checks.violations[0].kind if checks.violations else "",
        "codegen_s": round(t1 - t0, 2), "simulate_s": round(t2 - t1, 2),
        "measure_s": round(t3 - t2, 2), "verify_s": round(t4 - t3, 2),
        "simulated_instructions_per_s": round(program.instructions / (t2 - t1)),
    })
    return row


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def write(rows: list[dict], name: str) -> None:
    RESULTS.mkdir(exist_ok=True)
    keys = list(dict.fromkeys(k for row in rows for k in row))
    with open(RESULTS / f"{name}.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, keys)
        writer.writeheader()
        writer.writerows(rows)
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(_fmt(row.get(k, "")) for k in keys) + " |" for row in rows]
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--skip-speed", action="store_true")
    args = parser.parse_args()
    if not args.skip_speed:
        rows: list[dict] = []
        speed(rows)
        write(rows, "judge_speed")
        for row in rows:
            print(row, flush=True)
    scored = []
    for model in args.models.split(","):
        for target in args.targets.split(","):
            for mode in ("ht", "ll"):
                scored.append(score(model, target, mode))
                print({k: _fmt(v) for k, v in scored[-1].items()}, flush=True)
                write(scored, "judge")


if __name__ == "__main__":
    main()
