"""The instance's HT load counts: the one-pass pixel count equals a per-range set count."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from pimsolve.stages.placement.instance import _range_pixels


def _naive(geo, windows: range) -> int:
    ho, wo = geo.output_hw
    hi, wi = geo.input_hw
    seen = set()
    for t in windows:
        n, rest = divmod(t, ho * wo)
        oy, ox = divmod(rest, wo)
        for i in range(geo.kernel[0]):
            for j in range(geo.kernel[1]):
                y = oy * geo.strides[0] - geo.pads[0] + i * geo.dilations[0]
                x = ox * geo.strides[1] - geo.pads[1] + j * geo.dilations[1]
                if 0 <= y < hi and 0 <= x < wi:
                    seen.add((n, y, x))
    return len(seen)


@settings(max_examples=40, deadline=None)
@given(st.integers(3, 9), st.integers(3, 9), st.integers(1, 3), st.integers(1, 2),
       st.integers(0, 1), st.integers(1, 2), st.integers(1, 2), st.data())
def test_range_pixels_match_a_set_count(hi, wi, k, stride, pad, dilation, batch, data):
    span = (k - 1) * dilation + 1
    ho, wo = (hi + 2 * pad - span) // stride + 1, (wi + 2 * pad - span) // stride + 1
    if ho < 1 or wo < 1:
        return
    geo = SimpleNamespace(output_hw=(ho, wo), input_hw=(hi, wi), kernel=(k, k),
                          strides=(stride, stride), dilations=(dilation, dilation),
                          pads=(pad, pad, pad, pad))
    windows = batch * ho * wo
    reps = sorted(set(data.draw(st.lists(st.integers(1, windows), min_size=1, max_size=4))))
    sums, whole = _range_pixels(geo, windows, reps)
    assert whole == _naive(geo, range(windows))
    for r, got in zip(reps, sums, strict=True):
        assert got == sum(_naive(geo, range(i * windows // r, (i + 1) * windows // r))
                          for i in range(r))
