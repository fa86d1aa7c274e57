"""Notebook views without the widget: ds.calibration with units, rich reprs of a Dataset and of results."""
import base64
import re
import struct

import numpy as np
import pytest

import quantem.gpu as qgpu
from quantem.gpu import rich


def png_size(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:8]
    return struct.unpack(">II", data[16:24])  # IHDR width, height


@pytest.fixture(scope="module")
def ds(sample_path):
    return qgpu.io.load(sample_path, backend="cpu")


def test_calibration_has_values_units_and_sources(ds):
    cal = ds.calibration
    detail = ds.metadata["calibration_detail"]
    assert set(cal) == set(detail)
    for name, d in detail.items():
        assert float(cal[name]) == d["value"] and cal[name].unit == d["unit"] and cal[name].source == d["source"]
    assert cal.energy_kev == 300.0 and cal.energy_kev.unit == "keV" and str(cal.energy_kev) == "300 keV"
    assert cal.scan_pixel_size == pytest.approx(detail["scan_step_angstrom"]["value"])
    assert cal.detector_pixel_size.unit == "mrad/px"
    with pytest.raises(AttributeError, match="no calibration value 'camera_length'.*energy_kev"):
        cal.camera_length
    with pytest.raises(KeyError, match="camera_length"):
        cal["camera_length"]
    assert "<td>keV</td>" in cal._repr_html_() and "\u00c5" in cal._repr_html_()


def test_binned_load_has_bigger_pixels(sample_path, ds):
    binned = qgpu.io.load(sample_path, backend="cpu", bin_scan=2, bin_detector=3)
    assert binned.calibration.scan_pixel_size == pytest.approx(2 * ds.calibration.scan_pixel_size)
    assert binned.calibration.detector_pixel_size == pytest.approx(3 * ds.calibration.detector_pixel_size)
    assert qgpu.detector.bf(binned).pixel_size == (pytest.approx(2 * ds.calibration.scan_step_angstrom), "angstrom")
    assert "binning" in binned._repr_html_()


def test_dataset_html_names_everything_and_shows_two_thumbnails(ds):
    text = ds._repr_html_()
    for must in ("scan 12 x 10, detector 48 x 48", "uint16", ">cpu<", "dense (", "energy_kev", "keV",
                 "scan_step_angstrom", "\u00c5", "mean pattern", "bright field"):
        assert must in text, must
    pictures = re.findall(r"src='data:image/png;base64,([^']+)'", text)
    assert len(pictures) == 2
    mean_w, mean_h = png_size(base64.b64decode(pictures[0]))
    bf_w, bf_h = png_size(base64.b64decode(pictures[1]))
    assert mean_h == 48 * rich._thumb_scale((48, 48)) and mean_w > mean_h  # the colourbar on the right
    assert bf_h == 12 * rich._thumb_scale((12, 10)) and bf_w > 10 * rich._thumb_scale((12, 10))
    both = png_size(ds._repr_png_())
    assert both == (mean_w + 8 + bf_w, max(mean_h, bf_h))


def test_result_png_is_the_image_with_colourbar_and_scale(ds):
    bf = qgpu.detector.bf(ds)
    assert bf.pixel_size == (ds.calibration.scan_step_angstrom, "angstrom")
    s = rich._thumb_scale(bf.shape)
    rgba = rich.render_result(bf)
    plain = qgpu.display.render(bf, colormap="inferno", percentiles=(0.5, 99.5), png_scale=s)
    assert rgba.shape[0] == 12 * s and rgba.shape[1] > 10 * s
    np.testing.assert_array_equal(rgba[: 6 * s, : 10 * s], plain[: 6 * s])  # the image, top half (bar below)
    labels = rgba.provenance["parameters"]["figure"]
    assert labels["scale_bar"]["unit"] in ("angstrom", "nm") and labels["colorbar"]["lo"] < labels["colorbar"]["hi"]
    assert png_size(bf._repr_png_()) == (rgba.shape[1], rgba.shape[0])
    html = bf._repr_html_()
    assert f"min {int(bf.min())}" in html and f"max {int(bf.max())}" in html and "detector.bf" in html


def test_signed_and_pattern_results(ds):
    dr, dc = qgpu.dpc.centered_dpc(ds)
    params = rich.render_result(dr).provenance["parameters"]
    assert params["colormap"] == "RdBu_r" and params["lo"] == pytest.approx(-params["hi"])
    phase = qgpu.dpc.idpc(*qgpu.dpc.rotate_field(dr, dc, 10.0, False))
    assert phase.pixel_size == dr.pixel_size  # kept through functions of results of the same shape
    mean = qgpu.detector.mean_pattern(ds)
    assert mean.pixel_size == (ds.calibration.detector_mrad_per_pixel, "mrad")
    assert rich.render_result(mean).provenance["parameters"]["figure"]["scale_bar"]["unit"] == "mrad"
    counts, _, _ = qgpu.display.histogram(qgpu.detector.bf(ds))
    assert counts._repr_png_() is None and counts._repr_html_() is None  # 1D: the plain text repr
    derived = qgpu.detector.bf(ds) * 2
    assert not hasattr(derived, "_repr_png_")


def test_uncalibrated_and_dark_data(tmp_path):
    path = tmp_path / "zeros.npy"
    np.save(path, np.zeros((4, 5, 16, 16), np.uint16))
    ds = qgpu.io.load(path, backend="cpu")
    assert len(ds.calibration) == 0 and ds.calibration.scan_pixel_size is None
    text = ds._repr_html_()
    assert "no calibration in the file" in text
    assert "InvalidArgument" in text  # the BF disk cannot be fitted: the reason in place of the picture
    assert len(re.findall(r"data:image/png", text)) == 1  # the (flat) mean pattern only
    assert qgpu.detector.virtual_image(ds, np.ones((16, 16), bool)).pixel_size is None
