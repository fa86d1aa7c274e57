"""qgpu image/ssb/parallax PNG options: --png-scale, --annotate, the diverging default for DPC maps, and the
calibration in every product's JSON (the sample's scan step and detector mrad/px, from `qgpu info`-independent
h5py reads of /entry/calibration)."""
import json
import struct
import zlib

import numpy as np
import pytest

from conftest import qgpu


def read_png(path):
    """(rows, cols, 4) uint8 of an 8-bit RGBA PNG, decoded here with zlib (independent of libpng)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour == 6
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = width * 4
    out = np.zeros((height, stride), np.uint8)
    prev = np.zeros(stride, np.int32)
    for r in range(height):
        f, line = raw[r * (stride + 1)], np.frombuffer(raw[r * (stride + 1) + 1:(r + 1) * (stride + 1)], np.uint8)
        cur = line.astype(np.int32)
        if f == 1:
            for i in range(4, stride):
                cur[i] = (cur[i] + cur[i - 4]) & 255
        elif f == 2:
            cur = (cur + prev) & 255
        elif f == 3:
            for i in range(stride):
                cur[i] = (cur[i] + ((cur[i - 4] if i >= 4 else 0) + prev[i]) // 2) & 255
        elif f == 4:
            for i in range(stride):
                a, b, c = (cur[i - 4] if i >= 4 else 0), prev[i], (prev[i - 4] if i >= 4 else 0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out[r] = cur
        prev = cur
    return out.reshape(height, width, 4)


@pytest.fixture(scope="module")
def calibration(sample):
    h5py = pytest.importorskip("h5py")
    with h5py.File(sample[0]) as f:
        g = f["/entry/calibration"]
        return float(np.asarray(g.attrs["scan_step_angstrom"])), float(np.asarray(g.attrs["detector_mrad_per_pixel"]))


def test_png_scale_enlarges_nearest(sample, tmp_path):
    path, _ = sample
    plain, big = tmp_path / "plain", tmp_path / "big"
    assert qgpu("image", path, "--backend", "cpu", "--bf", "-o", plain).returncode == 0
    r = qgpu("image", path, "--backend", "cpu", "--bf", "--png-scale", 4, "-o", big)
    assert r.returncode == 0, r.stderr
    small, large = read_png(plain / "bf.png"), read_png(big / "bf.png")
    assert small.shape == (10, 12, 4) and large.shape == (40, 48, 4)
    np.testing.assert_array_equal(large, np.repeat(np.repeat(small, 4, axis=0), 4, axis=1))
    shown = json.load(open(big / "bf.json"))["display"]
    assert shown["output_shape"] == [40, 48, 4] and shown["parameters"]["figure"]["png_scale"] == 4


def test_every_product_json_carries_its_calibration(sample, calibration, tmp_path):
    path, _ = sample
    step, mrad = calibration
    r = qgpu("image", path, "--backend", "cpu", "--bf", "--adf", "--com", "--dpc", "--mean", "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    for name in ("bf", "adf", "com_row", "com_col", "dpc_row", "dpc_col"):
        cal = json.load(open(tmp_path / f"{name}.json"))["calibration"]
        assert cal["scan_step_angstrom"] == pytest.approx(step) and cal["pixel_size"] == pytest.approx(step), name
        assert cal["pixel_unit"] == "angstrom/px" and cal["space"] == "scan"
        assert cal["detector_mrad_per_pixel"] == pytest.approx(mrad)
    cal = json.load(open(tmp_path / "mean_pattern.json"))["calibration"]
    assert cal["pixel_size"] == pytest.approx(mrad) and cal["pixel_unit"] == "mrad/px"
    binned = tmp_path / "binned"
    r = qgpu("image", path, "--backend", "cpu", "--bf", "--mean", "--bin-scan", 2, "--bin-detector", 2, "-o", binned)
    assert r.returncode == 0, r.stderr
    assert json.load(open(binned / "bf.json"))["calibration"]["pixel_size"] == pytest.approx(2 * step)
    assert json.load(open(binned / "mean_pattern.json"))["calibration"]["pixel_size"] == pytest.approx(2 * mrad)


def test_dpc_maps_are_diverging_and_symmetric_by_default(sample, tmp_path):
    path, _ = sample
    r = qgpu("image", path, "--backend", "cpu", "--dpc", "--bf", "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    for name in ("dpc_row", "dpc_col"):
        shown = json.load(open(tmp_path / f"{name}.json"))["display"]["parameters"]
        assert shown["colormap"] == "RdBu_r"
        assert shown["lo"] == -shown["hi"] and shown["hi"] > 0
        field = np.load(tmp_path / f"{name}.npy")
        # m = the larger magnitude of the default 0.5 / 99.5 percentile values (order statistics, no interpolation)
        v = np.sort(field.ravel())
        ends = [v[int(np.floor(p / 100 * (v.size - 1) + 0.5))] for p in (0.5, 99.5)]
        assert shown["hi"] == pytest.approx(max(abs(float(e)) for e in ends), rel=1e-6)
        png = read_png(tmp_path / f"{name}.png")
        # the most negative pixel is blue (b > r), the most positive red (r > b)
        lo, hi = np.unravel_index(field.argmin(), field.shape), np.unravel_index(field.argmax(), field.shape)
        if field[lo] < 0:
            assert png[lo][2] > png[lo][0]
        if field[hi] > 0:
            assert png[hi][0] > png[hi][2]
    assert json.load(open(tmp_path / "bf.json"))["display"]["parameters"]["colormap"] == "inferno"
    given = tmp_path / "given"
    r = qgpu("image", path, "--backend", "cpu", "--dpc", "--colormap", "gray", "-o", given)
    assert r.returncode == 0, r.stderr
    shown = json.load(open(given / "dpc_row.json"))["display"]["parameters"]
    assert shown["colormap"] == "gray" and shown["lo"] == -shown["hi"]


def test_annotate_adds_a_colourbar_and_a_scale_bar(sample, calibration, tmp_path):
    path, _ = sample
    step, _ = calibration
    r = qgpu("image", path, "--backend", "cpu", "--bf", "--png-scale", 8, "--annotate", "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    png = read_png(tmp_path / "bf.png")
    fig = json.load(open(tmp_path / "bf.json"))["display"]["parameters"]["figure"]
    assert png.shape[0] == 80 and png.shape[1] == 96 + fig["colorbar"]["width"]
    assert fig["pixel_size"] == pytest.approx(step)
    bar = fig["scale_bar"]
    # a quarter of the 96 px width is 96 / 8 / 4 = 3 scan steps; the bar is the longest round length within it
    assert bar["pixels"] == pytest.approx(8 * (bar["length"] * (10 if bar["unit"] == "nm" else 1)) / step, abs=0.5)
    assert 0 < bar["pixels"] <= 96 / 4
    # the colourbar column: the top of the bar is inferno's last colour, its bottom the first
    col = 96 + 2 + 1
    assert tuple(png[3, col, :3]) == (252, 255, 164) and tuple(png[80 - 4, col, :3]) == (0, 0, 4)
    # the scale bar: white pixels on a black box in the bottom-left corner
    corner = png[60:78, 2:30, :3]
    assert (corner == 255).all(axis=2).sum() >= bar["pixels"] * 2 and (corner == 0).all(axis=2).sum() > 20


def test_bad_png_scale_fails_before_loading(sample, tmp_path):
    r = qgpu("image", sample[0], "--bf", "--png-scale", 0, "-o", tmp_path)
    assert r.returncode != 0 and "--png-scale" in r.stderr


def test_ssb_phase_json_has_the_step_it_used(sample, calibration, tmp_path):
    path, _ = sample
    r = qgpu("ssb", path, "--backend", "cpu", "--step", 1.25, "--png-scale", 2, "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    out = json.load(open(tmp_path / "ssb_phase.json"))
    assert out["calibration"]["pixel_size"] == 1.25
    assert read_png(tmp_path / "ssb_phase.png").shape == (20, 24, 4)
