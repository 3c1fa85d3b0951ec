"""Step 2 of the flow: ``ir.Graph`` + target -> ``ir.Workload`` (unfoldings, array groups)."""

from pimsolve.lowering.lower import crossbar_geometry, lower
from pimsolve.lowering.unfold import DEFAULT_FORMAT, FORMATS, unfoldings
from pimsolve.lowering.units import partition_units

__all__ = ["DEFAULT_FORMAT", "FORMATS", "crossbar_geometry", "lower", "partition_units",
           "unfoldings"]
