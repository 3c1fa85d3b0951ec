"""Gemm, MatMul and Einsum: crossbar GEMMs when one operand is constant (OCC's TTGT).

OCC's contraction detection: the constant operand's indices split into contracted ones (shared
with the activation, absent from the output: K), free ones (only in the constant and the
output: N) and batch ones (in all three: one weight matrix each, like groups). Transposing and
reshaping the activation to [batch][M][K] and the weight to [batch][K][N] makes it a GEMM
(transpose-transpose-GEMM-transpose). A product of two activations is not weight-stationary:
it runs on the vector units.
"""

from __future__ import annotations

import math

from pimsolve.frontend.ops import NodeContext, register
from pimsolve.ir import Layer, LayerKind, MvmGeometry

__all__ = ["convert_gemm", "convert_matmul", "convert_einsum", "contraction", "summed_size"]


def _gemm_layer(ctx: NodeContext, *, m: int, k: int, n: int, groups: int,
                weight_shape: tuple[int, ...], recipe: str) -> Layer:
    geometry = MvmGeometry(in_channels=groups * k, out_channels=groups * n, groups=groups,
                           input_hw=(m, 1), output_hw=(m, 1))
    return Layer(ctx.name, ctx.op, LayerKind.GEMM, ctx.activations, ctx.outputs,
                 weight_shape=weight_shape, mvm=geometry,
                 attributes={"lowering": recipe, "M": m, "K": k, "N": n, "batch": groups})


def _activation_product(ctx: NodeContext, macs: int) -> Layer:
    return Layer(ctx.name, ctx.op, LayerKind.VECTOR, ctx.activations, ctx.outputs,
                 vector_ops=2 * macs, attributes={"reason": "product of two activations"})


@register("Gemm")
def convert_gemm(ctx: NodeContext) -> Layer:
    a, b = ctx.node.input[0], ctx.node.input[1]
    attrs = ctx.attrs
    a_shape, b_shape = ctx.shape(a), ctx.shape(b)
    m, k = a_shape[::-1] if attrs.get("transA", 0) else a_shape
    n = b_shape[0] if attrs.get("transB", 0) else b_shape[1]
    if ctx.is_const(b):
        return _gemm_layer(ctx, m=m, k=k, n=n, groups=1, weight_shape=b_shape,
                           recipe=f"GEMM y = x W: M={m}, K={k}, N={n}")
    if ctx.is_const(a):  # y = W x: the columns of x are the input vectors
        return _gemm_layer(ctx, m=n, k=k, n=m, groups=1, weight_shape=a_shape,
                           recipe=f"GEMM y^T = x^T W^T: M={n}, K={k}, N={m}")
    return _activation_product(ctx, m * k * n)


@register("MatMul")
def convert_matmul(ctx: NodeContext) -> Layer:
    a, b = ctx.node.input[0], ctx.node.input[1]
    a_shape, b_shape = ctx.shape(a), ctx.shape(b)
    out = ctx.outputs[0].shape
    k = a_shape[-1]
    macs = math.prod(out) * k
    if ctx.is_const(b):
        n = b_shape[-1] if len(b_shape) > 1 else 1
        groups = math.prod(b_shape[:-2]) if len(b_shape) > 2 else 1
        m = math.prod(out) // (n * groups)  # every matrix sees all broadcast rows
        return _gemm_layer(ctx, m=m, k=k, n=n, groups=groups, weight_shape=b_shape,
                           recipe=f"TTGT: reshape x to [{groups}][{m}][{k}], GEMM with "
                                  f"W[{groups}][{k}][{n}]")
    if ctx.is_const(a):  # y = W x: the columns of x are the input vectors
        m_w = a_shape[-2] if len(a_shape) > 1 else 1
        groups = math.prod(a_shape[:-2]) if len(a_shape) > 2 else 1
        vectors = math.prod(out) // (m_w * groups)
        return _gemm_layer(ctx, m=vectors, k=k, n=m_w, groups=groups, weight_shape=a_shape,
                           recipe=f"TTGT: transpose x to [{groups}][{vectors}][{k}], GEMM with "
                                  f"W^T[{groups}][{k}][{m_w}], transpose back")
    return _activation_product(ctx, macs)


def contraction(equation: str, const_index: int, shapes: list[tuple[int, ...]]) -> dict:
    """Classify the indices of a two-operand einsum whose operand ``const_index`` is constant.

    Returns sizes ``batch``, ``m`` (activation-only free indices), ``k`` (contracted) and ``n``
    (constant-only free indices), and the index letters of each class.
    """
    lhs, _, out = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != 2 or "..." in equation or "->" not in equation:
        raise ValueError("only explicit two-operand equations without '...' are supported")
    const, act = terms[const_index], terms[1 - const_index]
    size = {}
    for term, shape in zip(terms, shapes, strict=True):
        if len(term) != len(shape):
            raise ValueError(f"term '{term}' does not match an operand of rank {len(shape)}")
        size.update(zip(term, shape, strict=True))
    classes = {"batch": [c for c in const if c in act and c in out],
               "k": [c for c in const if c in act and c not in out],
               "n": [c for c in const if c not in act and c in out],
               "m": [c for c in act if c not in const and c in out]}
    lone = [c for c in const + act if c not in out and (c not in const or c not in act)]
    if lone:
        raise ValueError(f"indices {''.join(lone)} are summed within one operand")
    result = {name: math.prod(size[c] for c in letters) for name, letters in classes.items()}
    result["letters"] = {name: "".join(letters) for name, letters in classes.items()}
    return result


@register("Einsum")
def convert_einsum(ctx: NodeContext) -> Layer:
    equation = ctx.attrs["equation"]
    equation = equation.decode() if isinstance(equation, bytes) else equation
    names = list(ctx.node.input)
    const = [i for i, n in enumerate(names) if ctx.is_const(n)]
    shapes = [ctx.shape(n) for n in names]
    if len(names) == 2 and not const:
        per_output = summed_size(equation, shapes)
        return _activation_product(ctx, math.prod(ctx.outputs[0].shape) * per_output)
    if len(names) != 2 or len(const) != 1:  # a transpose, a trace, or a 3-operand product
        return Layer(ctx.name, ctx.op, LayerKind.VECTOR, ctx.activations, ctx.outputs,
                     vector_ops=sum(math.prod(s) for s in shapes),
                     attributes={"equation": equation})
    try:
        c = contraction(equation, const[0], shapes)
    except ValueError as exc:
        raise ctx.error(f"equation '{equation}': {exc}") from None
    letters = c["letters"]
    return _gemm_layer(
        ctx, m=c["m"], k=c["k"], n=c["n"], groups=c["batch"], weight_shape=shapes[const[0]],
        recipe=f"TTGT '{equation}': transpose activation to [{letters['batch']}][{letters['m']}]"
               f"[{letters['k']}], weight to [{letters['batch']}][{letters['k']}][{letters['n']}],"
               f" GEMM, transpose to the output order")


def summed_size(equation: str, shapes: list[tuple[int, ...]]) -> int:
    """Product of the sizes of the summed indices (MACs per output element)."""
    lhs, _, out = equation.replace(" ", "").partition("->")
    size = {}
    for term, shape in zip(lhs.split(","), shapes, strict=False):
        size.update(zip(term, shape, strict=False))
    return math.prod(v for c, v in size.items() if c not in out) or 1
