"""The BF disk on the command line: --center/--radius on image, ssb and parallax replace the fit everywhere it is used
and are recorded as given; a disk inside a bright lobe is found, and its uncertain fit warns naming the overrides."""
import json

import numpy as np
import pytest

from conftest import qgpu


def ring_sum(frames, cr, cc, inner, outer):
    r, c = np.mgrid[0:frames.shape[2], 0:frames.shape[3]]
    d2 = (r - cr) ** 2 + (c - cc) ** 2
    return (frames * ((d2 >= inner ** 2) & (d2 <= outer ** 2))).sum(axis=(2, 3))


def params(path):
    return json.load(open(path))["result"]["parameters"]


@pytest.fixture(scope="module")
def lobe(tmp_path_factory):
    """Scan 6x6 of 96x96 frames written by h5py: a disk of radius 14 px at (47.5, 49) inside a diffuse lobe at 75 % of
    the disk level that reaches ~38 px (the half-maximum of the summed pattern lies out there, not at the disk)."""
    h5py = pytest.importorskip("h5py")
    r, c = np.mgrid[0:96, 0:96]
    d = np.hypot(r - 47.5, c - 49.0)
    t = np.clip((d - 14) / (38 - 14), 0, 1)
    mean = np.where(d <= 14, 40.0, 0.75 * 40 * (1 - 0.3 * t) / (1 + np.exp(d - 35)))
    rng = np.random.default_rng(3)
    data = rng.poisson(mean, size=(36, 96, 96)).astype(np.uint16)
    path = tmp_path_factory.mktemp("lobe") / "lobe.h5"
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("/entry/data/data", data=data, chunks=(1, 96, 96))
        ds.attrs["scan_shape"] = np.array([6, 6], dtype=np.int64)
    return path, data.reshape(6, 6, 96, 96).astype(np.int64)


OPTICS = ["--energy", 300, "--semiangle", 20, "--step", 1]


def test_image_finds_the_disk_inside_a_lobe_and_warns(lobe, tmp_path):
    path, frames = lobe
    s = frames.sum(axis=(0, 1))
    assert np.sqrt((2 * s >= s.max()).sum() / np.pi) > 30  # the old half-maximum fit took the lobe
    r = qgpu("image", path, "--backend", "cpu", "--bf", "--adf", "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    disk = params(tmp_path / "bf.json")["bf_disk"]
    assert abs(disk["radius"] - 14) < 1 and abs(disk["center"][0] - 47.5) < 0.5 and abs(disk["center"][1] - 49) < 0.5
    assert disk["confident"] is False and disk["confidence"] < 0.5 and abs(disk["other_edge_radius"] - 36) < 4
    assert "qgpu: warning: the bright-field disk fit is uncertain" in r.stderr
    assert "--center ROW COL --radius R" in r.stderr
    assert r.stderr.count("qgpu: warning: the bright-field disk") == 1  # once, though BF and ADF both use it
    # the default ADF ring lies outside the disk found (1.2 r .. 3 r), not outside the lobe
    mask = params(tmp_path / "adf.json")["mask"]
    assert mask["inner"] == pytest.approx(1.2 * disk["radius"]) and mask["outer"] == pytest.approx(3 * disk["radius"])


def test_image_center_and_radius_replace_the_fit(lobe, tmp_path):
    path, frames = lobe
    r = qgpu("image", path, "--backend", "cpu", "--bf", "--adf", "--center", 47, 50, "--radius", 13, "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "qgpu: warning" not in r.stderr
    assert "BF disk        centre (47.00, 50.00), radius 13.00 px (given)" in r.stdout
    np.testing.assert_array_equal(np.load(tmp_path / "bf.npy"), ring_sum(frames, 47, 50, 0, 13))
    np.testing.assert_array_equal(np.load(tmp_path / "adf.npy"), ring_sum(frames, 47, 50, 1.2 * 13, 3 * 13))
    for name in ("bf", "adf"):
        disk = params(tmp_path / f"{name}.json")["bf_disk"]
        assert disk == {"center": [47.0, 50.0], "radius": 13.0, "center_source": "given", "radius_source": "given"}


def test_image_radius_alone(sample, tmp_path):
    path, frames = sample
    r = qgpu("image", path, "--backend", "cpu", "--bf", "--adf", "--radius", 6, "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    disk = params(tmp_path / "bf.json")["bf_disk"]
    assert disk["radius"] == 6 and disk["radius_source"] == "given" and disk["center_source"] == "fitted"
    cr, cc = disk["center"]
    np.testing.assert_array_equal(np.load(tmp_path / "bf.npy"), ring_sum(frames, cr, cc, 0, 6))
    edge = min(cr, 47 - cr, cc, 47 - cc)
    mask = params(tmp_path / "adf.json")["mask"]
    assert mask["inner"] == pytest.approx(7.2, rel=1e-12) and mask["outer"] == pytest.approx(min(18, edge), rel=1e-12)
    # --bf R still sets the BF radius itself
    r = qgpu("image", path, "--backend", "cpu", "--bf", 3, "--radius", 6, "--center", 24, 23, "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "bf.npy"), ring_sum(frames, 24, 23, 0, 3))


def test_ssb_center_and_radius_replace_the_fit(lobe, tmp_path):
    path, _ = lobe
    r = qgpu("ssb", path, "--backend", "cpu", *OPTICS, "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    p = params(tmp_path / "ssb_phase.json")
    assert p["bf_disk_fit"]["confidence"] < 0.5 and abs(p["bf_disk_fit"]["radius"] - 14) < 1
    assert "qgpu: warning: the bright-field disk fit is uncertain" in r.stderr and "--radius R" in r.stderr
    assert "fitted centre, fitted radius; fit confidence" in r.stdout
    out = tmp_path / "given"
    r = qgpu("ssb", path, "--backend", "cpu", *OPTICS, "--center", 47, 50, "--radius", 12.5, "-o", out)
    assert r.returncode == 0, r.stderr
    assert "qgpu: warning" not in r.stderr and "BF disk        centre" not in r.stdout
    p = params(out / "ssb_phase.json")
    assert p["disk_center"] == [47.0, 50.0] and p["disk_center_source"] == "given"
    assert p["detector_mrad_per_pixel"] == 20 / 12.5
    assert p["detector_mrad_per_pixel_source"] == "semiangle / given disk_radius"
    assert p["disk_radius_px"] == pytest.approx(12.5, rel=1e-12) and "bf_disk_fit" not in p
    r2, c2 = np.mgrid[0:96, 0:96]
    inside = ((r2 - 47) ** 2 + (c2 - 50) ** 2) * (20 / 12.5) ** 2 <= 20 ** 2 * (1 + 1e-9)
    assert abs(p["bf_pixels"] - inside.sum()) <= 4  # the aperture of radius 12.5 px (the slack of ssb's test)


def test_parallax_center_and_radius_replace_the_fit(lobe, tmp_path):
    path, _ = lobe
    r = qgpu("parallax", path, "--backend", "cpu", *OPTICS, "--edge", 0, "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    p = params(tmp_path / "parallax.json")
    assert p["bf_disk_fit"]["confidence"] < 0.5 and abs(p["disk_radius_px"] - 14) < 1
    assert "qgpu: warning: the bright-field disk fit is uncertain" in r.stderr
    out = tmp_path / "given"
    r = qgpu("parallax", path, "--backend", "cpu", *OPTICS, "--edge", 0, "--center", 47, 50, "--radius", 12.5,
             "--bin", 1, "-o", out)
    assert r.returncode == 0, r.stderr
    assert "disk fit is uncertain" not in r.stderr
    p = params(out / "parallax.json")
    assert p["disk_center"] == [47.0, 50.0] and p["disk_center_source"] == "given"
    assert p["disk_radius_px"] == 12.5 and p["disk_radius_source"] == "given" and "bf_disk_fit" not in p
    assert p["detector_mrad_per_pixel"] == 20 / 12.5
    r2, c2 = np.mgrid[0:96, 0:96]
    assert p["bf_pixels"] == int((((r2 - 47) ** 2 + (c2 - 50) ** 2) <= 12.5 ** 2).sum())


@pytest.mark.parametrize("command", ["image", "ssb", "parallax"])
@pytest.mark.parametrize("args, message", [
    (["--radius", "-3"], "--radius"),
    (["--radius", "0"], "--radius"),
    (["--center", "nan", "4"], "--center"),
])
def test_bad_center_or_radius_fails_before_loading(sample, tmp_path, command, args, message):
    path, _ = sample
    extra = ["--bf"] if command == "image" else []
    r = qgpu(command, path, "--backend", "cpu", *extra, *args, "-o", tmp_path)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert r.stderr.startswith("qgpu: error: ") and message in r.stderr, r.stderr
    assert "loading" not in r.stderr


@pytest.mark.parametrize("command", ["image", "ssb", "parallax"])
def test_help_names_the_overrides(command):
    r = qgpu(command, "--help")
    assert r.returncode == 0
    assert "--center FLOAT=fitted BF disk centre x 2" in r.stdout
    assert "--radius FLOAT=fitted BF disk radius" in r.stdout


def test_cached_products_answer_the_given_radius(sample, tmp_path):
    path, frames = sample
    cache = tmp_path / "products.h5"
    assert qgpu("cache", path, "--backend", "cpu", "--bf", 6, "-o", cache).returncode == 0
    r = qgpu("image", cache, "--bf", "--radius", 6, "-o", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    mask = params(tmp_path / "out" / "bf.json")["mask"]
    assert mask["radius"] == 6
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "bf.npy"), ring_sum(frames, *mask["center"], 0, 6))
    r = qgpu("image", cache, "--adf", "--radius", 6, "-o", tmp_path / "out")  # 7.2..18 was not cached
    assert r.returncode == 1 and "annulus 7.2..18 is not available in cache" in r.stderr, r.stderr


def test_dpc_parallax_fallback_uses_the_given_disk(tmp_path):
    path = tmp_path / "defocused.h5"  # 150 A defocus: the rotation comes from the parallax of the BF-disk pixels
    assert qgpu("sample", path, "--scan", 64, 64, "--detector", 96, 96, "--defocus", 150).returncode == 0
    r = qgpu("image", path, "--backend", "cpu", "--dpc", "--center", 48, 48, "--radius", 15, "-o", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    rot = json.load(open(tmp_path / "out" / "rotation.json"))["parameters"]
    assert rot["decided_by"] == "parallax" and rot["determined"] is True
    assert rot["parallax"]["disk"] == {"disk_center": [48.0, 48.0], "disk_center_source": "given",
                                       "disk_radius_px": 15.0, "disk_radius_source": "given"}
