"""pimsolve: an exact mapping compiler for processing-in-memory (PIM) accelerators.

The flow, one package per step (data moves forward only, as typed dataclasses in ``ir``):

1. ``frontend``  ONNX file -> ``ir.Graph`` (layers, static shapes, weight shapes)
2. ``lowering``  Graph + target -> ``ir.Workload`` (unfoldings, array groups, crossbars)
3. ``stages``    Workload -> ``ir.Mapping`` (partition, placement, schedule; exact models)
4. ``codegen``   Mapping -> ``ir.Program`` (per-core pseudo-instructions)
5. ``simulate``  Program + target -> metrics and checks
6. ``report``    results for people (tables) and machines (JSON)

Shared layers: ``ir`` (the data), ``target`` (accelerator files), ``solve`` (the only user of
OR-Tools and PuLP). Steps 3-5 are being built; see the README.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
