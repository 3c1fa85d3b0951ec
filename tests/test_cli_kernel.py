"""`pimsolve kernel` and `pimsolve llm`: exit codes, one-line errors and the JSON fields."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pimsolve.cli import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return info.value.code or 0, out, err


def _ok(capsys, *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    out, err = capsys.readouterr()
    return code, out, err


def test_kernel_json_fields(capsys) -> None:
    code, out, err = _ok(capsys, "kernel", "red:batch=2,size=1024", "--target", "hbm-pim",
                         "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["schema_version"] == 1 and report["kernel"] == "red"
    assert report["metrics"]["latency_s"] > 0 and report["metrics"]["energy_j"] > 0
    parts = report["draft"]["parts"]
    assert [p["dimension_set"] for p in parts] == ["b", "i"]
    assert all(len(p["draft"]) == 3 and p["draft"][0] * p["draft"][1] * p["draft"][2] >= 1
               for p in parts)
    assert parts[1]["draft"][2] == -(-1024 // (parts[1]["draft"][0] * parts[1]["draft"][1]))
    solve = report["solves"][0]
    assert solve["engine"] == "cpsat" and solve["status"] == "optimal"
    assert {"stage", "objective", "bound", "gap", "wall_s"} <= set(solve)
    assert report["baselines"]["gpu_s"] > 0 and report["baselines"]["default_layout_s"] > 0
    assert report["drafts"]["unpruned"] >= report["drafts"]["searched"]


def test_engines_agree_and_gpu_has_no_draft(capsys) -> None:
    reports = {}
    for engine in ("cpsat", "enumerate", "default", "gpu"):
        code, out, err = _ok(capsys, "kernel", "va:size=512", "-t", "hbm-pim", "--engine",
                             engine, "--json")
        assert code == 0, err
        reports[engine] = json.loads(out)
    lat = {k: r["metrics"]["latency_s"] for k, r in reports.items()}
    assert lat["cpsat"] == lat["enumerate"] <= lat["default"]
    assert reports["gpu"]["draft"] is None
    assert lat["gpu"] == reports["cpsat"]["baselines"]["gpu_s"]


def test_kernel_spec_file_and_table(tmp_path: Path, capsys) -> None:
    path = tmp_path / "k.txt"
    path.write_text("kernel mine\nloops i=64\ninput x[64]\noutput y[64]\ny[i] = relu(x[i])\n")
    code, out, err = _ok(capsys, "kernel", str(path), "--target", "hbm-pim", "--engine",
                         "enumerate")
    assert code == 0, err
    assert "mine on hbm-pim" in out and "latency" in out


@pytest.mark.parametrize("args, needle", [
    (["kernel", "relu:size=64", "--target", "attacc"], "cannot compute"),
    (["kernel", "attn:seq=64", "--target", "hbm-pim"], "needs a softmax unit"),
    (["kernel", "gemv:foo=3", "--target", "attacc"], "unknown key 'foo'"),
    (["kernel", "nope:x=1", "--target", "attacc"], "unknown built-in kernel"),
    (["kernel", "gemv", "--target", "isaac"], "crossbar target"),
    (["kernel", "gemv", "--target", "attacc", "--engine", "magic"], "unknown engine"),
    (["kernel", "missing/spec.k", "--target", "attacc"], "not found"),
    (["llm", "--model", "gpt9", "--target", "attacc"], "unknown model"),
    (["llm", "--model", "opt-1.3b", "--target", "attacc", "--batch", "0"], "positive"),
])
def test_bad_input_is_one_line_exit_2(capsys, args: list[str], needle: str) -> None:
    code, out, err = run(capsys, *args)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0]
    assert "Traceback" not in err


def test_malformed_spec_file(tmp_path: Path, capsys) -> None:
    path = tmp_path / "bad.k"
    path.write_text("kernel bad\nloops i=4\ninput x[4]\noutput y[4]\ny[i] = x[i+j]\n")
    code, _, err = run(capsys, "kernel", str(path), "--target", "attacc")
    assert code == 2 and "bad.k:5" in err and len(err.strip().splitlines()) == 1


def test_llm_json(capsys) -> None:
    code, out, err = _ok(capsys, "llm", "--model", "opt-1.3b", "--target", "attacc",
                         "--batch", "2", "--tokens-in", "16", "--tokens-out", "8",
                         "--engine", "enumerate", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert set(report["phases"]["dcc"]) == {"qkv", "attention", "projection", "ffn", "other",
                                            "prefill"}
    assert report["totals"]["dcc"] <= report["totals"]["gpu"]
    assert report["totals"]["dcc"] <= report["totals"]["default"]
    assert report["metrics"]["latency_s"] == report["totals"]["dcc"]
    assert all(k["placed"] in ("gpu", "pim") for k in report["kernels"])
