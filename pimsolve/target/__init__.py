"""Accelerator descriptions: ``targets/*.yaml`` -> validated, frozen ``Target`` objects."""

from pimsolve.target.bundled import bundled_targets, targets_dir
from pimsolve.target.load import load_target, parse_target, target_json_schema
from pimsolve.target.model import SCHEMA_VERSION, CrossbarTarget, DramPimTarget, Target

__all__ = [
    "SCHEMA_VERSION", "CrossbarTarget", "DramPimTarget", "Target", "bundled_targets",
    "load_target", "parse_target", "target_json_schema", "targets_dir",
]
