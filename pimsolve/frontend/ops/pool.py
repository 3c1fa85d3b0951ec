"""Pooling: vector-unit layers, one operation per input element of every window."""

from __future__ import annotations

import math

from pimsolve.frontend.ops import NodeContext, register
from pimsolve.ir import Layer, LayerKind

__all__ = ["convert_pool", "convert_global_pool"]


@register("MaxPool", "AveragePool", "LpPool")
def convert_pool(ctx: NodeContext) -> Layer:
    attrs = ctx.attrs
    kernel = tuple(attrs["kernel_shape"])
    out = ctx.outputs[0]
    return Layer(ctx.name, ctx.op, LayerKind.VECTOR, ctx.activations, (out,),
                 vector_ops=math.prod(out.shape) * math.prod(kernel),
                 attributes={"kernel_shape": list(kernel),
                             "strides": list(attrs.get("strides", [1] * len(kernel))),
                             "pads": list(attrs.get("pads", [0] * 2 * len(kernel))),
                             "dilations": list(attrs.get("dilations", [1] * len(kernel))),
                             "count_include_pad": int(attrs.get("count_include_pad", 0)),
                             "ceil_mode": int(attrs.get("ceil_mode", 0))})


@register("GlobalAveragePool", "GlobalMaxPool")
def convert_global_pool(ctx: NodeContext) -> Layer:
    return Layer(ctx.name, ctx.op, LayerKind.VECTOR, ctx.activations, ctx.outputs,
                 vector_ops=math.prod(ctx.activations[0].shape))
