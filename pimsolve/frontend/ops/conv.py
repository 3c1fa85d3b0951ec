"""Conv: a crossbar layer via im2col when its weight is constant (OCC Sec. IV-B)."""

from __future__ import annotations

import math

from pimsolve.frontend.ops import NodeContext, register
from pimsolve.ir import Layer, LayerKind, MvmGeometry

__all__ = ["convert_conv", "same_pads"]


def same_pads(size: int, kernel: int, stride: int, dilation: int, upper: bool) -> tuple[int, int]:
    """Begin and end padding of ONNX ``auto_pad = SAME_UPPER / SAME_LOWER`` on one axis."""
    out = math.ceil(size / stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    small, large = total // 2, total - total // 2
    return (small, large) if upper else (large, small)


@register("Conv")
def convert_conv(ctx: NodeContext) -> Layer:
    x, w = ctx.node.input[0], ctx.node.input[1]
    x_shape, w_shape, y_shape = ctx.shape(x), ctx.shape(w), ctx.outputs[0].shape
    spatial = len(x_shape) - 2
    if spatial not in (1, 2):
        raise ctx.error(f"{spatial}-D convolution is not supported (1-D and 2-D are)")
    attrs = ctx.attrs
    kernel = tuple(attrs.get("kernel_shape", w_shape[2:]))
    strides = tuple(attrs.get("strides", [1] * spatial))
    dilations = tuple(attrs.get("dilations", [1] * spatial))
    groups = int(attrs.get("group", 1))
    auto_pad = attrs.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pairs = [same_pads(x_shape[2 + i], kernel[i], strides[i], dilations[i],
                           auto_pad == "SAME_UPPER") for i in range(spatial)]
        pads = tuple(p[0] for p in pairs) + tuple(p[1] for p in pairs)
    else:
        pads = tuple(attrs.get("pads", [0] * (2 * spatial)))
    if spatial == 1:  # a 1-D convolution is a 2-D one of height 1
        kernel, strides, dilations = (1, *kernel), (1, *strides), (1, *dilations)
        pads = (0, pads[0], 0, pads[1])
        in_hw, out_hw = (1, x_shape[2]), (1, y_shape[2])
    else:
        in_hw, out_hw = (x_shape[2], x_shape[3]), (y_shape[2], y_shape[3])
    geometry = MvmGeometry(
        in_channels=x_shape[1], out_channels=w_shape[0], kernel=kernel, strides=strides,
        dilations=dilations, pads=pads, groups=groups, input_hw=in_hw, output_hw=out_hw,
        batch=x_shape[0])
    macs = geometry.windows * geometry.weights
    notes = {"lowering": "im2col", "auto_pad": auto_pad}
    if not ctx.is_const(w):  # a convolution of two activations cannot be weight-stationary
        return Layer(ctx.name, ctx.op, LayerKind.VECTOR, ctx.activations, ctx.outputs,
                     vector_ops=2 * macs, attributes=notes | {"reason": "weight not constant"})
    return Layer(ctx.name, ctx.op, LayerKind.CONV, ctx.activations, ctx.outputs,
                 weight_shape=tuple(w_shape), mvm=geometry, attributes=notes)
