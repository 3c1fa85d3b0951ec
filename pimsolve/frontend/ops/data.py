"""Data movement and views: no arithmetic, but they route tensors between layers."""

from __future__ import annotations

from pimsolve.frontend.ops import NodeContext, register
from pimsolve.ir import Layer, LayerKind

__all__ = ["convert_data"]


@register("Concat", "Split", "Slice", "Reshape", "Flatten", "Transpose", "Squeeze",
          "Unsqueeze", "Dropout", "Identity", "Gather", "Pad", "Expand", "Tile",
          "DepthToSpace", "SpaceToDepth", "Shape", "Size", "ConstantOfShape")
def convert_data(ctx: NodeContext) -> Layer:
    # Dropout is the identity at inference; its optional mask output is never computed
    outputs = (ctx.tensor(ctx.node.output[0]),) if ctx.op == "Dropout" else ctx.outputs
    attributes = {"axis": int(ctx.attrs["axis"])} if "axis" in ctx.attrs else {}
    return Layer(ctx.name, ctx.op, LayerKind.DATA, ctx.activations, outputs,
                 attributes=attributes)
