"""The ``pimsolve`` command line: a thin layer over ``pimsolve.api``; the only printer.

Exit codes: 0 success, 2 bad input or an infeasible request (one line on stderr, no
traceback), 1 a bug in pimsolve.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from pimsolve import __version__
from pimsolve.errors import PimsolveError

__all__ = ["app", "main"]

app = typer.Typer(
    name="pimsolve", no_args_is_help=True, add_completion=False,
    pretty_exceptions_enable=False,
    help="Exact mapping compiler for processing-in-memory accelerators.")
targets_app = typer.Typer(
    no_args_is_help=False, invoke_without_command=True,
    help="List the bundled targets; `show NAME` prints one, `schema` the JSON schema.")
app.add_typer(targets_app, name="targets")


def _console() -> Console:
    console = Console()
    return console if console.is_terminal else Console(width=200)


def _echo(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", help="Print the version.")]
          = False) -> None:
    if version:
        _echo(f"pimsolve {__version__}")
        raise typer.Exit()


@app.command("inspect")
def inspect_cmd(
    model: Annotated[str, typer.Argument(
        help="An ONNX file, or a bundled model name (see `pimsolve models`).")],
    target: Annotated[str | None, typer.Option(
        "--target", "-t", help="Bundled target name or target YAML file.")] = None,
    input_shape: Annotated[list[str] | None, typer.Option(
        "--input-shape", help="Static input shape NAME=1x3x224x224 (repeatable).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Show, layer by layer, what MODEL needs from TARGET: unfolded matrices, array groups,
    crossbars, and whether it fits on chip."""
    from pimsolve.api import inspect_model
    from pimsolve.frontend import parse_input_shape
    from pimsolve.report.inspection import inspection_report, target_summary
    from pimsolve.report.render import inspection_tables

    shapes = dict(parse_input_shape(text) for text in input_shape or [])
    result = inspect_model(model, target=target, input_shapes=shapes)
    summary = target_summary(result.target) if result.target is not None else None
    report = inspection_report(result.graph, result.workload, summary)
    if as_json:
        _echo(json.dumps(report, indent=1, sort_keys=True))
        return
    console = _console()
    for table in inspection_tables(report):
        console.print(table)


@app.command("models")
def models_cmd() -> None:
    """List the bundled benchmark models (built in memory with shape-only weights)."""
    from pimsolve.frontend import zoo

    for name in zoo.names():
        info = zoo.MODELS[name]
        _echo(f"{name:18s} {info.description}")


@targets_app.callback()
def targets_cmd(ctx: typer.Context) -> None:
    """List the bundled targets."""
    if ctx.invoked_subcommand is not None:
        return
    from pimsolve.report.inspection import target_summary
    from pimsolve.report.render import targets_table
    from pimsolve.target import bundled_targets, load_target

    rows = [target_summary(load_target(path)) for path in bundled_targets().values()]
    _console().print(targets_table(rows))


@targets_app.command("show")
def targets_show(name: Annotated[str, typer.Argument(help="Bundled name or YAML file.")]) -> None:
    """Validate a target and print its file, with derived totals."""
    from pimsolve.report.inspection import target_summary
    from pimsolve.target import bundled_targets, load_target

    target = load_target(name)
    path = Path(name) if Path(name).is_file() else bundled_targets()[name]
    summary = target_summary(target)
    _echo(f"# {summary['name']} ({summary['kind']}, {summary['mode']}): {summary['capacity']}")
    _echo(path.read_text(encoding="utf-8"))


@targets_app.command("schema")
def targets_schema() -> None:
    """Print the JSON schema of target files."""
    from pimsolve.target import target_json_schema

    _echo(target_json_schema())


def _print_report(report: dict, as_json: bool) -> None:
    if as_json:
        _echo(json.dumps(report, indent=1, sort_keys=True))
        return
    from pimsolve.report.render import map_tables

    console = _console()
    for table in map_tables(report):
        console.print(table)


@app.command("map")
def map_cmd(
    model: Annotated[str, typer.Argument(
        help="An ONNX file, or a bundled model name (see `pimsolve models`).")],
    target: Annotated[str, typer.Option(
        "--target", "-t", help="Bundled target name or target YAML file.")],
    objective: Annotated[str, typer.Option(
        help="latency (low-latency mode), throughput, energy or edp (high-throughput mode).")]
    = "latency",
    mode: Annotated[str | None, typer.Option(
        help="ht (batch pipeline) or ll (element pipeline); default: from the objective.")]
    = None,
    engine: Annotated[str, typer.Option(
        help="Placement engine: cpsat, milp, milp-highs (exact), ga, auto (exact, GA when too "
        "large), balance, uniform, w0h0, one-layer-per-core, no-replication (baselines), "
        "none (reference: no replication).")] = "auto",
    time_limit: Annotated[float, typer.Option(
        "--time-limit", help="Seconds the solver or GA may run (after the baselines the "
        "exact engines start from), counted in work (see --wall-clock); the best placement "
        "found is kept, with its gap.")] = 10.0,
    gap: Annotated[float, typer.Option(
        help="Exact engines stop once the proven relative gap is at most this (0: prove "
        "optimality).")] = 1e-3,
    seed: Annotated[int, typer.Option(help="Random seed of the solver or GA.")] = 0,
    workers: Annotated[int, typer.Option(
        help="Search workers of the exact engines (CP-SAT interleaves them, so runs "
        "repeat; one for a solve given less than 3 deterministic seconds and for the "
        "decomposition's masters).")] = 2,
    wall_clock: Annotated[bool, typer.Option(
        "--wall-clock", help="Count --time-limit in seconds of the clock. By default it "
        "counts work (CP-SAT's deterministic time, the heuristics' own steps, priced in "
        "seconds of a reference machine), so the same inputs and options give the same "
        "output files on every machine; on the clock, a run the limit stops can differ "
        "from run to run. The MILP engines always use the clock.")] = False,
    export_model: Annotated[Path | None, typer.Option(
        "--export-model", help="Write the exact model (.mps, .lp or .pb.txt): the full "
        "formulation, which the engines solve by decomposition.")] = None,
    unfoldings: Annotated[str, typer.Option(
        help="all (every valid unfolding the codegen emits) or default (IK2,O,1).")] = "all",
    max_layers_per_core: Annotated[int | None, typer.Option(
        "--max-layers-per-core", help="Optional cap on layers sharing a core.")] = None,
    out: Annotated[Path | None, typer.Option(
        help="Write mapping.json, report.json and the program here.")] = None,
    input_shape: Annotated[list[str] | None, typer.Option(
        "--input-shape", help="Static input shape NAME=1x3x224x224 (repeatable).")] = None,
    ll_order: Annotated[str, typer.Option(
        "--ll-order", help="Low-latency code generation: timed (a list scheduler on the "
        "target's latencies) or passes (PIMCOMP Alg. 2 as published).")] = "timed",
    as_json: Annotated[bool, typer.Option("--json", help="Print report.json.")] = False,
) -> None:
    """Map MODEL onto TARGET: place (replication, unfolding, AGs per core), generate the
    per-core program, simulate and verify it."""
    from pimsolve.api import PlacementSettings, map_model, write_map_outputs
    from pimsolve.codegen.generate import CodegenOptions
    from pimsolve.errors import InputError as PimsolveInputError
    from pimsolve.frontend import parse_input_shape

    if ll_order not in ("timed", "passes"):
        raise PimsolveInputError(f"--ll-order must be 'timed' or 'passes', not '{ll_order}'")
    if unfoldings not in ("all", "default"):
        raise PimsolveInputError(f"--unfoldings must be 'all' or 'default', not '{unfoldings}'")
    if time_limit <= 0:
        raise PimsolveInputError(f"--time-limit must be positive, not {time_limit}")
    if not 0 <= gap < 1:
        raise PimsolveInputError(f"--gap must be in [0, 1), not {gap}")
    if workers < 1:
        raise PimsolveInputError(f"--workers must be at least 1, not {workers}")
    shapes = dict(parse_input_shape(text) for text in input_shape or [])
    settings = PlacementSettings(engine=engine, time_limit_s=time_limit, relative_gap=gap,
                                 seed=seed, workers=workers,
                                 clock="wall" if wall_clock else "work",
                                 export_model=export_model, unfoldings=unfoldings,
                                 max_layers_per_core=max_layers_per_core,
                                 progress=None if as_json else _progress_line(objective))
    _PROGRESS["shown"] = ""
    result = map_model(model, target=target, objective=objective, mode=mode,
                       settings=settings, input_shapes=shapes,
                       codegen=CodegenOptions(ll_order=ll_order),
                       stage=None if as_json else _stage_line)
    if not as_json:
        if _PROGRESS["shown"] and sys.stderr.isatty():  # the last step's line gives way
            typer.echo("\r" + " " * 70 + "\r", nl=False, err=True)
        _PROGRESS["shown"] = ""
        solve = result.report["solves"][0]
        if solve.get("rule"):
            _echo(solve["rule"])
    if out is not None:
        written = write_map_outputs(out, result)
        if not as_json:
            _echo("wrote " + ", ".join(str(p) for p in written))
    _print_report(result.report, as_json)
    violations = result.report["checks"]["violations"]
    if violations:
        sys.stderr.write(f"warning: the program fails {len(violations)} of the simulator's "
                         f"checks, e.g. {violations[0]}; its metrics are not a valid "
                         "program's\n")


_PROGRESS = {"shown": ""}
"""What the live line on stderr shows: '' nothing, 'solve' the solver's progress, 'stage'
the step being worked on after it."""

_OBJECTIVE_UNITS = {"latency": ("latency", 1e-9, "s"), "throughput": ("cycle", 1e-9, "s"),
                    "energy": ("energy", 1e-12, "J"), "edp": ("EDP", 1e-21, "J s")}
"""How the live line shows a placement's value (``predict``'s ns, pJ or pJ x ns)."""


def _live(text: str) -> None:
    """Rewrite the live line on a terminal; elsewhere (a log) one line per update."""
    if sys.stderr.isatty():
        typer.echo("\r" + text.ljust(70), nl=False, err=True)
    else:
        typer.echo(text, err=True)


def _progress_line(objective: str):
    """The live line while solving: incumbent, bound and gap (exact) or best (GA), in the
    objective's unit."""
    from pimsolve.report.render import si

    name, scale, unit = _OBJECTIVE_UNITS.get(objective, (objective, 1.0, ""))

    def show(event) -> None:
        if isinstance(event, tuple):
            generation, best = event
            text = f"GA generation {generation}: best {name} {si(best * scale, unit)}"
        else:
            gap = event.gap
            text = (f"{event.wall_s:6.2f}s  incumbent {name} {si(event.objective * scale, unit)}"
                    f"  bound {si(event.bound * scale, unit)}"
                    f"  gap {'-' if gap is None else f'{gap:.2%}'}")
        _PROGRESS["shown"] = "solve"
        _live(text)

    return show


def _stage_line(text: str) -> None:
    """The live line after the solve (whose last line stays): the step being worked on."""
    if _PROGRESS["shown"] == "solve" and sys.stderr.isatty():
        typer.echo("", err=True)
    _PROGRESS["shown"] = "stage"
    _live(f"{text} ...")


@app.command("simulate")
def simulate_cmd(
    directory: Annotated[Path, typer.Argument(help="The --out folder of `pimsolve map`.")],
    target: Annotated[str | None, typer.Option(
        "--target", "-t", help="Target to score on (default: the one the program names).")]
    = None,
    check: Annotated[bool, typer.Option("--check", help="Only verify the program.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Re-score a saved mapping and program (exit code 2 when --check finds violations)."""
    from pimsolve.api import simulate_saved

    report = simulate_saved(directory, target=target, check_only=check)
    _print_report(report, as_json)
    if check and not report["checks"]["passed"]:
        sys.stderr.write(f"error: {len(report['checks']['violations'])} violations, e.g. "
                         f"{report['checks']['violations'][0]}\n")
        sys.exit(2)


@app.command("kernel")
def kernel_cmd(
    spec: Annotated[str, typer.Argument(
        help="A kernel spec file, or a built-in NAME:key=value,... "
        "(e.g. gemv:batch=4,in=5120,out=15360; red, va, relu, attn, qkv, proj, ffn_up, "
        "ffn_down).")],
    target: Annotated[str, typer.Option("--target", "-t",
                                        help="A DRAM-PIM target: hbm-pim, attacc or a YAML file.")],
    engine: Annotated[str, typer.Option(
        "--engine", help="cpsat | enumerate (both exact) | default (backend layout) | gpu.")]
    = "cpsat",
    seed: Annotated[int, typer.Option("--seed", help="CP-SAT random seed.")] = 0,
    time_limit: Annotated[float | None, typer.Option(
        "--time-limit", help="CP-SAT search wall-clock limit in seconds; when it binds, the "
        "best draft found is reported as 'feasible' (not proven optimal).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Pick the tiling draft of a DRAM-PIM kernel (DCC) and compare it with the baselines."""
    from pimsolve.errors import InputError as PimsolveInputError
    from pimsolve.kernels_api import compile_kernel
    from pimsolve.report.kernel import kernel_report, kernel_tables
    from pimsolve.solve.options import SolveOptions
    from pimsolve.stages.drafts.select import ENGINES

    if engine not in ENGINES:
        raise PimsolveInputError(f"--engine: unknown engine '{engine}'; engines: "
                                 f"{', '.join(ENGINES)}")
    if time_limit is not None and not time_limit > 0:
        raise PimsolveInputError(f"--time-limit must be positive, not {time_limit}")
    options = SolveOptions(seed=seed, time_limit_s=time_limit)
    report = kernel_report(compile_kernel(spec, target=target, engine=engine,  # type: ignore
                                          options=options))
    if as_json:
        _echo(json.dumps(report, indent=1, sort_keys=True))
        return
    for table in kernel_tables(report):
        _console().print(table)


@app.command("llm")
def llm_cmd(
    model: Annotated[str, typer.Option("--model", help="gpt3-13b, llama2-33b or opt-1.3b.")],
    target: Annotated[str, typer.Option("--target", "-t", help="A DRAM-PIM target.")],
    batch: Annotated[int, typer.Option("--batch")] = 1,
    tokens_in: Annotated[int, typer.Option("--tokens-in")] = 128,
    tokens_out: Annotated[int, typer.Option("--tokens-out")] = 128,
    engine: Annotated[str, typer.Option("--engine", help="cpsat | enumerate | default.")]
    = "cpsat",
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Time one LLM inference with each decode kernel on GPU or PIM (DCC Fig. 11)."""
    from pimsolve.errors import InputError as PimsolveInputError
    from pimsolve.kernels_api import compile_llm
    from pimsolve.report.kernel import llm_report, llm_tables
    from pimsolve.stages.drafts.select import ENGINES

    if engine not in ENGINES:
        raise PimsolveInputError(f"--engine: unknown engine '{engine}'; engines: "
                                 f"{', '.join(ENGINES)}")
    report = llm_report(compile_llm(model, target=target, batch=batch, tokens_in=tokens_in,
                                    tokens_out=tokens_out, engine=engine))  # type: ignore
    if as_json:
        _echo(json.dumps(report, indent=1, sort_keys=True))
        return
    for table in llm_tables(report):
        _console().print(table)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI and exit with its exit code (usage errors from typer exit with 2)."""
    try:
        app(args=argv)
    except PimsolveError as exc:
        message = " ".join(str(exc).split("\n"))
        sys.stderr.write(f"error: {message}\n")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    except Exception:  # a bug: keep the traceback, it is what the maintainers need
        traceback.print_exc()
        sys.stderr.write("error: internal error in pimsolve (a bug; please report it)\n")
        sys.exit(1)
