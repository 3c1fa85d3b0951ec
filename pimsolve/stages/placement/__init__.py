"""PIMCOMP's layout-computation mapping: replication and array-group placement per core."""

from pimsolve.stages.placement.reference import reference_mapping

__all__ = ["reference_mapping"]
