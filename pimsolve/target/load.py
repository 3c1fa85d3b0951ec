"""Read a target file (YAML) or a bundled target name into a validated ``Target``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import TypeAdapter, ValidationError

from pimsolve.errors import InputError
from pimsolve.target.bundled import bundled_targets
from pimsolve.target.model import CrossbarTarget, DramPimTarget, Target

__all__ = ["load_target", "parse_target", "target_json_schema"]

_ADAPTER: TypeAdapter[CrossbarTarget | DramPimTarget] = TypeAdapter(Target)
_KINDS = ("crossbar", "dram-pim")


def load_target(spec: str | Path) -> CrossbarTarget | DramPimTarget:
    """Load a target from a bundled name (``isaac``) or a YAML file path.

    Raises
    ------
    InputError
        If the name is unknown, the file unreadable, or the contents invalid; the message names
        the file and every bad key.
    """
    path = Path(spec)
    if not path.is_file():
        bundled = bundled_targets()
        if str(spec) in bundled:
            path = bundled[str(spec)]
        elif path.suffix in (".yaml", ".yml") or path.parent != Path("."):
            raise InputError(f"target file not found: {spec}")
        else:
            raise InputError(f"unknown target '{spec}'; bundled targets: "
                             f"{', '.join(bundled) or '(none)'}; or give a YAML file path")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read target file: {exc}") from None
    return parse_target(text, origin=path.name)


def parse_target(text: str, *, origin: str = "<target>") -> CrossbarTarget | DramPimTarget:
    """Validate YAML text as a target; ``origin`` names the file in error messages."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise InputError(f"{origin}: not valid YAML{where}: {problem}") from None
    if not isinstance(data, dict):
        raise InputError(f"{origin}: a target file must be a YAML mapping of keys to values")
    if data.get("kind") not in _KINDS:
        raise InputError(f"{origin}: kind: must be one of {', '.join(_KINDS)} "
                         f"(got {data.get('kind')!r})")
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise InputError(f"{origin}: {_describe(exc)}") from None


def _describe(exc: ValidationError) -> str:
    """Every problem of ``exc`` as 'key.path: what is wrong', joined on one line."""
    problems = []
    for err in exc.errors():
        loc = [str(part) for part in err["loc"]]
        if loc and loc[0] in _KINDS:  # the discriminated union's tag
            loc = loc[1:]
        key = ".".join(loc) or "(top level)"
        if err["type"] == "extra_forbidden":
            message = "unknown key"
        elif err["type"] == "missing":
            message = "missing required key"
        else:
            message = err["msg"].removeprefix("Value error, ")
            if err["type"] not in ("value_error",) and "input" in err:
                message += f" (got {_short(err['input'])})"
        problems.append(f"{key}: {message}" if not message.startswith(key) else message)
    return "; ".join(problems)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def target_json_schema() -> str:
    """The JSON schema of target files, as published by ``pimsolve targets schema``."""
    schema = _ADAPTER.json_schema()
    schema["title"] = "pimsolve target"
    schema["$comment"] = "schema_version 1; units are part of every key name"
    return json.dumps(schema, indent=1, sort_keys=True) + "\n"
