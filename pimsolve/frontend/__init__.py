"""Step 1 of the flow: ONNX -> ``ir.Graph``. The only package that imports ``onnx``."""

from pimsolve.frontend.load import load_onnx, parse_input_shape, read_model
from pimsolve.frontend.ops import supported_ops

__all__ = ["load_onnx", "parse_input_shape", "read_model", "supported_ops"]
