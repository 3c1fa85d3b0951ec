"""The command line: exit codes, one-line errors, no tracebacks (DESIGN.md contracts)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
import yaml
from onnx import TensorProto, helper

from pimsolve.cli import main
from pimsolve.target import bundled_targets

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return info.value.code or 0, out, err


def assert_one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0]


def _relu_model(op: str = "Relu", dims: list[int | str] | None = None) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, dims or [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, dims or [1, 4])
    node = helper.make_node(op, ["x"], ["y"], name="my_node")
    return helper.make_model(helper.make_graph([node], "g", [x], [y]),
                             opset_imports=[helper.make_opsetid("", 17)])


def _save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.save(model, path)
    return path


def _bad_target(tmp_path: Path, edit) -> Path:
    data = yaml.safe_load(bundled_targets()["isaac"].read_text())
    edit(data)
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_empty_file(tmp_path: Path, capsys) -> None:
    (tmp_path / "empty.onnx").write_bytes(b"")
    assert_one_line_error(*run(capsys, "inspect", str(tmp_path / "empty.onnx"))[::2],
                          "empty.onnx", "empty file")


@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.9])
def test_truncated_onnx(tmp_path: Path, capsys, fraction: float) -> None:
    data = (LIGHT / "light_squeezenet.onnx").read_bytes()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: int(len(data) * fraction)])
    code, _, err = run(capsys, "inspect", str(path))
    assert_one_line_error(code, err, "cut.onnx")


def test_text_file_named_onnx(tmp_path: Path, capsys) -> None:
    path = tmp_path / "notes.onnx"
    path.write_text("this is a text file, not a model\n")
    code, _, err = run(capsys, "inspect", str(path))
    assert_one_line_error(code, err, "notes.onnx", "not a valid ONNX model")


def test_unsupported_op(tmp_path: Path, capsys) -> None:
    path = _save(_relu_model("Hardmax"), tmp_path / "hardmax.onnx")
    code, _, err = run(capsys, "inspect", str(path))
    assert_one_line_error(code, err, "unsupported op 'Hardmax'", "my_node", "supported ops:",
                          "Conv", "Einsum")


def test_symbolic_dim_without_input_shape(tmp_path: Path, capsys) -> None:
    path = _save(_relu_model(dims=["batch", 4]), tmp_path / "sym.onnx")
    code, _, err = run(capsys, "inspect", str(path))
    assert_one_line_error(code, err, "symbolic dimension 'batch'", "--input-shape x=Nx4")
    code, out, _ = run(capsys, "inspect", str(path), "--input-shape", "x=3x4", "--json")
    assert code == 0
    assert json.loads(out)["inputs"] == [{"name": "x", "shape": [3, 4]}]


def test_malformed_input_shape(capsys) -> None:
    code, _, err = run(capsys, "inspect", "vgg8-28", "--input-shape", "x=3by4")
    assert_one_line_error(code, err, "expected NAME=DxDx")


def test_target_with_unknown_key(tmp_path: Path, capsys) -> None:
    path = _bad_target(tmp_path, lambda d: d["crossbar"].update(colour="red"))
    code, _, err = run(capsys, "inspect", "vgg8-28", "--target", str(path))
    assert_one_line_error(code, err, "mine.yaml", "crossbar.colour: unknown key")


def test_target_with_negative_size(tmp_path: Path, capsys) -> None:
    path = _bad_target(tmp_path, lambda d: d["crossbar"].update(rows=-128))
    code, _, err = run(capsys, "inspect", "vgg8-28", "--target", str(path))
    assert_one_line_error(code, err, "mine.yaml", "crossbar.rows", "greater than 0")


def test_target_missing_required_field(tmp_path: Path, capsys) -> None:
    path = _bad_target(tmp_path, lambda d: d["core"].pop("crossbars"))
    code, _, err = run(capsys, "inspect", "vgg8-28", "--target", str(path))
    assert_one_line_error(code, err, "mine.yaml", "core.crossbars: missing required key")


def test_nonexistent_target_name(capsys) -> None:
    code, _, err = run(capsys, "inspect", "vgg8-28", "--target", "isaac-9000")
    assert_one_line_error(code, err, "unknown target 'isaac-9000'", "isaac")


def test_nonexistent_model(capsys) -> None:
    code, _, err = run(capsys, "inspect", "no-such-model")
    assert_one_line_error(code, err, "no-such-model", "bundled models")


def test_dram_pim_target_cannot_be_inspected_as_crossbars(capsys) -> None:
    if "hbm-pim" not in bundled_targets():
        pytest.skip("hbm-pim target not bundled")
    code, _, err = run(capsys, "inspect", "vgg8-28", "--target", "hbm-pim")
    assert_one_line_error(code, err, "DRAM-PIM target")


def test_inspect_json_totals(capsys) -> None:
    code, out, _ = run(capsys, "inspect", "vgg8-28", "--target", "isaac", "--json")
    assert code == 0
    report = json.loads(out)
    totals = report["totals"]
    assert totals["crossbars_needed"] == sum(r.get("crossbars", 0) for r in report["layers"])
    assert totals["crossbars_available"] == 168 * 96
    assert totals["fits"] is True


def test_inspect_table_and_targets(capsys) -> None:
    code, out, _ = run(capsys, "inspect", "vgg8-28", "--target", "isaac")
    assert code == 0 and "crossbars needed" in out and "fits on chip" in out
    code, out, _ = run(capsys, "targets")
    assert code == 0 and "isaac" in out
    code, out, _ = run(capsys, "targets", "show", "isaac")
    assert code == 0 and out.startswith("# isaac (crossbar, XBM)") and "source:" in out
    code, out, _ = run(capsys, "targets", "schema")
    assert code == 0 and json.loads(out)["title"] == "pimsolve target"


def test_usage_error_exits_2(capsys) -> None:
    code, _, _ = run(capsys, "inspect")
    assert code == 2


def test_console_script_end_to_end(tmp_path: Path) -> None:
    """The installed entry point (python -m pimsolve) gives exit 2 and one line, no traceback."""
    (tmp_path / "empty.onnx").write_bytes(b"")
    done = subprocess.run([sys.executable, "-m", "pimsolve", "inspect",
                           str(tmp_path / "empty.onnx")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr
