"""The solver layer: the only package that imports OR-Tools and PuLP.

Formulations (later stages) build ``CpModel`` / ``pulp.LpProblem`` objects and hand them here
to be solved; ``registry`` lists the engines this installation can run.
"""

from pimsolve.solve.registry import BACKENDS, Backend, available_backends, smoke_solve

__all__ = ["BACKENDS", "Backend", "available_backends", "smoke_solve"]
