"""display.render's PNG options (png_scale, annotate, pixel_size, symmetric): the same figure code as the CLI."""
import numpy as np
import pytest

import quantem.gpu as qgpu


def ramp(rows=16, cols=20):
    return np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)


def test_png_scale_repeats_pixels():
    plain = qgpu.display.render(ramp(), colormap="gray")
    big = qgpu.display.render(ramp(), colormap="gray", png_scale=3)
    assert big.shape == (48, 60, 4)
    np.testing.assert_array_equal(big, np.repeat(np.repeat(plain, 3, axis=0), 3, axis=1))
    assert big.provenance["parameters"]["figure"]["png_scale"] == 3


def test_symmetric_puts_zero_mid_map_with_the_diverging_default():
    img = np.array([[-1.0, 0.0, 0.5, 3.0]], np.float32)
    rgba = qgpu.display.render(img, symmetric=True)
    p = rgba.provenance["parameters"]
    assert p["colormap"] == "RdBu_r" and p["lo"] == -3.0 and p["hi"] == 3.0
    assert tuple(rgba[0, 1]) == (247, 246, 246, 255)  # 0 -> the white middle (index 128)
    assert tuple(rgba[0, 3]) == (103, 0, 31, 255)     # +3 -> dark red (#67001f)
    assert rgba[0, 0, 2] > rgba[0, 0, 0]              # -1 -> blue side
    assert qgpu.display.render(img).provenance["parameters"]["colormap"] == "viridis"


def test_annotate_colourbar_and_scale_bar():
    rgba = qgpu.display.render(ramp(64, 64), colormap="viridis", png_scale=2, annotate=True, pixel_size=0.5)
    fig = rgba.provenance["parameters"]["figure"]
    assert rgba.shape == (128, 128 + fig["colorbar"]["width"], 4)
    assert fig["colorbar"]["labels"] == ["0", "4.1e+03"]
    assert fig["scale_bar"] == {"length": 5.0, "unit": "angstrom", "label": "5 A", "pixels": 20}
    assert tuple(rgba[123, 3]) == (255, 255, 255, 255) and tuple(rgba[124, 22]) == (255, 255, 255, 255)
    assert tuple(rgba[3, 128 + 2 + 1]) == (253, 231, 37, 255)  # top of the colourbar: viridis' last colour
    mrad = qgpu.display.render(ramp(64, 64), png_scale=2, annotate=True, pixel_size=(0.8, "mrad"))
    assert mrad.provenance["parameters"]["figure"]["scale_bar"]["label"] == "10 MRAD"


def test_bad_figure_options_raise():
    with pytest.raises(qgpu.InvalidArgument, match="png_scale"):
        qgpu.display.render(ramp(), png_scale=0)
    with pytest.raises(qgpu.InvalidArgument, match="pixel size"):
        qgpu.display.render(ramp(), annotate=True, pixel_size=-1.0)
    with pytest.raises(qgpu.InvalidArgument, match="unit"):
        qgpu.display.render(ramp(), annotate=True, pixel_size=(1.0, "furlong"))
    with pytest.raises(TypeError, match="unknown parameter 'scale_bar'.*annotate"):
        qgpu.display.render(ramp(), scale_bar=True)
