"""Target files: every problem is one InputError naming the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pimsolve.errors import InputError
from pimsolve.target import CrossbarTarget, bundled_targets, load_target, parse_target
from pimsolve.target.load import target_json_schema


def _isaac() -> dict:
    return yaml.safe_load(bundled_targets()["isaac"].read_text())


def _errors_of(data: dict) -> str:
    with pytest.raises(InputError) as info:
        parse_target(yaml.safe_dump(data), origin="bad.yaml")
    message = str(info.value)
    assert "\n" not in message and message.startswith("bad.yaml: ")
    return message


def test_isaac_loads_with_the_papers_capacity() -> None:
    target = load_target("isaac")
    assert isinstance(target, CrossbarTarget)
    assert target.crossbars == 168 * 96
    # PIMCOMP Table V: 63 MB of 2-bit cells on 128x128 crossbars
    assert target.crossbars * 128 * 128 * 2 / 8 / 2**20 == pytest.approx(63.0)


def test_unknown_key_is_named() -> None:
    data = _isaac()
    data["core"]["local_memory"]["size_kb"] = 64
    assert "core.local_memory.size_kb: unknown key" in _errors_of(data)


def test_negative_size_is_named() -> None:
    data = _isaac()
    data["core"]["local_memory"]["size_kib"] = -64
    message = _errors_of(data)
    assert "core.local_memory.size_kib" in message and "greater than 0" in message


def test_missing_required_field_is_named() -> None:
    data = _isaac()
    del data["crossbar"]["rows"]
    assert "crossbar.rows: missing required key" in _errors_of(data)


def test_every_problem_is_listed_at_once() -> None:
    data = _isaac()
    del data["crossbar"]["rows"]
    data["chips"] = 0
    data["extra"] = 1
    message = _errors_of(data)
    assert all(key in message for key in ("crossbar.rows", "chips", "extra"))


def test_cross_field_rule_is_named() -> None:
    data = _isaac()
    data["crossbar"]["parallel_rows"] = 256
    assert "parallel_rows (256) exceeds rows (128)" in _errors_of(data)


def test_wrong_kind_is_named() -> None:
    data = _isaac()
    data["kind"] = "gpu"
    assert "kind: must be one of crossbar, dram-pim" in _errors_of(data)


def test_nonexistent_name_lists_the_bundled_targets() -> None:
    with pytest.raises(InputError, match=r"unknown target 'nope'; bundled targets: .*isaac"):
        load_target("nope")


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="target file not found"):
        load_target(tmp_path / "absent.yaml")


def test_yaml_syntax_error_names_the_line() -> None:
    with pytest.raises(InputError, match=r"bad.yaml: not valid YAML at line 2"):
        parse_target("kind: crossbar\nchips: : 1\nname: x\n", origin="bad.yaml")


def test_schema_is_published_and_forbids_extra_keys() -> None:
    schema = target_json_schema()
    assert '"additionalProperties": false' in schema
    assert "local_memory" in schema and "dram-pim" in schema


def test_target_is_frozen() -> None:
    target = load_target("isaac")
    with pytest.raises(Exception, match="frozen"):
        target.chips = 2  # type: ignore[misc]
