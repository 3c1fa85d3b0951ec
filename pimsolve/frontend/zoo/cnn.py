"""Convolutional zoo models (VGG, ResNet, GoogLeNet, SqueezeNet).

Every builder takes a :class:`~pimsolve.frontend.zoo._builder.GraphBuilder`
and the name of the NCHW image input, and returns the name of the
``logits`` output. Layer shapes follow the torchvision definitions.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._builder import GraphBuilder

__all__ = ["googlenet", "resnet18", "resnet18_28", "resnet34", "squeezenet", "vgg8_28", "vgg16"]

_VGG8_PLAN = (128, 128, "M", 256, 256, "M", 512, 512, "M")
_VGG16_PLAN = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
               512, 512, 512, "M")

# SqueezeNet 1.1 fire modules (in, squeeze, expand), a 3x3/2 MaxPool before each group
_SQUEEZENET_FIRES = (
    ((64, 16, 64), (128, 16, 64)),
    ((128, 32, 128), (256, 32, 128)),
    ((256, 48, 192), (384, 48, 192), (384, 64, 256), (512, 64, 256)),
)

# torchvision GoogLeNet: (in, 1x1, 3x3 reduce, 3x3, "5x5" reduce, "5x5" (a 3x3), pool proj)
_INCEPTION: dict[str, tuple[int, ...]] = {
    "3a": (192, 64, 96, 128, 16, 32, 32),
    "3b": (256, 128, 128, 192, 32, 96, 64),
    "4a": (480, 192, 96, 208, 16, 48, 64),
    "4b": (512, 160, 112, 224, 24, 64, 64),
    "4c": (512, 128, 128, 256, 24, 64, 64),
    "4d": (512, 112, 144, 288, 32, 64, 64),
    "4e": (528, 256, 160, 320, 32, 128, 128),
    "5a": (832, 256, 160, 320, 32, 128, 128),
    "5b": (832, 384, 192, 384, 48, 128, 128),
}


def _cbr(
    b: GraphBuilder, x: str, cin: int, cout: int, k: int, *, stride: int = 1, pad: int = 0,
    eps: float = 1e-5, relu: bool = True,
) -> str:
    """Bias-free Conv, BatchNormalization and (optionally) Relu."""
    y = b.bn(b.conv(x, cin, cout, k, stride=stride, pad=pad, bias=False), cout, eps=eps)
    return b.relu(y) if relu else y


def _vgg_features(b: GraphBuilder, x: str, cin: int, plan: Sequence[int | str]) -> str:
    """3x3 Conv+Relu layers, ``"M"`` being a 2x2 stride-2 MaxPool."""
    for item in plan:
        if item == "M":
            x = b.maxpool(x, 2, 2)
        else:
            x = b.relu(b.conv(x, cin, int(item), 3, pad=1))
            cin = int(item)
    return x


def vgg8_28(b: GraphBuilder, x: str) -> str:
    """VGG8 on a 1x28x28 image: 6 conv 3x3 (128-128-256-256-512-512), FC 1024, FC 10."""
    x = b.op("Flatten", [_vgg_features(b, x, 1, _VGG8_PLAN)], axis=1)
    x = b.relu(b.gemm(x, 512 * 3 * 3, 1024))
    return b.gemm(x, 1024, 10, out="logits")


def vgg16(b: GraphBuilder, x: str) -> str:
    """torchvision VGG16 (configuration D, no BN): 13 conv + 3 FC."""
    x = b.op("Flatten", [_vgg_features(b, x, 3, _VGG16_PLAN)], axis=1)
    for fin, fout in ((512 * 7 * 7, 4096), (4096, 4096)):
        x = b.op("Dropout", [b.relu(b.gemm(x, fin, fout))])
    return b.gemm(x, 4096, 1000, out="logits")


def _basic_block(b: GraphBuilder, x: str, cin: int, cout: int, stride: int) -> str:
    """ResNet basic block with a 1x1 Conv+BN shortcut when the shape changes."""
    y = _cbr(b, x, cin, cout, 3, stride=stride, pad=1)
    y = _cbr(b, y, cout, cout, 3, pad=1, relu=False)
    if stride != 1 or cin != cout:
        x = _cbr(b, x, cin, cout, 1, stride=stride, relu=False)
    return b.relu(b.op("Add", [y, x]))


def _resnet_stages(b: GraphBuilder, x: str, blocks: Sequence[int]) -> str:
    """The four stages (64/128/256/512 channels) of a basic-block ResNet."""
    cin = 64
    for stage, (count, width) in enumerate(zip(blocks, (64, 128, 256, 512), strict=True)):
        for i in range(count):
            with b.scope(f"layer{stage + 1}.{i}"):
                x = _basic_block(b, x, cin, width, 2 if stage and not i else 1)
            cin = width
    return x


def _resnet_imagenet(b: GraphBuilder, x: str, blocks: Sequence[int]) -> str:
    x = b.maxpool(_cbr(b, x, 3, 64, 7, stride=2, pad=3), 3, 2, pad=1)
    return b.gemm(b.gap_flatten(_resnet_stages(b, x, blocks)), 512, 1000, out="logits")


def resnet18(b: GraphBuilder, x: str) -> str:
    """torchvision ResNet-18 (BN not folded)."""
    return _resnet_imagenet(b, x, (2, 2, 2, 2))


def resnet34(b: GraphBuilder, x: str) -> str:
    """torchvision ResNet-34 (BN not folded)."""
    return _resnet_imagenet(b, x, (3, 4, 6, 3))


def resnet18_28(b: GraphBuilder, x: str) -> str:
    """ResNet-18 for 1x28x28 input: 3x3 stride-1 stem, no max pool, 10 classes."""
    x = _resnet_stages(b, _cbr(b, x, 1, 64, 3, pad=1), (2, 2, 2, 2))
    return b.gemm(b.gap_flatten(x), 512, 10, out="logits")


def _inception(b: GraphBuilder, x: str, cfg: tuple[int, ...]) -> str:
    """torchvision Inception block: four branches concatenated on channels."""
    cin, c1, c3r, c3, c5r, c5, proj = cfg
    branches = [
        _cbr(b, x, cin, c1, 1, eps=1e-3),
        _cbr(b, _cbr(b, x, cin, c3r, 1, eps=1e-3), c3r, c3, 3, pad=1, eps=1e-3),
        _cbr(b, _cbr(b, x, cin, c5r, 1, eps=1e-3), c5r, c5, 3, pad=1, eps=1e-3),
        _cbr(b, b.maxpool(x, 3, 1, pad=1, ceil=True), cin, proj, 1, eps=1e-3),
    ]
    return b.op("Concat", branches, axis=1)


def googlenet(b: GraphBuilder, x: str) -> str:
    """torchvision GoogLeNet (Inception v1) without the auxiliary heads."""
    x = b.maxpool(_cbr(b, x, 3, 64, 7, stride=2, pad=3, eps=1e-3), 3, 2, ceil=True)
    x = _cbr(b, _cbr(b, x, 64, 64, 1, eps=1e-3), 64, 192, 3, pad=1, eps=1e-3)
    x = b.maxpool(x, 3, 2, ceil=True)
    for key, cfg in _INCEPTION.items():
        with b.scope(f"inception{key}"):
            x = _inception(b, x, cfg)
        if key == "3b":
            x = b.maxpool(x, 3, 2, ceil=True)
        elif key == "4e":
            x = b.maxpool(x, 2, 2, ceil=True)
    x = b.op("Dropout", [b.gap_flatten(x), b.const(0.2)])
    return b.gemm(x, 1024, 1000, out="logits")


def _fire(b: GraphBuilder, x: str, cin: int, squeeze: int, expand: int) -> str:
    """SqueezeNet fire module: 1x1 squeeze, then 1x1 and 3x3 expands concatenated."""
    s = b.relu(b.conv(x, cin, squeeze, 1))
    e1 = b.relu(b.conv(s, squeeze, expand, 1))
    e3 = b.relu(b.conv(s, squeeze, expand, 3, pad=1))
    return b.op("Concat", [e1, e3], axis=1)


def squeezenet(b: GraphBuilder, x: str) -> str:
    """torchvision SqueezeNet 1.1 with its 1x1 conv classifier."""
    x = b.relu(b.conv(x, 3, 64, 3, stride=2))
    for stage, fires in enumerate(_SQUEEZENET_FIRES):
        x = b.maxpool(x, 3, 2, ceil=True)
        for i, cfg in enumerate(fires):
            with b.scope(f"fire{stage}.{i}"):
                x = _fire(b, x, *cfg)
    x = b.relu(b.conv(b.op("Dropout", [x]), 512, 1000, 1))
    return b.gap_flatten(x, out="logits")
