"""Reference outputs from onnxruntime, the yardstick of the functional executor."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx

from pimsolve.errors import InputError
from pimsolve.frontend.load import read_model

__all__ = ["reference_outputs", "seeded_inputs"]


def seeded_inputs(shapes: Mapping[str, tuple[int, ...]], seed: int = 0
                  ) -> dict[str, np.ndarray]:
    """Standard-normal float32 inputs of the given static shapes."""
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal(shape).astype(np.float32)
            for name, shape in shapes.items()}


def reference_outputs(source: str | Path | onnx.ModelProto,
                      inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run the model on onnxruntime's CPU provider."""
    try:
        import onnxruntime
    except ImportError:
        raise InputError("the functional check needs onnxruntime: pip install "
                         "'pimsolve[test]' or onnxruntime") from None
    model = read_model(source)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, dict(inputs)), strict=True))
