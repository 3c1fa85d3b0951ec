"""The target files shipped with pimsolve (the repository's ``targets/`` folder)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = ["targets_dir", "bundled_targets"]


def targets_dir() -> Path:
    """The folder of bundled target files, in a wheel or in a source checkout."""
    packaged = Path(str(files("pimsolve"))) / "_targets"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "targets"


def bundled_targets() -> dict[str, Path]:
    """Bundled target name -> file, sorted by name."""
    folder = targets_dir()
    return {p.stem: p for p in sorted(folder.glob("*.yaml"))} if folder.is_dir() else {}
