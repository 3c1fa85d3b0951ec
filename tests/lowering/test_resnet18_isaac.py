"""Crossbars per layer of resnet18 (224x224) on ISAAC, derived by hand.

ISAAC (PIMCOMP Arch-A): 128 x 128 crossbars, 2-bit cells, 16-bit weights stored natively, so a
weight takes 16 / 2 = 8 columns and one crossbar row holds 128 / 8 = 16 weights. In PIMCOMP's
default unfolding (IK², O, 1) a K x K conv from I to O channels is one matrix of
H = I * K * K rows by W = O columns, so

    array groups per replica  = ceil(H / 128)
    crossbars per array group = ceil(O * 8 / 128) = ceil(O / 16)

layer(s)                         H = I*K*K      AGs   xbars/AG   xbars   count   total
conv1   7x7, 3 -> 64             147             2        4         8      1        8
layer1  3x3, 64 -> 64            576             5        4        20      4       80
layer2  3x3, 64 -> 128 (s2)      576             5        8        40      1       40
        3x3, 128 -> 128          1152            9        8        72      3      216
        1x1, 64 -> 128 (down)    64              1        8         8      1        8
layer3  3x3, 128 -> 256 (s2)     1152            9       16       144      1      144
        3x3, 256 -> 256          2304           18       16       288      3      864
        1x1, 128 -> 256 (down)   128             1       16        16      1       16
layer4  3x3, 256 -> 512 (s2)     2304           18       32       576      1      576
        3x3, 512 -> 512          4608           36       32      1152      3     3456
        1x1, 256 -> 512 (down)   256             2       32        64      1       64
fc      512 -> 1000              512             4       63       252      1      252
                                                                            total 5724
"""

from __future__ import annotations

from collections import Counter

from pimsolve.api import inspect_model

# (H, O) -> (array groups, crossbars per AG, crossbars per replica, how many layers), by hand
EXPECTED = {
    (147, 64): (2, 4, 8, 1),
    (576, 64): (5, 4, 20, 4),
    (576, 128): (5, 8, 40, 1),
    (1152, 128): (9, 8, 72, 3),
    (64, 128): (1, 8, 8, 1),
    (1152, 256): (9, 16, 144, 1),
    (2304, 256): (18, 16, 288, 3),
    (128, 256): (1, 16, 16, 1),
    (2304, 512): (18, 32, 576, 1),
    (4608, 512): (36, 32, 1152, 3),
    (256, 512): (2, 32, 64, 1),
    (512, 1000): (4, 63, 252, 1),
}


def test_crossbars_per_layer_match_the_hand_derivation() -> None:
    workload = inspect_model("resnet18", target="isaac").workload
    assert workload is not None
    seen = Counter()
    for layer in workload.mvm_layers:
        u = layer.unfolding
        key = (u.height, u.width)
        assert key in EXPECTED, f"{layer.layer}: unexpected matrix {key}"
        ags, per_ag, total, _ = EXPECTED[key]
        assert (u.array_groups, u.crossbars_per_ag, u.crossbars) == (ags, per_ag, total), \
            layer.layer
        seen[key] += 1
    assert seen == Counter({key: count for key, (*_, count) in EXPECTED.items()})
    assert workload.crossbars_needed == 5724
    assert workload.crossbars_available == 168 * 96 and workload.fits
