"""qgpu image: values against numpy on frames read by h5py, option checks before any loading, exit codes."""
import json

import numpy as np
import pytest

from conftest import half_maximum_disk, qgpu, qgpu_on_terminal


def disk_sum(frames, cr, cc, radius):
    r, c = np.mgrid[0:frames.shape[2], 0:frames.shape[3]]
    return (frames * ((r - cr) ** 2 + (c - cc) ** 2 <= radius ** 2)).sum(axis=(2, 3))


def fitted(out, name):
    """The BF disk qgpu used for NAME (provenance parameters.bf_disk), checked against the simple estimate."""
    disk = json.load(open(out / f"{name}.json"))["result"]["parameters"]["bf_disk"]
    assert disk["center_source"] == disk["radius_source"] == "fitted"
    assert disk["confident"] is True and 0.5 <= disk["confidence"] <= 1
    return disk["center"][0], disk["center"][1], disk["radius"]


def test_bare_bf_is_the_fitted_disk(sample, tmp_path):
    path, frames = sample
    r = qgpu("image", path, "--backend", "cpu", "--bf", "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    cr, cc, radius = fitted(tmp_path, "bf")
    assert "BF disk        centre" in r.stdout and "fitted centre, fitted radius; fit confidence" in r.stdout
    assert "qgpu: warning" not in r.stderr
    hr, hc, hradius = half_maximum_disk(frames)  # the sample's disk is clean: both estimates agree
    assert abs(radius - hradius) < 1 and abs(cr - hr) < 0.5 and abs(cc - hc) < 0.5
    assert abs(radius - 8) < 1 and abs(cr - 24) < 0.5 and abs(cc - 24) < 0.5  # the simulated disk
    mask = json.load(open(tmp_path / "bf.json"))["result"]["parameters"]["mask"]
    assert mask["kind"] == "disk"
    assert mask["radius"] == radius and mask["center"] == [cr, cc]
    bf = np.load(tmp_path / "bf.npy")
    assert bf.dtype == np.uint64 and bf.shape == (10, 12)
    np.testing.assert_array_equal(bf, disk_sum(frames, cr, cc, radius))
    assert (tmp_path / "bf.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bf_with_a_radius_and_centre(sample, tmp_path):
    path, frames = sample
    r = qgpu("image", path, "--backend", "cpu", "--bf", 4, "--center", 23, 24, "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "bf.npy"), disk_sum(frames, 23, 24, 4))


def test_bare_adf_ring_lies_outside_the_bf_disk(sample, tmp_path):
    path, frames = sample
    r = qgpu("image", path, "--backend", "cpu", "--adf", "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    cr, cc, radius = fitted(tmp_path, "adf")
    mask = json.load(open(tmp_path / "adf.json"))["result"]["parameters"]["mask"]
    edge = min(cr, 47 - cr, cc, 47 - cc)
    assert mask["inner"] == pytest.approx(1.2 * radius, rel=1e-12)
    assert mask["outer"] == pytest.approx(min(3 * radius, edge), rel=1e-12)
    rr, c = np.mgrid[0:48, 0:48]
    d2 = (rr - cr) ** 2 + (c - cc) ** 2
    ring = (d2 >= mask["inner"] ** 2) & (d2 <= mask["outer"] ** 2)
    np.testing.assert_array_equal(np.load(tmp_path / "adf.npy"), (frames * ring).sum(axis=(2, 3)))


def test_explicit_adf_radii(sample, tmp_path):
    path, frames = sample
    r = qgpu("image", path, "--backend", "cpu", "--adf", 5, 9.5, "--center", 24, 24, "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    rr, c = np.mgrid[0:48, 0:48]
    d2 = (rr - 24) ** 2 + (c - 24) ** 2
    np.testing.assert_array_equal(np.load(tmp_path / "adf.npy"),
                                  (frames * ((d2 >= 25) & (d2 <= 9.5 ** 2))).sum(axis=(2, 3)))


@pytest.mark.parametrize("args, message", [
    (["--bf", "--colormap", "jet"], "unknown colormap 'jet'"),
    (["--bf", "--scale", "loggy"], "unknown scale 'loggy'"),
    (["--bf", "--percentiles", "90", "10"], "percentiles must satisfy"),
    (["--bf", "--percentiles", "-1", "10"], "percentiles must satisfy"),
    (["--adf", "46", "24"], "--adf: need 0 <= INNER < OUTER"),
    (["--adf", "3"], "--adf takes no value"),
    (["--bf", "-2"], "--bf radius must be"),
    (["--bf", "wide"], "'wide' is not a finite number"),
    (["--bf", "--backend", "opencl"], "unknown backend 'opencl'"),
    (["--bf", "--rotation", "10", "2"], "TRANSPOSE is 0 or 1"),
    (["--bf", "-o", "/etc/passwd/x"], "cannot create the output folder '/etc/passwd/x'"),
])
def test_bad_options_fail_before_loading(sample, tmp_path, args, message):
    path, _ = sample
    extra = [] if "-o" in args else ["-o", tmp_path / "out"]
    r = qgpu("image", path, *([] if "--backend" in args else ["--backend", "cpu"]), *args, *extra)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert r.stderr.startswith("qgpu: error: ") and message in r.stderr, r.stderr
    assert "loading" not in r.stderr and "loaded" not in r.stdout  # nothing was read
    assert "terminate" not in r.stderr


def test_no_product_chosen_is_a_usage_error(sample, tmp_path):
    path, _ = sample
    r = qgpu("image", path, "--backend", "cpu", "-o", tmp_path)
    assert r.returncode != 0 and "choose at least one of" in r.stderr


def test_help_shows_defaults_and_every_colormap():
    r = qgpu("image", "--help")
    assert r.returncode == 0
    for text in ["viridis", "magma", "inferno", "plasma", "gray", "--colormap TEXT=inferno", "--scale TEXT=linear",
                 "--backend TEXT=auto", "-o,--out TEXT=out", "--bin-scan UINT=1", "fitted BF disk"]:
        assert text in r.stdout, text


def test_error_after_a_progress_bar_starts_on_its_own_line(sample, tmp_path):
    path, _ = sample
    data = bytearray(open(path, "rb").read())
    mid = len(data) // 2
    data[mid:mid + 400] = b"\xab" * 400  # corrupt chunks in the middle of the file
    bad = tmp_path / "corrupt.h5"
    bad.write_bytes(bytes(data))
    status, err = qgpu_on_terminal("image", bad, "--backend", "cpu", "--bf", "-o", tmp_path / "out")  # bars drawn
    assert status == 1
    assert "loading [" in err and "\nqgpu: error: " in err, err


def test_mean_pattern_values_and_halo_display(sample, tmp_path):
    path, frames = sample
    r = qgpu("image", path, "--backend", "cpu", "--mean", "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    mean = np.load(tmp_path / "mean_pattern.npy")
    np.testing.assert_allclose(mean, frames.mean(axis=(0, 1)), rtol=1e-6)
    shown = json.load(open(tmp_path / "mean_pattern.json"))["display"]
    assert shown["parameters"]["vmin"] == 0.0 and shown["parameters"]["upper_percentile"] == 99.9
    assert shown["parameters"]["input_operation"] == "display.pattern_log"


def test_defocused_rotation_is_calibrated_by_the_parallax(tmp_path):
    path = tmp_path / "defocused.h5"  # 150 A defocus: the DPC field no longer fixes the rotation (issues 9, 14)
    assert qgpu("sample", path, "--scan", 64, 64, "--detector", 96, 96, "--defocus", 150).returncode == 0
    r = qgpu("image", path, "--backend", "cpu", "--dpc", "-o", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr
    assert "calibrated by the parallax shift field" in r.stdout
    rot = json.load(open(tmp_path / "out" / "rotation.json"))["parameters"]
    assert rot["decided_by"] == "parallax" and rot["determined"] is True and rot["confidence"] >= 0.5
    assert rot["com_answer"]["determined"] is False and rot["com_answer"]["confidence"] < 0.1
    assert min(rot["angle_deg"], 360 - rot["angle_deg"]) < 1 and rot["transpose"] is False


def test_sample_and_serve_help_show_defaults():
    assert "--seed UINT=1" in qgpu("sample", "--help").stdout
    assert "--backend TEXT=auto" in qgpu("serve", "--help").stdout
