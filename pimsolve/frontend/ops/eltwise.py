"""Element-wise activations and arithmetic: vector-unit layers.

Operation counts are per output element: one for a simple op, more for transcendental ones
(a documented estimate, in vector-unit operations), ``inputs - 1`` for n-ary Sum/Max/Min.
"""

from __future__ import annotations

import math

from pimsolve.frontend.ops import NodeContext, register
from pimsolve.ir import Layer, LayerKind

__all__ = ["OPS_PER_ELEMENT", "convert_unary", "convert_nary"]

OPS_PER_ELEMENT = {
    "Relu": 1, "Clip": 2, "LeakyRelu": 2, "PRelu": 2, "Elu": 3, "Selu": 4, "Sigmoid": 4,
    "HardSigmoid": 3, "HardSwish": 4, "Tanh": 5, "Softplus": 3, "Gelu": 8, "Erf": 6,
    "Sqrt": 1, "Exp": 1, "Log": 1, "Neg": 1, "Abs": 1, "Reciprocal": 1, "Pow": 1, "Cast": 1,
    "Not": 1,
}


@register(*OPS_PER_ELEMENT)
def convert_unary(ctx: NodeContext) -> Layer:
    elements = math.prod(ctx.outputs[0].shape)
    return Layer(ctx.name, ctx.op, LayerKind.VECTOR, ctx.activations, ctx.outputs,
                 vector_ops=OPS_PER_ELEMENT[ctx.op] * elements)


@register("Add", "Sub", "Mul", "Div", "Sum", "Max", "Min", "Mean", "Equal", "Less", "Greater",
          "Where", "And", "Or")
def convert_nary(ctx: NodeContext) -> Layer:
    elements = math.prod(ctx.outputs[0].shape)
    operands = len([n for n in ctx.node.input if n])
    scalars = [float(ctx.const(n).reshape(-1)[0]) for n in ctx.node.input
               if n and ctx.is_const(n) and ctx.const(n).size == 1]
    return Layer(ctx.name, ctx.op, LayerKind.VECTOR, ctx.activations, ctx.outputs,
                 vector_ops=max(1, operands - 1) * elements,
                 attributes={"scalar_operands": scalars} if scalars else {})
