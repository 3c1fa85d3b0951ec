"""What a run has spent of its time limit: wall-clock seconds, or counted work.

With the wall clock, a run the limit stops ends wherever the machine got to, so two runs can
return different placements (DESIGN: same inputs and options, byte-identical outputs). With
the work clock each stage charges what it did (CP-SAT its deterministic time, the
heuristics the windows, placements and model terms they went through), priced in seconds of
the reference machine (``WORK_S``), and every share and stop is decided on that count: the
same inputs and options take the same steps on every machine, and the wall time only
approximates the limit.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from pimsolve.solve.result import SolveResult, StopReason

__all__ = ["Clock", "CLOCKS", "WORK_S"]

CLOCKS = ("wall", "work")

WORK_S = {
    "dtime": 4.0,
    "master_dtime": 1.5,
    "term": 10e-6,
    "cell": 0.04e-6,
    "restricted_cell": 0.02e-6,
    "wide_cell": 0.01e-6,
    "completion_cell": 4e-9,
    "window": 0.6e-6,
    "core_layer": 0.5e-6,
    "replica": 70e-6,
    "individual": 0.5e-3,
    "knapsack": 3.6e-9,
}
"""Reference seconds per unit of work, measured on the machine the benchmarks ran on (2 cores): a
CP-SAT deterministic second ('dtime': the subproblems and packings, whose presolve takes 3 to
12 s of wall a deterministic second; at 2.5, vgg8-28/PUMA LL took 29 s for a 10 s limit;
'master_dtime': the decomposition's HT masters, whose LP-heavy search takes 1.1 to 1.4 s; the
LL masters, 1.5 to 5.3 s, pay 'dtime'), a constraint term built or handed to CP-SAT ('term'; 5
to 20 us), a window time a decision diagram computes ('cell'; 7.2 s for 202 M), one the
restricted diagram computes, which merges no nodes ('restricted_cell'; 16 to 24 ns on the 28x28
and 224x224 LL instances, 1 M to 39 M cells; since session 48, whose step takes three passes
over the window times where it took ten, 21 to 34 ns at 28x28 and 8 to 22 ns at 224x224, 25 M
to 256 M cells, and the relaxed diagram 10 to 25% less wall: the prices are kept, so that runs
on the work clock stay as they were: 25 and 15 ns a cell for the relaxed and restricted
diagrams cost resnet18-28/ISAAC LL its proof, 0.01% -> 4.8%, and 30 and 17 ns cost it and
resnet18-28/PUMA theirs, 7.0% and 8.0%), one the restricted diagrams of ``decompose._wider``
compute, which run only at 224x224, keeping 64 to 1024 nodes a layer ('wide_cell'; 7.3 to 18.7
ns, median 11, on the six 224x224 LL rows at 16 to 1024 nodes a layer, 28 M to 226 M cells), a
window time a child's completion bound adds to it ('completion_cell', ``diagram._completed``,
and the running minima it reads; 2.5 to 5.4 ns on resnet18-28/ISAAC and Arch-C and
resnet34/ISAAC LL, 0.1 to 0.6 G cells), a window a pipeline evaluation goes through ('window';
0.5 to 0.85 us), a (layer, core) pair a valuation of a placement sums ('core_layer'; 0.3 to 2.5
us), a replica one pass of a greedy placement places ('replica'; ``baselines.PASS_COST`` times,
20 to 113 us for a pass of ``level``), what the GA does for an individual besides valuing it
('individual'), and a cell of ``home_packing``'s knapsack tables ('knapsack'; a step also pays
``home_packing.STEP_CELLS`` for its numpy calls and LP solve: googlenet/Arch-C 0.40 s,
googlenet/ISAAC 0.87 s fitted within 1%)."""


@dataclass
class Clock:
    """A run's limit (seconds) and what it has spent, on the wall clock or in work."""

    limit: float = math.inf
    work: bool = False
    """Count charged work, not wall time."""
    _began: float = field(default_factory=time.perf_counter, repr=False)
    _spent: float = 0.0

    @classmethod
    def named(cls, name: str, limit: float | None) -> Clock:
        """The clock ``name`` ('wall' or 'work') with ``limit`` seconds (None: no limit)."""
        if name not in CLOCKS:
            raise ValueError(f"clock: one of {', '.join(CLOCKS)}, not {name!r}")
        return cls(math.inf if limit is None else limit, work=name == "work")

    def now(self) -> float:
        """Seconds spent since the clock was made (work: charged)."""
        return self._spent if self.work else time.perf_counter() - self._began

    def left(self) -> float:
        return self.limit - self.now()

    def charge(self, units: float, kind: str) -> None:
        """Work mode: ``units`` of ``kind`` (a key of ``WORK_S``) done; the wall clock
        counts itself."""
        if self.work:
            self._spent += units * WORK_S[kind]

    def stop_reason(self) -> StopReason:
        """Why a run this clock's limit ended stopped."""
        return StopReason.DET_TIME_LIMIT if self.work else StopReason.TIME_LIMIT

    def charge_solve(self, result: SolveResult, kind: str = "dtime") -> None:
        """A CP-SAT solve's deterministic time at the price of ``kind`` (work mode; rounded,
        as its last digits depend on the order its workers' times were summed in)."""
        self.charge(round(result.deterministic_s or 0.0, 6), kind)
