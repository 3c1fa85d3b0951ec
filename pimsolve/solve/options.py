"""Options every exact engine takes: seeds, workers and limits are fields, never globals (P9)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SolveOptions"]


@dataclass(frozen=True)
class SolveOptions:
    """How to run one solve; the defaults give byte-identical results run after run."""

    time_limit_s: float | None = None
    """Limit in seconds of ``clock``: on the wall clock it breaks reproducibility when it
    binds (prefer ``deterministic_time``, or the work clock)."""
    clock: str = "wall"
    """'wall', or 'work' (``solve.clock``): the time limit counts work, which a CP-SAT solve
    measures as its deterministic time (``clock.WORK_S``); the MILP engines have no such
    count and refuse it."""
    work_price: str = "dtime"
    """On the work clock: the ``clock.WORK_S`` price of a deterministic second, by which the
    limit is divided (the decomposition's HT masters: 'master_dtime')."""
    deterministic_time: float | None = None
    """CP-SAT deterministic time limit (reproducible)."""
    seed: int = 0
    """Random seed of the engine."""
    workers: int = 1
    """Search workers; 1 (the default) is deterministic. With more, CP-SAT interleaves its
    workers (``interleave_search``, unless ``params`` sets it) so results stay reproducible."""
    relative_gap: float | None = None
    """Stop once the relative gap is at most this (CP-SAT ``relative_gap_limit``, HiGHS
    ``mip_rel_gap``, CBC ``gapRel``); None keeps each engine's default."""
    params: str = ""
    """Expert engine parameters, for CP-SAT as SatParameters text, e.g. 'linearization_level:2'."""
    stall_s: float | None = None
    """CP-SAT: stop once this long (wall clock) has passed without a better solution since the
    last one (a local search, which proves nothing, would otherwise run out its time)."""
