"""The public pipeline, one typed call per arrow of the flow.

>>> from pimsolve.api import inspect_model
>>> result = inspect_model("vgg8-28", target="isaac")
>>> result.workload.fits
True
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from pimsolve.codegen.generate import generate
from pimsolve.errors import InputError
from pimsolve.frontend import load_onnx, zoo
from pimsolve.ir import Graph, Workload
from pimsolve.ir.mapping import Mapping as MappingRecord
from pimsolve.ir.program import Program
from pimsolve.ir.serialize import from_json, to_json
from pimsolve.lowering import lower
from pimsolve.report.report import build_report
from pimsolve.simulate.bounds import bounds
from pimsolve.simulate.checks import verify
from pimsolve.simulate.metrics import measure
from pimsolve.simulate.simulator import run
from pimsolve.stages.placement import reference_mapping
from pimsolve.target import CrossbarTarget, DramPimTarget, load_target

__all__ = ["Inspection", "inspect_model", "resolve_model", "MapResult", "map_model",
           "write_map_outputs", "simulate_saved", "MODES", "FunctionalCheck",
           "functional_check"]

MODES = {"latency": "ll", "throughput": "ht", "energy": "ht", "edp": "ht"}
"""The mode each objective implies unless ``mode`` says otherwise."""


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


ENGINES = ("none",)
"""Placement engines available so far ('none': no replication, greedy placement)."""


def _crossbar_target(target: str | Path | CrossbarTarget | DramPimTarget) -> CrossbarTarget:
    loaded = target if isinstance(target, (CrossbarTarget, DramPimTarget)) else load_target(
        target)
    if isinstance(loaded, DramPimTarget):
        raise InputError(f"target '{loaded.name}' is a DRAM-PIM target: map needs a crossbar "
                         "target; for DRAM-PIM kernels use `pimsolve kernel`")
    return loaded


def score(mapping: MappingRecord, program: Program, target: CrossbarTarget,
          solves: list[dict[str, Any]], *, check_only: bool = False) -> dict[str, Any]:
    """Verify ``program``, and unless ``check_only`` simulate it: the report data."""
    checks = verify(program, target)
    if check_only:
        return build_report(mapping, None, None, checks, solves)
    timeline = run(program, target)
    return build_report(mapping, measure(program, target, timeline), bounds(program, target),
                        checks, solves)


def map_model(model: str | Path | onnx.ModelProto, *,
              target: str | Path | CrossbarTarget, objective: str = "latency",
              mode: str | None = None, engine: str = "none",
              input_shapes: Mapping[str, tuple[int, ...]] | None = None) -> MapResult:
    """frontend -> placement -> codegen -> simulate -> report.

    ``objective`` picks the mode (latency: low-latency 'll'; throughput, energy, edp: 'ht')
    unless ``mode`` is given.
    """
    if objective not in MODES:
        raise InputError(f"objective must be one of {', '.join(MODES)}, not {objective!r}")
    mode = mode or MODES[objective]
    if mode not in ("ht", "ll"):
        raise InputError(f"mode must be 'ht' or 'll', not {mode!r}")
    if engine not in ENGINES:
        raise InputError(f"engine {engine!r} is not available yet; engines: "
                         f"{', '.join(ENGINES)}")
    compiled = _compile(model, target, mode, input_shapes)
    solve = {"stage": "placement", "engine": engine, "status": "feasible", "objective": None,
             "bound": None, "gap": None, "wall_s": compiled.placement_s}
    return MapResult(compiled.mapping, compiled.program,
                     score(compiled.mapping, compiled.program, compiled.target, [solve]))


@dataclass(frozen=True)
class _Compiled:
    graph: Graph
    target: CrossbarTarget
    mapping: MappingRecord
    program: Program
    placement_s: float


def _compile(model: str | Path | onnx.ModelProto, target: str | Path | CrossbarTarget,
             mode: str, input_shapes: Mapping[str, tuple[int, ...]] | None) -> _Compiled:
    """frontend -> lowering -> reference placement -> codegen."""
    loaded = _crossbar_target(target)
    inspection = inspect_model(model, target=loaded, input_shapes=input_shapes)
    started = time.perf_counter()
    mapping = reference_mapping(inspection.workload, loaded, mode)
    placement_s = time.perf_counter() - started
    program = generate(inspection.graph, inspection.workload, mapping, loaded)
    return _Compiled(inspection.graph, loaded, mapping, program, placement_s)


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
                     quantize: bool = False) -> FunctionalCheck:
    """Map ``model`` with the reference mapping, run the program on real numbers (weights
    from the file, seeded inputs) and compare with onnxruntime."""
    from pimsolve.codegen.contents import crossbar_blocks, from_stored, global_image
    from pimsolve.frontend.reference import reference_outputs, seeded_inputs
    from pimsolve.frontend.weights import layer_weights
    from pimsolve.simulate.execute import Quantization, execute

    source = resolve_model(model) if isinstance(model, (str, Path)) else model
    compiled = _compile(source, target, mode, None)
    graph, program, loaded = compiled.graph, compiled.program, compiled.target
    weights = {k: (w.weight, w.bias) for k, w in layer_weights(source, graph, seed=seed).items()}
    inputs = seeded_inputs({t.name: t.shape for t in graph.inputs}, seed)
    memory = global_image(program, inputs, weights)
    q = Quantization(loaded.numerics.weight_bits, loaded.numerics.activation_bits,
                     loaded.crossbar.cell_bits) if quantize else None
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
