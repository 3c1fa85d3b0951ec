"""Normalizations, Softmax and reductions: vector-unit layers.

A BatchNormalization right after a crossbar layer is folded into it later
(``frontend.passes.fold_batchnorm``); here it is a per-channel affine map.
"""

from __future__ import annotations

import math

from pimsolve.frontend.ops import NodeContext, register
from pimsolve.ir import Layer, LayerKind

__all__ = ["convert_norm", "convert_reduce"]

_OPS_PER_ELEMENT = {"BatchNormalization": 2, "InstanceNormalization": 6,
                    "LayerNormalization": 8, "Softmax": 5, "LogSoftmax": 6}


@register("BatchNormalization", "InstanceNormalization", "LayerNormalization", "Softmax",
          "LogSoftmax")
def convert_norm(ctx: NodeContext) -> Layer:
    out = ctx.outputs[0]
    return Layer(ctx.name, ctx.op, LayerKind.VECTOR, ctx.activations[:1], ctx.outputs[:1],
                 vector_ops=_OPS_PER_ELEMENT[ctx.op] * math.prod(out.shape))


@register("LRN")
def convert_lrn(ctx: NodeContext) -> Layer:
    size = int(ctx.attrs["size"])
    return Layer(ctx.name, ctx.op, LayerKind.VECTOR, ctx.activations, ctx.outputs,
                 vector_ops=(size + 4) * math.prod(ctx.outputs[0].shape),
                 attributes={"size": size})


@register("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceL2", "ReduceSumSquare")
def convert_reduce(ctx: NodeContext) -> Layer:
    return Layer(ctx.name, ctx.op, LayerKind.VECTOR, ctx.activations, ctx.outputs,
                 vector_ops=math.prod(ctx.activations[0].shape))
