"""``report.json`` (schema version 1): the judge's metrics, the bounds, the checks, the solves.

Keys (DESIGN.md contract; more may be added, none renamed):
``schema_version``, ``model``, ``target``, ``mode``, ``engine``;
``metrics``: ``latency_s``, ``throughput_per_s``, ``energy_j``, ``cycle_s``,
``energy_by_component_j``, ``instructions``, ``instructions_by_op``, ``crossbar_utilization``,
``core_utilization``, ``global_memory_bytes``, ``interconnect_bytes``,
``interconnect_byte_hops``, ``peak_local_memory_bytes`` (max over cores),
``peak_active_crossbars``, ``crossbar_writes``, ``lifetime_s``, ``weight_programming_s``,
``layer_finish_s`` (LL: per layer, its last MVM or vector operation);
``bounds``: ``latency_s``, ``throughput_per_s``, ``energy_j`` (physical bounds, same keys),
``compute_cycle_s``, ``io_s``; ``achieved_over_bound``: per key, how far from the bound
(latency and energy: bound / achieved; throughput: achieved / bound; 1 is the bound);
``checks``: ``passed``, ``violations`` (messages); ``solves``: one record per stage solve with
``stage``, ``engine``, ``status``, ``objective``, ``bound``, ``gap``, ``wall_s``; ``timing``
(added by ``api.score``): seconds per step, ``frontend_s``, ``placement_s``, ``codegen_s``,
``verify_s``, ``simulate_s``; ``prediction`` (added by ``api.map_model`` for a placement
the formulation scores): the model's ``cycle_s``, ``latency_s``, ``energy_j``, ``bottleneck``,
the ``metric`` compared, its ``simulated`` value and ``relative_error``; in LL ``layers``
(per crossbar layer ``predicted_s`` and ``simulated_s`` finish) and ``late_layer``.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from pimsolve.ir.mapping import Mapping
from pimsolve.simulate.bounds import Bounds
from pimsolve.simulate.checks import CheckReport
from pimsolve.simulate.metrics import Metrics

__all__ = ["REPORT_SCHEMA_VERSION", "build_report"]

REPORT_SCHEMA_VERSION = 1


def _ratio(good: float, bad: float) -> float | None:
    if not bad or not math.isfinite(bad) or not math.isfinite(good):
        return None
    return good / bad


def build_report(mapping: Mapping, metrics: Metrics | None, bound: Bounds | None,
                 checks: CheckReport, solves: list[dict[str, Any]]) -> dict[str, Any]:
    """The report as JSON-ready data; ``metrics`` is None when only checking."""
    report: dict[str, Any] = {
        "schema_version": REPORT_SCHEMA_VERSION, "model": mapping.model,
        "target": mapping.target, "mode": mapping.mode, "engine": mapping.engine,
        "checks": {"passed": checks.passed,
                   "violations": [v.message for v in checks.violations]},
        "solves": solves,
    }
    if metrics is not None:
        m = asdict(metrics)
        m.pop("ag_utilization")
        m["peak_local_memory_bytes"] = max(metrics.peak_local_memory_bytes, default=0)
        report["metrics"] = m
    if bound is not None:
        report["bounds"] = asdict(bound)
        if metrics is not None:
            report["achieved_over_bound"] = {
                "latency_s": _ratio(bound.latency_s, metrics.latency_s),
                "throughput_per_s": _ratio(metrics.throughput_per_s, bound.throughput_per_s),
                "energy_j": _ratio(bound.energy_j, metrics.energy_j)}
    return report
