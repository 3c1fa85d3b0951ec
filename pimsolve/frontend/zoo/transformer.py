"""Transformer zoo models (small ViT, one BERT-base layer, one GPT-2 block).

Every builder takes a :class:`~pimsolve.frontend.zoo._builder.GraphBuilder`
and the name of its input, and returns the name of its output. The graphs
follow the op patterns of PyTorch ONNX exports: linear layers are ``MatMul``
with a constant weight followed by ``Add`` of the bias, attention heads are
split with ``Reshape``/``Transpose``, and scores are ``MatMul`` of two
activations.
"""

from __future__ import annotations

import numpy as np

from ._builder import GraphBuilder

__all__ = ["bert_base_layer", "gpt_block", "vit_small"]

_MASKED = -10000.0


def _attend(
    b: GraphBuilder, q: str, k: str, v: str, *, split: str, merge: str, head_dim: int,
    mask: str | None = None,
) -> str:
    """Multi-head scaled dot-product attention on ``batch x seq x dim`` tensors.

    ``split`` reshapes to ``batch x seq x heads x head_dim`` and ``merge`` back.
    """
    q = b.op("Transpose", [b.op("Reshape", [q, split])], perm=[0, 2, 1, 3])
    k = b.op("Transpose", [b.op("Reshape", [k, split])], perm=[0, 2, 3, 1])
    v = b.op("Transpose", [b.op("Reshape", [v, split])], perm=[0, 2, 1, 3])
    scores = b.op("Div", [b.op("MatMul", [q, k]), b.const(np.sqrt(head_dim))])
    if mask is not None:
        scores = b.op("Add", [scores, mask])
    probs = b.op("Softmax", [scores], axis=-1)
    ctx = b.op("Transpose", [b.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    return b.op("Reshape", [ctx, merge])


def _qkv(b: GraphBuilder, x: str, dim: int) -> list[str]:
    """Three separate ``MatMul + Add`` projections."""
    return [b.linear(x, dim, dim) for _ in range(3)]


def _vit_block(b: GraphBuilder, x: str, *, dim: int, heads: int, mlp: int, seq: int) -> str:
    """Pre-LN encoder block; the MLP's first layer is an ``Einsum``."""
    split, merge = b.ints([1, seq, heads, dim // heads]), b.ints([1, seq, dim])
    q, k, v = _qkv(b, b.layernorm(x, dim, eps=1e-6), dim)
    attn = _attend(b, q, k, v, split=split, merge=merge, head_dim=dim // heads)
    x = b.op("Add", [x, b.linear(attn, dim, dim)])
    h = b.linear(b.layernorm(x, dim, eps=1e-6), dim, mlp, einsum="bld,df->blf")
    return b.op("Add", [x, b.linear(b.gelu_erf(h), mlp, dim)])


def vit_small(b: GraphBuilder, x: str) -> str:
    """ViT for 3x32x32 images: patch 4, dim 192, 3 heads, 4 blocks, MLP 768, 10 classes."""
    dim, patch, tokens = 192, 4, (32 // 4) ** 2
    x = b.conv(x, 3, dim, patch, stride=patch)
    x = b.op("Transpose", [b.op("Reshape", [x, b.ints([1, dim, tokens])])], perm=[0, 2, 1])
    x = b.op("Concat", [b.param("cls_token", (1, 1, dim), std=0.02), x], axis=1)
    x = b.op("Add", [x, b.param("pos_embed", (1, tokens + 1, dim), std=0.02)])
    for i in range(4):
        with b.scope(f"block{i}"):
            x = _vit_block(b, x, dim=dim, heads=3, mlp=768, seq=tokens + 1)
    cls = b.op("Gather", [x, b.const(0, np.int64)], axis=1)
    return b.gemm(b.layernorm(cls, dim, eps=1e-6), dim, 10, out="logits")


def _runtime_shapes(b: GraphBuilder, x: str, heads: int, head_dim: int) -> tuple[str, str]:
    """Head split/merge shapes computed from ``Shape(x)`` as exported BERTs do."""
    shape = b.op("Shape", [x])
    batch, seq = (
        b.op("Unsqueeze", [b.op("Gather", [shape, b.const(i, np.int64)], axis=0), b.ints([0])])
        for i in (0, 1)
    )
    split = b.op("Concat", [batch, seq, b.ints([heads]), b.ints([head_dim])], axis=0)
    merge = b.op("Concat", [batch, seq, b.ints([heads * head_dim])], axis=0)
    return split, merge


def bert_base_layer(b: GraphBuilder, x: str) -> str:
    """One post-LN BERT-base encoder layer on ``1 x 128 x 768`` hidden states.

    The additive attention mask (``1 x 1 x 1 x 128``) masks the last 8
    positions as padding.
    """
    dim, heads, ff, seq = 768, 12, 3072, 128
    split, merge = _runtime_shapes(b, x, heads, dim // heads)
    mask = b.const(np.where(np.arange(seq) < seq - 8, 0.0, _MASKED).reshape(1, 1, 1, seq))
    q, k, v = _qkv(b, x, dim)
    attn = _attend(b, q, k, v, split=split, merge=merge, head_dim=dim // heads, mask=mask)
    x = b.layernorm(b.op("Add", [b.linear(attn, dim, dim), x]), dim, eps=1e-12)
    h = b.linear(b.gelu_erf(b.linear(x, dim, ff)), ff, dim)
    return b.layernorm(b.op("Add", [h, x]), dim, eps=1e-12, out="output")


def gpt_block(b: GraphBuilder, x: str) -> str:
    """One pre-LN GPT-2 block on ``1 x 64 x 768``: fused QKV + ``Split``, causal mask, ``Gelu``."""
    dim, heads, ff, seq = 768, 12, 3072, 64
    split, merge = b.ints([1, seq, heads, dim // heads]), b.ints([1, seq, dim])
    causal = np.triu(np.full((seq, seq), _MASKED, np.float32), k=1).reshape(1, 1, seq, seq)
    qkv = b.linear(b.layernorm(x, dim), dim, 3 * dim)
    q, k, v = b.op_multi("Split", [qkv, b.ints([dim] * 3)], n_out=3, axis=2)
    attn = _attend(
        b, q, k, v, split=split, merge=merge, head_dim=dim // heads, mask=b.const(causal)
    )
    x = b.op("Add", [x, b.linear(attn, dim, dim)])
    h = b.op("Gelu", [b.linear(b.layernorm(x, dim), dim, ff)], approximate="tanh")
    return b.op("Add", [x, b.linear(h, ff, dim)], out="output")
