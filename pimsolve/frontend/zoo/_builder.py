"""Small graph builder shared by the zoo model definitions.

The builder accumulates nodes and initializers, names everything
deterministically, and hides the difference between the two weight modes:

* ``"random"``: every parameter is a float32 initializer drawn from
  ``numpy.random.default_rng(seed)``;
* ``"shape"``: every parameter is the output of a ``ConstantOfShape`` node
  whose input is an int64 initializer holding the shape, as in the
  ``light_*.onnx`` models of onnx's backend test data.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Literal

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["PRODUCER_NAME", "SHAPE_FILL", "GraphBuilder", "WeightMode"]

WeightMode = Literal["random", "shape"]

PRODUCER_NAME = "pimsolve-zoo"
SHAPE_FILL = 0.01

_IR_VERSION = {17: 8, 18: 8, 19: 9, 20: 9}


class GraphBuilder:
    """Accumulate an ONNX graph node by node.

    Parameters
    ----------
    weights : {"random", "shape"}
        How parameters are materialised (see the module docstring).
    seed : int
        Seed of the generator used in ``"random"`` mode.
    """

    def __init__(self, weights: WeightMode = "shape", seed: int = 0) -> None:
        if weights not in ("random", "shape"):
            raise ValueError(f"weights must be 'random' or 'shape', not {weights!r}")
        self.weights: WeightMode = weights
        self._rng = np.random.default_rng(seed)
        self._param_nodes: list[onnx.NodeProto] = []
        self._nodes: list[onnx.NodeProto] = []
        self._inits: list[onnx.TensorProto] = []
        self._inputs: list[onnx.ValueInfoProto] = []
        self._consts: dict[tuple[str, tuple[int, ...], bytes], str] = {}
        self._counts: dict[str, int] = {}
        self._scopes: list[str] = []

    @contextmanager
    def scope(self, name: str) -> Iterator[None]:
        """Prefix the names of nodes (and their parameters) created inside the block."""
        self._scopes.append(name)
        try:
            yield
        finally:
            self._scopes.pop()

    def _fresh(self, kind: str) -> str:
        n = self._counts.get(kind, 0)
        self._counts[kind] = n + 1
        return "/".join([*self._scopes, f"{kind}_{n}"])

    def input(self, name: str, shape: Sequence[int]) -> str:
        """Declare a float32 graph input and return its name."""
        self._inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)))
        return name

    def param(
        self,
        name: str,
        shape: Sequence[int],
        *,
        std: float,
        mean: float = 0.0,
        positive: bool = False,
    ) -> str:
        """Create a learned float32 parameter and return its tensor name.

        Parameters
        ----------
        name : str
            Tensor name.
        shape : sequence of int
            Parameter shape.
        std, mean : float
            Normal distribution used in ``"random"`` mode.
        positive : bool
            Take the absolute value of the draw (e.g. BN variances).
        """
        dims = [int(d) for d in shape]
        if self.weights == "shape":
            shape_name = f"{name}__SHAPE"
            self._inits.append(numpy_helper.from_array(np.array(dims, np.int64), shape_name))
            fill = helper.make_tensor("value", TensorProto.FLOAT, [1], [SHAPE_FILL])
            self._param_nodes.append(
                helper.make_node("ConstantOfShape", [shape_name], [name], name=name, value=fill)
            )
            return name
        data = self._rng.standard_normal(dims, dtype=np.float32)
        data *= np.float32(std)
        data += np.float32(mean)
        if positive:
            np.abs(data, out=data)
        self._inits.append(numpy_helper.from_array(data, name))
        return name

    def const(self, value: np.ndarray | float | Sequence[int], dtype: type = np.float32) -> str:
        """Return the name of a (deduplicated) constant initializer."""
        array = np.asarray(value, dtype=dtype)
        key = (array.dtype.str, array.shape, array.tobytes())
        if key not in self._consts:
            name = f"const_{len(self._consts)}"
            self._inits.append(numpy_helper.from_array(array, name))
            self._consts[key] = name
        return self._consts[key]

    def ints(self, values: Sequence[int]) -> str:
        """Return the name of a 1-D int64 constant."""
        return self.const(list(values), np.int64)

    def op(
        self, op_type: str, inputs: Sequence[str], *, name: str | None = None,
        out: str | None = None, **attrs: object,
    ) -> str:
        """Append a single-output node.

        Parameters
        ----------
        op_type : str
            ONNX operator type (default domain).
        inputs : sequence of str
            Input tensor names.
        name : str, optional
            Node name; a fresh ``<scope>/<op_type>_<n>`` by default.
        out : str, optional
            Output tensor name; ``<name>_out`` by default.
        **attrs
            Node attributes.

        Returns
        -------
        str
            The output tensor name.
        """
        outs = [out] if out else None
        return self.op_multi(op_type, inputs, n_out=1, name=name, outs=outs, **attrs)[0]

    def op_multi(
        self, op_type: str, inputs: Sequence[str], *, n_out: int, name: str | None = None,
        outs: Sequence[str] | None = None, **attrs: object,
    ) -> list[str]:
        """Append a node with ``n_out`` outputs (see :meth:`op`); return their names."""
        name = name or self._fresh(op_type)
        if outs is None:
            outs = [f"{name}_out"] if n_out == 1 else [f"{name}_out{i}" for i in range(n_out)]
        self._nodes.append(helper.make_node(op_type, list(inputs), list(outs), name=name, **attrs))
        return list(outs)

    def conv(
        self, x: str, cin: int, cout: int, k: int, *, stride: int = 1, pad: int = 0,
        bias: bool = True, group: int = 1,
    ) -> str:
        """Square convolution with He-normal weights.

        Parameters
        ----------
        x : str
            NCHW input tensor.
        cin, cout : int
            Input and output channels.
        k : int
            Kernel size (``k x k``).
        stride, pad : int
            Stride and symmetric padding.
        bias : bool
            Whether the Conv has a bias input.
        group : int
            Number of groups.

        Returns
        -------
        str
            The output tensor name.
        """
        layer = self._fresh("Conv")
        std = float(np.sqrt(2.0 / (cin // group * k * k)))
        inputs = [x, self.param(f"{layer}.weight", (cout, cin // group, k, k), std=std)]
        if bias:
            inputs.append(self.param(f"{layer}.bias", (cout,), std=0.01))
        return self.op(
            "Conv", inputs, name=layer, kernel_shape=[k, k], strides=[stride, stride],
            pads=[pad] * 4, dilations=[1, 1], group=group,
        )

    def bn(self, x: str, c: int, *, eps: float = 1e-5) -> str:
        """Inference-mode BatchNormalization over ``c`` channels."""
        layer = self._fresh("BatchNormalization")
        scale = self.param(f"{layer}.weight", (c,), std=0.1, mean=1.0)
        shift = self.param(f"{layer}.bias", (c,), std=0.1)
        mean = self.param(f"{layer}.running_mean", (c,), std=0.1)
        var = self.param(f"{layer}.running_var", (c,), std=0.1, mean=1.0, positive=True)
        return self.op(
            "BatchNormalization", [x, scale, shift, mean, var], name=layer, epsilon=eps
        )

    def relu(self, x: str) -> str:
        """Rectified linear unit."""
        return self.op("Relu", [x])

    def maxpool(self, x: str, k: int, stride: int, *, pad: int = 0, ceil: bool = False) -> str:
        """Square max pooling."""
        return self.op(
            "MaxPool", [x], kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4,
            ceil_mode=int(ceil),
        )

    def gap_flatten(self, x: str, *, out: str | None = None) -> str:
        """GlobalAveragePool followed by Flatten: ``NxCxHxW -> NxC``."""
        return self.op("Flatten", [self.op("GlobalAveragePool", [x])], out=out, axis=1)

    def gemm(self, x: str, fin: int, fout: int, *, out: str | None = None) -> str:
        """Fully connected layer ``Gemm(x, W, b, transB=1)`` with ``W: fout x fin``."""
        layer = self._fresh("Gemm")
        w = self.param(f"{layer}.weight", (fout, fin), std=float(np.sqrt(2.0 / fin)))
        b = self.param(f"{layer}.bias", (fout,), std=0.01)
        return self.op("Gemm", [x, w, b], name=layer, out=out, alpha=1.0, beta=1.0, transB=1)

    def linear(self, x: str, fin: int, fout: int, *, einsum: str | None = None) -> str:
        """Linear layer ``x @ W + b`` with a constant ``W: fin x fout``.

        Parameters
        ----------
        x : str
            Input tensor whose last axis has ``fin`` features.
        fin, fout : int
            Input and output features.
        einsum : str, optional
            Use ``Einsum`` with this equation (e.g. ``"bld,df->blf"``) instead
            of ``MatMul``.

        Returns
        -------
        str
            The output of the bias ``Add``.
        """
        layer = self._fresh("Einsum" if einsum else "MatMul")
        w = self.param(f"{layer}.weight", (fin, fout), std=float(np.sqrt(1.0 / fin)))
        b = self.param(f"{layer}.bias", (fout,), std=0.01)
        if einsum:
            y = self.op("Einsum", [x, w], name=layer, equation=einsum)
        else:
            y = self.op("MatMul", [x, w], name=layer)
        return self.op("Add", [y, b])

    def layernorm(self, x: str, dim: int, *, eps: float = 1e-5, out: str | None = None) -> str:
        """LayerNormalization (opset 17) over the last axis."""
        layer = self._fresh("LayerNormalization")
        scale = self.param(f"{layer}.weight", (dim,), std=0.02, mean=1.0)
        shift = self.param(f"{layer}.bias", (dim,), std=0.02)
        return self.op(
            "LayerNormalization", [x, scale, shift], name=layer, out=out, axis=-1, epsilon=eps
        )

    def gelu_erf(self, x: str) -> str:
        """Exact GELU as exported by PyTorch: ``x * (1 + erf(x / sqrt 2)) * 0.5``."""
        erf = self.op("Erf", [self.op("Div", [x, self.const(np.sqrt(2.0))])])
        y = self.op("Mul", [x, self.op("Add", [erf, self.const(1.0)])])
        return self.op("Mul", [y, self.const(0.5)])

    def finish(
        self, name: str, outputs: Sequence[tuple[str, Sequence[int]]], *, opset: int,
        doc: str = "",
    ) -> onnx.ModelProto:
        """Assemble the model.

        Parameters
        ----------
        name : str
            Graph name.
        outputs : sequence of (str, sequence of int)
            Graph outputs as ``(tensor name, shape)``; all float32.
        opset : int
            Default-domain opset; also selects the IR version.
        doc : str
            Graph doc string.

        Returns
        -------
        onnx.ModelProto
            The model, with ``producer_name`` ``"pimsolve-zoo"``.
        """
        graph = helper.make_graph(
            [*self._param_nodes, *self._nodes],
            name,
            self._inputs,
            [helper.make_tensor_value_info(t, TensorProto.FLOAT, list(s)) for t, s in outputs],
            initializer=self._inits,
            doc_string=doc,
        )
        return helper.make_model(
            graph,
            producer_name=PRODUCER_NAME,
            opset_imports=[helper.make_opsetid("", opset)],
            ir_version=_IR_VERSION[opset],
        )
