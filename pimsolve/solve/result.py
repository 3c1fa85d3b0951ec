"""The record every solve returns (DESIGN.md): what was found, how good, and why it stopped."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

__all__ = ["Status", "StopReason", "SolveResult", "relative_gap", "stop_reason"]


class Status(Enum):
    """What the engine holds: a proven optimum, a solution, a proof of none, or nothing."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    UNKNOWN = "unknown"


class StopReason(Enum):
    """Why the engine stopped, separate from what it holds."""

    PROVEN = "proven"
    TIME_LIMIT = "time_limit"
    DET_TIME_LIMIT = "det_time_limit"
    INTERRUPTED = "interrupted"
    GAP_LIMIT = "gap_limit"
    """The bound came within the requested relative gap of the solution."""
    COMPLETED = "completed"
    """A heuristic ran to its end (it proves nothing)."""


@dataclass(frozen=True)
class SolveResult:
    """One solve of one model by one engine (P7). Heuristics never report OPTIMAL."""

    engine: str
    """Engine name, e.g. 'cpsat' or 'enumerate'."""
    status: Status
    """What the engine holds (see ``Status``)."""
    objective: float | None
    """Objective of the solution held, in the model's units; None without a solution."""
    bound: float | None
    """Best proven bound on the objective; equals ``objective`` when OPTIMAL."""
    gap: float | None
    """Relative gap |objective - bound| / max(|objective|, 1e-12); 0 when OPTIMAL."""
    wall_s: float
    """Wall-clock seconds of the solve (informative only: never compared in tests)."""
    deterministic_s: float | None
    """CP-SAT's deterministic time, reproducible across runs; None for other engines."""
    seed: int | None
    """Random seed the engine used, if any."""
    stop_reason: StopReason
    """Why the engine stopped (see ``StopReason``)."""
    params: str = ""
    """Engine parameters as text (for CP-SAT: SatParameters text format)."""
    stats: dict[str, float] = field(default_factory=dict)
    """Engine-specific counters (branches, conflicts, candidates evaluated, ...)."""

    @property
    def has_solution(self) -> bool:
        return self.status in (Status.OPTIMAL, Status.FEASIBLE)

    def as_record(self, stage: str) -> dict[str, object]:
        """The report's ``solves`` entry (DESIGN.md contracts)."""
        return {"stage": stage, "engine": self.engine, "status": self.status.value,
                "objective": self.objective, "bound": self.bound, "gap": self.gap,
                "wall_s": self.wall_s, "deterministic_s": self.deterministic_s,
                "seed": self.seed, "stop_reason": self.stop_reason.value,
                "params": self.params}


def stop_reason(status: Status, *, interrupted: bool = False,
                deterministic_limit: float | None = None,
                deterministic_used: float | None = None) -> StopReason:
    """Why an exact engine stopped, from what it holds and what was asked of it."""
    if status in (Status.OPTIMAL, Status.INFEASIBLE):
        return StopReason.PROVEN
    if interrupted:
        return StopReason.INTERRUPTED
    if deterministic_limit is not None and deterministic_used is not None and (
            deterministic_used >= deterministic_limit * 0.999):
        return StopReason.DET_TIME_LIMIT
    return StopReason.TIME_LIMIT


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """|objective - bound| / max(|objective|, 1e-12), or None if either is missing."""
    if objective is None or bound is None:
        return None
    return abs(objective - bound) / max(abs(objective), 1e-12)
