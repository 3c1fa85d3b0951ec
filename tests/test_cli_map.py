"""`pimsolve map --engine none` and `pimsolve simulate DIR`: files, schemas, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest

from pimsolve.api import _fidelity
from pimsolve.ir.mapping import Mapping
from pimsolve.ir.program import Program
from pimsolve.ir.serialize import from_json
from tests.simulate.test_functional import conv_relu_pool_fc
from tests.test_cli import assert_one_line_error, run


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("model") / "crpf.onnx"
    onnx.save(conv_relu_pool_fc(), path)
    return path


@pytest.mark.parametrize("objective,mode", [("latency", "ll"), ("throughput", "ht")])
def test_map_writes_mapping_report_and_program(capsys, tmp_path: Path, model_file: Path,
                                               objective: str, mode: str) -> None:
    out = tmp_path / "out"
    code, stdout, _ = run(capsys, "map", str(model_file), "--target", "puma", "--objective",
                          objective, "--engine", "none", "--out", str(out), "--json")
    assert code == 0
    report = json.loads(stdout)
    assert report == json.loads((out / "report.json").read_text())
    assert report["schema_version"] == 1 and report["mode"] == mode
    for key in ("latency_s", "throughput_per_s", "energy_j"):
        assert report["metrics"][key] > 0
        assert report["bounds"][key] > 0
    # the bounds are bounds: nothing beats them
    assert report["metrics"]["latency_s"] >= report["bounds"]["latency_s"]
    assert report["metrics"]["throughput_per_s"] <= report["bounds"]["throughput_per_s"]
    assert report["metrics"]["energy_j"] >= report["bounds"]["energy_j"]
    assert report["checks"] == {"passed": True, "violations": []}
    assert [s["stage"] for s in report["solves"]] == ["placement"]
    assert report["solves"][0]["status"] == "feasible"  # a heuristic is never "optimal"
    mapping = from_json(Mapping, (out / "mapping.json").read_text())
    assert mapping.engine == "none" and all(p.replication == 1 for p in mapping.layers)
    program = Program.from_jsonl((out / "program.jsonl").read_text())
    assert program.instructions == report["metrics"]["instructions"]
    # re-scoring the saved files gives the same metrics, byte for byte
    code, again, _ = run(capsys, "simulate", str(out), "--json")
    assert code == 0 and json.loads(again)["metrics"] == report["metrics"]


def test_map_is_deterministic(capsys, tmp_path: Path, model_file: Path) -> None:
    for name in ("a", "b"):
        assert run(capsys, "map", str(model_file), "-t", "isaac", "--out",
                   str(tmp_path / name))[0] == 0
    for file in ("mapping.json", "report.json", "program.jsonl"):
        first = (tmp_path / "a" / file).read_text()
        second = (tmp_path / "b" / file).read_text()
        if file == "report.json":  # the wall times (solve, steps) are the only clocks in it
            first, second = (json.dumps({**json.loads(t), "timing": None, "solves": [
                {k: v for k, v in s.items() if not k.endswith("wall_s")}
                for s in json.loads(t)["solves"]]}) for t in (first, second))
        assert first == second, file


def test_map_tells_each_step_and_times_it(capsys, tmp_path: Path, model_file: Path) -> None:
    """After the solve, the live line on stderr names the step being worked on (codegen,
    the verifier, the simulator; not with --json), and the report gives each step's
    seconds, as `simulate` does for its own."""
    code, _, err = run(capsys, "map", str(model_file), "-t", "isaac", "--engine", "balance",
                       "--out", str(tmp_path / "out"))
    assert code == 0
    steps = [err.find(text) for text in ("generating the program", "verifying",
                                         "simulating")]
    assert -1 not in steps and steps == sorted(steps), err
    code, stdout, err = run(capsys, "map", str(model_file), "-t", "isaac", "--engine",
                            "balance", "--json")
    assert code == 0 and "verifying" not in err
    timing = json.loads(stdout)["timing"]
    assert set(timing) == {"frontend_s", "placement_s", "codegen_s", "verify_s", "simulate_s"}
    assert all(seconds >= 0 for seconds in timing.values())
    code, stdout, _ = run(capsys, "simulate", str(tmp_path / "out"), "--json")
    assert code == 0 and set(json.loads(stdout)["timing"]) == {"verify_s", "simulate_s"}


def test_map_shows_the_solve_in_the_objectives_unit(capsys, tmp_path: Path,
                                                    model_file: Path) -> None:
    """The exact engine's live line gives incumbent and bound in seconds (they were model
    ticks), the last incumbent the placement's value; off a terminal each update is a line
    of its own, not a carriage return."""
    from pimsolve.report.render import si

    code, _, err = run(capsys, "map", str(model_file), "-t", "isaac", "--engine", "cpsat",
                       "--out", str(tmp_path / "out"))
    assert code == 0 and "\r" not in err
    lines = [line for line in err.splitlines() if "incumbent" in line]
    assert lines, err
    solve = json.loads((tmp_path / "out" / "report.json").read_text())["solves"][0]
    assert solve["objective_units"] == "ns"
    shown = f"incumbent latency {si(solve['objective'] * 1e-9, 's')}  bound "
    assert shown in lines[-1], (shown, lines[-1])


def test_simulate_check_rejects_a_corrupted_program(capsys, tmp_path: Path,
                                                    model_file: Path) -> None:
    out = tmp_path / "out"
    assert run(capsys, "map", str(model_file), "-t", "isaac", "--out", str(out))[0] == 0
    lines = (out / "program.jsonl").read_text().splitlines()
    mvm = next(i for i, line in enumerate(lines) if '"op": "mvm"' in line)
    del lines[mvm]
    (out / "program.jsonl").write_text("\n".join(lines) + "\n")
    code, _, err = run(capsys, "simulate", str(out), "--check")
    assert_one_line_error(code, err, "violations", "computed zero or two times")


def test_map_bad_inputs_are_one_line_errors(capsys, tmp_path: Path, model_file: Path) -> None:
    assert_one_line_error(*run(capsys, "map", str(model_file), "-t", "attacc")[::2],
                          "DRAM-PIM")
    assert_one_line_error(*run(capsys, "map", str(model_file), "-t", "isaac", "--engine",
                               "annealing")[::2], "unknown engine")
    assert_one_line_error(*run(capsys, "map", str(model_file), "-t", "isaac", "--objective",
                               "speed")[::2], "objective")
    assert_one_line_error(*run(capsys, "map", str(model_file), "-t", "isaac", "--ll-order",
                               "fifo")[::2], "--ll-order")
    assert_one_line_error(*run(capsys, "map", "vgg16", "-t", "compass-s")[::2],
                          "crossbars")
    assert_one_line_error(*run(capsys, "simulate", str(tmp_path / "nowhere"))[::2],
                          "not a directory")
    (tmp_path / "empty").mkdir()
    assert_one_line_error(*run(capsys, "simulate", str(tmp_path / "empty"))[::2],
                          "no mapping.json")


@pytest.mark.parametrize("engine", ["cpsat", "balance", "ga"])
def test_map_engines_write_a_verified_program_with_its_solve_record(
        capsys, tmp_path: Path, model_file: Path, engine: str) -> None:
    """Every engine's mapping goes through codegen and passes the verifier; the exact engine
    reports its bound, heuristics never claim optimality; the prediction sits beside the
    simulated metric."""
    out = tmp_path / engine
    code, stdout, _ = run(capsys, "map", str(model_file), "--target", "arch-c", "--objective",
                          "throughput", "--engine", engine, "--time-limit", "2", "--out",
                          str(out), "--json")
    assert code == 0
    report = json.loads(stdout)
    assert report["checks"]["passed"]
    solve = report["solves"][0]
    if engine == "cpsat":  # optimal, or stopped by the time limit with a proven bound
        assert solve["status"] in ("optimal", "feasible")
        assert solve["bound"] <= solve["objective"] + 1e-9
    else:
        assert solve["status"] == "feasible" and solve["bound"] is None
    assert report["prediction"]["metric"] == "cycle_s"
    assert report["prediction"]["simulated"] == report["metrics"]["cycle_s"]


@pytest.mark.parametrize(("engine", "flags", "clock"), [
    ("cpsat", [], "work"), ("ga", [], "work"), ("cpsat", ["--wall-clock"], "wall"),
    ("milp-highs", [], "wall")])
def test_map_records_the_clock_its_time_limit_counted(capsys, model_file: Path, engine: str,
                                                       flags: list[str], clock: str) -> None:
    """--time-limit counts work unless --wall-clock says seconds; the MILP engines, which
    count no work, always run on the clock; the solve record says which."""
    code, stdout, _ = run(capsys, "map", str(model_file), "--target", "arch-c", "--objective",
                          "throughput", "--engine", engine, "--time-limit", "1", *flags,
                          "--json")
    assert code == 0
    solve = json.loads(stdout)["solves"][0]
    assert solve["clock"] == clock
    if engine == "cpsat":
        assert ("max_deterministic_time" in solve["params"]) == (clock == "work")


def test_map_exports_the_exact_model(capsys, tmp_path: Path, model_file: Path) -> None:
    path = tmp_path / "placement.mps"
    code, _, _ = run(capsys, "map", str(model_file), "--target", "arch-c", "--engine", "cpsat",
                     "--export-model", str(path), "--json")
    assert code == 0
    assert path.read_text().startswith("*SENSE:Minimize") or "ROWS" in path.read_text()


def test_map_refuses_to_export_a_full_ll_model_too_large(capsys, tmp_path: Path,
                                                         model_file: Path, monkeypatch) -> None:
    """LL: the full model holds windows per option of each layer; past the limit the export
    is a one-line error (exit 2) and writes nothing."""
    from pimsolve.stages.placement import place

    monkeypatch.setattr(place, "EXPORT_MAX_WINDOWS", 10)
    path = tmp_path / "placement.mps"
    code, _, err = run(capsys, "map", str(model_file), "--target", "arch-c", "--objective",
                       "latency", "--export-model", str(path))
    assert code == 2 and "option windows" in err and len(err.strip().splitlines()) == 1
    assert not path.exists()


def test_map_rejects_a_bad_engine_time_limit_and_workers(capsys, model_file: Path) -> None:
    code, _, err = run(capsys, "map", str(model_file), "--target", "arch-c", "--engine", "sa")
    assert code == 2 and "unknown engine" in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "map", str(model_file), "--target", "arch-c", "--time-limit",
                       "0")
    assert code == 2 and "--time-limit" in err
    code, _, err = run(capsys, "map", str(model_file), "--target", "arch-c", "--workers", "0")
    assert code == 2 and "--workers" in err and len(err.strip().splitlines()) == 1


def test_map_ll_order_picks_the_codegen_order(capsys, tmp_path: Path, model_file: Path) -> None:
    """--ll-order passes generates PIMCOMP's Alg. 2 program for the same mapping; both are
    verified, and they differ."""
    programs = {}
    for order in ("timed", "passes"):
        out = tmp_path / order
        code, stdout, _ = run(capsys, "map", str(model_file), "--target", "puma", "--engine",
                              "none", "--ll-order", order, "--out", str(out), "--json")
        assert code == 0 and json.loads(stdout)["checks"]["passed"]
        programs[order] = Program.from_jsonl((out / "program.jsonl").read_text())
    assert programs["timed"] != programs["passes"]


def test_map_warns_when_the_program_fails_the_checks(capsys, tmp_path: Path,
                                                     model_file: Path) -> None:
    """A target whose cores have 0.25 KiB of local memory: the program, written all the same,
    passes it, and map says so in one line on stderr (the report's checks list it)."""
    text = (Path(__file__).parents[1] / "targets" / "isaac.yaml").read_text()
    assert "    size_kib: 64\n" in text
    target = tmp_path / "tiny.yaml"
    target.write_text(text.replace("    size_kib: 64\n", "    size_kib: 0.25\n"))
    out = tmp_path / "out"
    code, stdout, err = run(capsys, "map", str(model_file), "--target", str(target),
                            "--engine", "none", "--out", str(out), "--json")
    report = json.loads(stdout)
    assert code == 0 and not report["checks"]["passed"]
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: the program fails")
    assert "local memory" in lines[0] or "local addresses" in lines[0]
    assert (out / "report.json").is_file()


def test_ll_fidelity_names_the_first_layer_the_simulator_finishes_late() -> None:
    """The model finishes layers a to d at 10, 50, 90 and 100 us (latency 100 us), the
    simulator at 14, 60, 120 and 130: a is 4 us late, under 5% of 100 us; b, 10 us late, is
    where they part. HT keeps only the cycle beside the simulator's."""
    predicted = {"cycle_s": 100e-6, "latency_s": 100e-6, "energy_j": 1.0, "bottleneck": "path",
                 "layer_finish_s": {"a": 10e-6, "b": 50e-6, "c": 90e-6, "d": 100e-6}}
    metrics = {"cycle_s": 130e-6, "latency_s": 130e-6,
               "layer_finish_s": {"a": 14e-6, "b": 60e-6, "c": 120e-6, "d": 130e-6}}
    out = _fidelity(predicted, metrics, "ll")
    assert out["relative_error"] == pytest.approx(-30 / 130)
    assert [row["layer"] for row in out["layers"]] == ["a", "b", "c", "d"]
    assert out["layers"][2] == {"layer": "c", "predicted_s": 90e-6, "simulated_s": 120e-6}
    assert out["late_layer"]["layer"] == "b"
    assert out["late_layer"]["late_s"] == pytest.approx(10e-6)
    assert "layer_finish_s" not in out
    on_time = {**metrics, "layer_finish_s": {"a": 10e-6, "b": 54e-6, "c": 94e-6, "d": 104e-6}}
    assert _fidelity(predicted, on_time, "ll")["late_layer"] is None
    ht = _fidelity(predicted, metrics, "ht")
    assert ht["metric"] == "cycle_s" and "layers" not in ht and "late_layer" not in ht


def test_ll_map_reports_the_model_layer_by_layer(capsys, model_file: Path) -> None:
    """An LL map keeps each crossbar layer's finish in the model beside the simulator's; the
    table shows the model's latency and its error."""
    code, stdout, _ = run(capsys, "map", str(model_file), "--target", "arch-c", "--objective",
                          "latency", "--engine", "balance", "--json")
    assert code == 0
    report = json.loads(stdout)
    prediction, simulated = report["prediction"], report["metrics"]["layer_finish_s"]
    rows = prediction["layers"]
    assert rows and all(row["simulated_s"] == simulated[row["layer"]] for row in rows)
    assert max(row["predicted_s"] for row in rows) <= prediction["latency_s"] + 1e-15
    assert max(simulated.values()) <= report["metrics"]["latency_s"] + 1e-15
    code, text, _ = run(capsys, "map", str(model_file), "--target", "arch-c", "--objective",
                        "latency", "--engine", "balance")
    assert code == 0 and "model's latency_s" in text


@pytest.mark.parametrize("broken", [False, True])
def test_the_verifier_beside_the_simulator_reports_the_same(monkeypatch, broken: bool) -> None:
    """``score`` with the verifier in a forked process beside the simulator (from 0
    instructions on, two cores) gives the report it gives verifying first, a program with a
    violation (an mvm on an AG slot of another core) included."""
    from pimsolve import api, parallel
    from pimsolve.ir.program import Op
    from pimsolve.lowering import lower
    from pimsolve.stages.placement import reference_mapping
    from tests.simulate.test_checks import edited, small_ll, tiny_cnn

    program, target = small_ll()
    if broken:
        i = program.cores[3].code[:, 0].tolist().index(Op.MVM)
        program = edited(program, 3, i, a=2)
    graph = api.load_onnx(tiny_cnn())
    mapping = reference_mapping(lower(graph, target), target, "ll")
    monkeypatch.setattr(parallel, "cores_to_run_on", lambda: 2)
    reports = []
    for beside_from in (10**9, 0):
        monkeypatch.setattr(api, "VERIFY_BESIDE_FROM", beside_from)
        report = api.score(mapping, program, target, [])
        assert set(report.pop("timing")) == {"verify_s", "simulate_s"}
        reports.append(report)
    assert reports[0] == reports[1]
    assert reports[1]["checks"]["passed"] is not broken


def test_score_tells_each_step_as_it_runs(monkeypatch) -> None:
    """Below ``VERIFY_BESIDE_FROM`` instructions ``score`` verifies, then simulates, and tells
    each step just before it runs; from there on "verifying" is told as the forked verifier
    starts, before the simulator. Fails with the verifier left to run after the simulator
    when it is not forked."""
    from pimsolve import api, parallel
    from pimsolve.lowering import lower
    from pimsolve.stages.placement import reference_mapping
    from tests.simulate.test_checks import small_ll, tiny_cnn

    program, target = small_ll()
    mapping = reference_mapping(lower(api.load_onnx(tiny_cnn()), target), target, "ll")
    events: list[str] = []
    verify, simulate = api.verify, api.run
    monkeypatch.setattr(api, "verify", lambda *a: events.append("verify") or verify(*a))
    monkeypatch.setattr(api, "run", lambda *a: events.append("run") or simulate(*a))
    tell = events.append
    api.score(mapping, program, target, [], stage=lambda text: tell(text.split()[0]))
    assert events == ["verifying", "verify", "simulating", "run"]
    events.clear()
    monkeypatch.setattr(parallel, "cores_to_run_on", lambda: 2)
    monkeypatch.setattr(api, "VERIFY_BESIDE_FROM", 0)
    api.score(mapping, program, target, [], stage=lambda text: tell(text.split()[0]))
    assert events == ["verifying", "simulating", "run"]  # the verifier ran in the child
