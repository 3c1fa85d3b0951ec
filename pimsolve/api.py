"""The public pipeline, one typed call per arrow of the flow.

>>> from pimsolve.api import inspect_model
>>> result = inspect_model("vgg8-28", target="isaac")
>>> result.workload.fits
True
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from pimsolve.codegen.generate import CodegenOptions, generate
from pimsolve.errors import InputError
from pimsolve.frontend import load_onnx, zoo
from pimsolve.ir import Graph, Workload
from pimsolve.ir.mapping import Mapping as MappingRecord
from pimsolve.ir.program import Program
from pimsolve.ir.serialize import from_json, to_json
from pimsolve.lowering import lower
from pimsolve.parallel import beside, can_fork
from pimsolve.report.report import build_report
from pimsolve.simulate.bounds import bounds
from pimsolve.simulate.checks import verify
from pimsolve.simulate.metrics import measure
from pimsolve.simulate.simulator import run
from pimsolve.stages.placement import reference_mapping
from pimsolve.target import CrossbarTarget, DramPimTarget, load_target

__all__ = ["Inspection", "inspect_model", "resolve_model", "MapResult", "map_model",
           "write_map_outputs", "simulate_saved", "MODES", "FunctionalCheck",
           "functional_check", "check_program", "PlacementSettings", "engines"]

MODES = {"latency": "ll", "throughput": "ht", "energy": "ht", "edp": "ht"}
"""The mode each objective implies unless ``mode`` says otherwise."""
MODES_OBJECTIVE = {"ll": "latency", "ht": "throughput"}


@dataclass(frozen=True)
class Inspection:
    """What a model asks of a target: the graph, and its lowering if a target was given."""

    graph: Graph
    target: CrossbarTarget | DramPimTarget | None
    workload: Workload | None


def resolve_model(spec: str | Path) -> Path | onnx.ModelProto:
    """An ONNX file path, or a bundled model name (``pimsolve models``) built in memory."""
    path = Path(spec)
    if path.exists() or path.suffix == ".onnx" or path.parent != Path("."):
        return path
    if str(spec) in zoo.MODELS:
        return zoo.build(str(spec))
    raise InputError(f"{spec}: no such model file, and not a bundled model name; bundled "
                     f"models: {', '.join(zoo.names())}")


def inspect_model(model: str | Path | onnx.ModelProto, *,
                  target: str | Path | CrossbarTarget | DramPimTarget | None = None,
                  input_shapes: Mapping[str, tuple[int, ...]] | None = None) -> Inspection:
    """Load ``model`` and, given a crossbar ``target``, lower it to array groups.

    Parameters
    ----------
    model
        An ONNX file, a bundled model name (e.g. ``"resnet18"``) or an ``onnx.ModelProto``.
    target
        A bundled target name (e.g. ``"isaac"``), a target YAML file, or a loaded target.
    input_shapes
        Static shapes for inputs with symbolic dimensions, by input name.

    Raises
    ------
    InputError
        For a bad model or target file, or a DRAM-PIM target (which has no crossbars).
    """
    if isinstance(model, (str, Path)):
        name = Path(model).stem
        source = resolve_model(model)
    else:
        name, source = model.graph.name or "model", model
    graph = load_onnx(source, input_shapes=input_shapes, name=name)
    if target is None:
        return Inspection(graph, None, None)
    loaded = target if isinstance(target, (CrossbarTarget, DramPimTarget)) else load_target(
        target)
    if isinstance(loaded, DramPimTarget):
        raise InputError(f"target '{loaded.name}' is a DRAM-PIM target: it has no crossbars "
                         f"to map layers onto; use a crossbar target (see `pimsolve targets`)")
    return Inspection(graph, loaded, lower(graph, loaded))


@dataclass(frozen=True)
class MapResult:
    """Everything ``pimsolve map`` produces."""

    mapping: MappingRecord
    program: Program
    report: dict[str, Any]


def engines() -> tuple[str, ...]:
    """Placement engines: exact (cpsat, milp, milp-highs), ga, auto, the baselines, 'none'."""
    from pimsolve.stages.placement.place import engine_names

    return engine_names()


def _crossbar_target(target: str | Path | CrossbarTarget | DramPimTarget) -> CrossbarTarget:
    loaded = target if isinstance(target, (CrossbarTarget, DramPimTarget)) else load_target(
        target)
    if isinstance(loaded, DramPimTarget):
        raise InputError(f"target '{loaded.name}' is a DRAM-PIM target: map needs a crossbar "
                         "target; for DRAM-PIM kernels use `pimsolve kernel`")
    return loaded


VERIFY_BESIDE_FROM = 50_000
"""``score`` verifies in a forked process beside the simulator from this many instructions
on (where a second core can take it: ``parallel.can_fork``). Below, the verifier takes a
fraction of a second anyway (resnet18-28/ISAAC LL, 145 k instructions: 0.35 s), and the fork
costs about 15 ms."""


def score(mapping: MappingRecord, program: Program, target: CrossbarTarget,
          solves: list[dict[str, Any]], *, check_only: bool = False,
          stage: Callable[[str], None] | None = None,
          timing: dict[str, float] | None = None) -> dict[str, Any]:
    """Verify ``program``, and unless ``check_only`` simulate it: the report data, whose
    ``timing`` holds ``timing`` (seconds per step) and these steps' own. ``stage`` is told
    each step as it begins."""
    timing = dict(timing or {})
    tell = stage or (lambda text: None)
    measured = measured_bounds = None
    # the verifier runs beside the simulator, where a second core can take it; else first
    forked = (not check_only and program.instructions >= VERIFY_BESIDE_FROM
              and can_fork())
    tell(f"verifying {program.instructions:,} instructions")
    timing["verify_s"] = 0.0  # set below; here for the steps' order
    with beside(_timed, verify, program, target, wanted=forked) as verified:
        if not forked:
            checks, timing["verify_s"] = verified()
        if not check_only:
            started = time.perf_counter()
            tell(f"simulating {program.instructions:,} instructions")
            timeline = run(program, target)
            measured, measured_bounds = measure(program, target, timeline), bounds(program, target)
            timing["simulate_s"] = time.perf_counter() - started
        if forked:
            checks, timing["verify_s"] = verified()
    report = build_report(mapping, measured, measured_bounds, checks, solves)
    report["timing"] = timing
    return report


def _timed(fn: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    """``fn(*args)`` and the seconds it took."""
    started = time.perf_counter()
    return fn(*args), time.perf_counter() - started


@dataclass(frozen=True)
class PlacementSettings:
    """How ``map_model`` decides the placement (``pimsolve map``'s solver options)."""

    engine: str = "none"
    """'none' (reference: no replication), an exact engine, 'ga', 'auto' or a baseline."""
    time_limit_s: float | None = 10.0
    relative_gap: float = 1e-3
    """Exact engines stop once the proven relative gap is at most this."""
    clock: str = "work"
    """What ``time_limit_s`` counts: 'work' (``solve.clock``: CP-SAT's deterministic time and
    the heuristics' own counts, priced in seconds of the reference machine), with which the
    same inputs and settings give the same placement on every machine and the wall time is
    only near the limit, or 'wall' seconds. The MILP engines always count wall time."""
    seed: int = 0
    workers: int = 2
    """Search workers of the exact engines. CP-SAT interleaves them (``interleave_search``),
    so its solves repeat (on the work clock also those the limit stops); with two, its LNS
    workers run beside the search (resnet18-28/isaac HT, 10 s: gap 6.49% with one, 3.79% with two;
    the other eleven 28x28 rows unchanged). The decomposition's masters run one
    (``decompose.MASTER_WORKERS``)."""
    export_model: Path | None = None
    """Write the exact model here (.mps, .lp or .pb.txt)."""
    unfoldings: str = "all"
    """'all' valid unfoldings the codegen emits, or 'default' (IK2,O,1) only."""
    max_layers_per_core: int | None = None
    progress: Callable[[Any], None] | None = None
    """Called with ``solve.model.Progress`` on every improving solution (exact engines) or
    with ``(generation, best)`` every GA generation."""


def map_model(model: str | Path | onnx.ModelProto, *,
              target: str | Path | CrossbarTarget, objective: str = "latency",
              mode: str | None = None, engine: str | None = None,
              settings: PlacementSettings | None = None,
              input_shapes: Mapping[str, tuple[int, ...]] | None = None,
              codegen: CodegenOptions | None = None,
              stage: Callable[[str], None] | None = None) -> MapResult:
    """frontend -> placement -> codegen -> simulate -> report.

    ``objective`` picks the mode (latency: low-latency 'll'; throughput, energy, edp: 'ht')
    unless ``mode`` is given. ``engine`` overrides ``settings.engine``; ``codegen`` sets the
    code generator's options (e.g. the LL order). ``stage`` is told each step after the
    placement as it begins (a 224x224 program's steps take a minute or two); the report's
    ``timing`` gives each step's seconds.
    """
    if objective not in MODES:
        raise InputError(f"objective must be one of {', '.join(MODES)}, not {objective!r}")
    mode = mode or MODES[objective]
    if mode not in ("ht", "ll"):
        raise InputError(f"mode must be 'ht' or 'll', not {mode!r}")
    settings = settings or PlacementSettings()
    if engine is not None:
        settings = replace(settings, engine=engine)
    if settings.engine not in engines():
        raise InputError(f"unknown engine {settings.engine!r}; engines: "
                         f"{', '.join(engines())}")
    compiled = _compile(model, target, mode, input_shapes, objective, settings, codegen,
                        stage)
    report = score(compiled.mapping, compiled.program, compiled.target, [compiled.solve],
                   stage=stage, timing=compiled.timing)
    if compiled.predicted is not None and "metrics" in report:
        report["prediction"] = _fidelity(compiled.predicted, report["metrics"], mode)
    return MapResult(compiled.mapping, compiled.program, report)


LATE_SHARE = 0.05
"""LL: a layer is late when the simulator finishes it more than this share of the predicted
latency after the model does (``_fidelity``'s ``late_layer``)."""


def _fidelity(predicted: dict[str, Any], metrics: dict[str, Any], mode: str) -> dict:
    """The formulation's predicted metric beside the simulator's, and their relative error;
    in LL also each crossbar layer's finish in both, and the first layer (in the model's
    order) the simulator finishes late, where the two part (None if none)."""
    key = "cycle_s" if mode == "ht" else "latency_s"
    simulated = metrics[key]
    value = predicted[key]
    layers = predicted.get("layer_finish_s", {})
    out = {k: v for k, v in predicted.items() if k != "layer_finish_s"}
    out.update({"metric": key, "simulated": simulated,
                "relative_error": (value - simulated) / simulated if simulated else None})
    if mode == "ll":
        seen = metrics.get("layer_finish_s", {})
        out["layers"] = [{"layer": name, "predicted_s": f, "simulated_s": seen.get(name)}
                         for name, f in layers.items()]
        out["late_layer"] = next(
            ({"layer": row["layer"], "late_s": row["simulated_s"] - row["predicted_s"]}
             for row in out["layers"] if row["simulated_s"] is not None
             and row["simulated_s"] - row["predicted_s"] > LATE_SHARE * value), None)
    return out


@dataclass(frozen=True)
class _Compiled:
    graph: Graph
    target: CrossbarTarget
    mapping: MappingRecord
    program: Program
    solve: dict[str, Any]
    predicted: dict[str, Any] | None
    timing: dict[str, float]
    """Seconds of each step: frontend, placement, codegen."""


def _compile(model: str | Path | onnx.ModelProto, target: str | Path | CrossbarTarget,
             mode: str, input_shapes: Mapping[str, tuple[int, ...]] | None,
             objective: str = "latency", settings: PlacementSettings | None = None,
             codegen: CodegenOptions | None = None,
             stage: Callable[[str], None] | None = None) -> _Compiled:
    """frontend -> lowering -> placement -> codegen (``stage`` told when codegen begins)."""
    from pimsolve.solve.options import SolveOptions
    from pimsolve.stages.placement.instance import build_instance
    from pimsolve.stages.placement.place import engine_clock, place

    settings = settings or PlacementSettings()
    loaded = _crossbar_target(target)
    started = time.perf_counter()
    inspection = inspect_model(model, target=loaded, input_shapes=input_shapes)
    timing = {"frontend_s": time.perf_counter() - started}
    started = time.perf_counter()
    predicted = None
    if settings.engine == "none":
        mapping = reference_mapping(inspection.workload, loaded, mode)
        solve = {"stage": "placement", "engine": "none", "status": "feasible",
                 "objective": None, "bound": None, "gap": None,
                 "wall_s": time.perf_counter() - started}
    else:
        instance = build_instance(inspection.graph, inspection.workload, loaded, mode,
                                  unfoldings=settings.unfoldings,
                                  max_layers_per_core=settings.max_layers_per_core)
        exact_progress = ga_progress = None
        if settings.progress is not None:
            exact_progress = settings.progress
            ga_progress = lambda g, best: settings.progress((g, best))  # noqa: E731
        outcome = place(instance, inspection.workload, objective=objective,
                        engine=settings.engine,
                        options=SolveOptions(time_limit_s=settings.time_limit_s,
                                             relative_gap=settings.relative_gap,
                                             seed=settings.seed, workers=settings.workers,
                                             clock=settings.clock),
                        export=settings.export_model, progress=exact_progress,
                        ga_progress=ga_progress)
        mapping = outcome.mapping
        r = outcome.result
        solve = {**r.as_record("placement"), "wall_s": time.perf_counter() - started,
                 "solver_wall_s": r.wall_s, "rule": outcome.rule,
                 "clock": engine_clock(outcome.engine, settings.clock),
                 "model_size": outcome.size, "objective_name": objective,
                 "objective_units": {"latency": "ns", "throughput": "ns (cycle)",
                                     "energy": "pJ", "edp": "pJ*ns"}[objective]}
        p = outcome.prediction
        predicted = {"cycle_s": p.time_ns * 1e-9, "latency_s": p.latency_ns * 1e-9,
                     "energy_j": p.energy_pj * 1e-12, "bottleneck": p.bottleneck,
                     "layer_finish_s": {name: f * 1e-9
                                        for name, f in p.layer_finish_ns.items()}}
    timing["placement_s"] = time.perf_counter() - started
    if stage is not None:
        stage("generating the program")
    started = time.perf_counter()
    program = generate(inspection.graph, inspection.workload, mapping, loaded, codegen)
    timing["codegen_s"] = time.perf_counter() - started
    return _Compiled(inspection.graph, loaded, mapping, program, solve, predicted, timing)


PROGRAM_JSONL_LIMIT = 50_000
"""Programs with more instructions are written in the compact form (program.npz)."""


def write_map_outputs(out: Path, result: MapResult) -> list[Path]:
    """Write mapping.json, report.json and program.jsonl (or program.npz) into ``out``."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{out}: cannot create the output directory ({exc.strerror})") from None
    if not out.is_dir():
        raise InputError(f"{out}: not a directory")
    written = [out / "mapping.json", out / "report.json"]
    written[0].write_text(to_json(result.mapping), encoding="utf-8")
    written[1].write_text(json.dumps(result.report, indent=1, sort_keys=True) + "\n",
                          encoding="utf-8")
    if result.program.instructions > PROGRAM_JSONL_LIMIT:
        path, stale = out / "program.npz", out / "program.jsonl"
        path.write_bytes(result.program.to_npz())
    else:
        path, stale = out / "program.jsonl", out / "program.npz"
        path.write_text(result.program.to_jsonl(), encoding="utf-8")
    if stale.exists():
        stale.unlink()  # our own output of an earlier run, so `simulate` reads the new one
    return [*written, path]


def simulate_saved(directory: str | Path, *, target: str | Path | None = None,
                   check_only: bool = False) -> dict[str, Any]:
    """Re-score (or with ``check_only`` only verify) a saved mapping and program."""
    folder = Path(directory)
    if not folder.is_dir():
        raise InputError(f"{folder}: not a directory (expected the --out of `pimsolve map`)")
    mapping_file = folder / "mapping.json"
    if not mapping_file.is_file():
        raise InputError(f"{folder}: no mapping.json")
    try:
        mapping = from_json(MappingRecord, mapping_file.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(f"{mapping_file}: not a valid mapping "
                         f"({str(exc).splitlines()[0]})") from None
    try:
        if (folder / "program.npz").is_file():
            program = Program.from_npz((folder / "program.npz").read_bytes())
        elif (folder / "program.jsonl").is_file():
            program = Program.from_jsonl((folder / "program.jsonl").read_text(encoding="utf-8"))
        else:
            raise InputError(f"{folder}: no program.jsonl or program.npz")
    except (ValueError, KeyError, OSError) as exc:
        raise InputError(f"{folder}: the program cannot be read ({exc})") from None
    loaded = _crossbar_target(target or program.target)
    solves = []
    report_file = folder / "report.json"
    if report_file.is_file():
        try:
            solves = json.loads(report_file.read_text(encoding="utf-8")).get("solves", [])
        except ValueError:
            solves = []
    return score(mapping, program, loaded, solves, check_only=check_only)


@dataclass(frozen=True)
class FunctionalCheck:
    """The program's outputs against onnxruntime's, per graph output."""

    max_abs_error: float
    max_rel_error: float
    """Max abs error over the max magnitude of the reference output."""
    outputs: dict[str, tuple[np.ndarray, np.ndarray]]
    """Output name -> (program result, onnxruntime result), ONNX shapes."""


def functional_check(model: str | Path | onnx.ModelProto, *,
                     target: str | Path | CrossbarTarget, mode: str = "ll", seed: int = 0,
                     quantize: bool = False,
                     settings: PlacementSettings | None = None,
                     codegen: CodegenOptions | None = None) -> FunctionalCheck:
    """Map ``model`` (reference mapping unless ``settings`` choose an engine), generate its
    program (``codegen`` options), run it on real numbers (weights from the file, seeded
    inputs), compare with onnxruntime."""
    source = resolve_model(model) if isinstance(model, (str, Path)) else model
    compiled = _compile(source, target, mode, None, MODES_OBJECTIVE[mode], settings, codegen)
    return check_program(source, compiled.graph, compiled.program, compiled.target,
                         seed=seed, quantize=quantize)


def check_program(source: onnx.ModelProto, graph: Graph, program: Program,
                  target: CrossbarTarget, *, seed: int = 0,
                  quantize: bool = False) -> FunctionalCheck:
    """Run an already generated ``program`` of ``source`` on real numbers (weights from the
    file, seeded inputs) and compare its outputs with onnxruntime's."""
    from pimsolve.codegen.contents import crossbar_blocks, from_stored, global_image
    from pimsolve.frontend.reference import reference_outputs, seeded_inputs
    from pimsolve.frontend.weights import layer_weights
    from pimsolve.simulate.execute import Quantization, execute

    weights = {k: (w.weight, w.bias) for k, w in layer_weights(source, graph, seed=seed).items()}
    inputs = seeded_inputs({t.name: t.shape for t in graph.inputs}, seed)
    memory = global_image(program, inputs, weights)
    q = Quantization(target.numerics.weight_bits, target.numerics.activation_bits,
                     target.crossbar.cell_bits) if quantize else None
    execute(program, crossbar_blocks(graph, program, weights), memory, quantize=q,
            cycles=program.pipeline_depth if program.mode == "ht" else 1)
    expected = reference_outputs(source, inputs)
    outputs, worst_abs, worst_rel = {}, 0.0, 0.0
    for t in graph.outputs:
        address, size = program.tensors[t.name]
        got = from_stored(memory[address:address + size], t.shape)
        want = np.asarray(expected[t.name], dtype=np.float64)
        err = float(np.abs(got - want).max())
        worst_abs = max(worst_abs, err)
        worst_rel = max(worst_rel, err / max(float(np.abs(want).max()), 1e-30))
        outputs[t.name] = (got, want)
    return FunctionalCheck(worst_abs, worst_rel, outputs)
