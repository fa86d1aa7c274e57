"""The BF disk fit from Python: its confidence, the DiskFitUncertain warning on a disk inside a bright lobe, and the
center=/radius= (SSB/parallax: disk_center=/disk_radius=) overrides that replace it."""
import warnings

import numpy as np
import pytest

import quantem.gpu as qgpu

OPTICS = dict(energy=300, semiangle=20, step=1)


@pytest.fixture(scope="module")
def lobe(tmp_path_factory):
    """Scan 6x6 of 96x96 frames: a disk of radius 14 px at (47.5, 49) inside a diffuse lobe at 75 % of its level."""
    h5py = pytest.importorskip("h5py")
    r, c = np.mgrid[0:96, 0:96]
    d = np.hypot(r - 47.5, c - 49.0)
    t = np.clip((d - 14) / (38 - 14), 0, 1)
    mean = np.where(d <= 14, 40.0, 0.75 * 40 * (1 - 0.3 * t) / (1 + np.exp(d - 35)))
    data = np.random.default_rng(3).poisson(mean, size=(36, 96, 96)).astype(np.uint16)
    path = str(tmp_path_factory.mktemp("lobe") / "lobe.h5")
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("/entry/data/data", data=data, chunks=(1, 96, 96))
        ds.attrs["scan_shape"] = np.array([6, 6], dtype=np.int64)
    return qgpu.io.load(path, backend="cpu"), data.reshape(6, 6, 96, 96).astype(np.int64)


def ring_sum(frames, cr, cc, inner, outer):
    r, c = np.mgrid[0:frames.shape[2], 0:frames.shape[3]]
    d2 = (r - cr) ** 2 + (c - cc) ** 2
    return (frames * ((d2 >= inner ** 2) & (d2 <= outer ** 2))).sum(axis=(2, 3))


def test_clean_sample_fit_is_confident(sample_path):
    ds = qgpu.io.load(sample_path, backend="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning at all
        fit = qgpu.detector.fit_bf_disk(ds)
        qgpu.detector.bf(ds)
        qgpu.detector.adf(ds)
    assert fit["confident"] is True and 0.5 <= fit["confidence"] <= 1 and "warning" not in fit
    assert isinstance(fit["center"], tuple) and abs(fit["center"][0] - 24) < 0.5 and abs(fit["radius"] - 8) < 1
    assert fit["center_source"] == fit["radius_source"] == "fitted" and "threshold" in fit["method"]


def test_lobe_fit_finds_the_disk_and_warns(lobe):
    ds, frames = lobe
    with pytest.warns(qgpu.detector.DiskFitUncertain, match="--center ROW COL --radius R"):
        fit = qgpu.detector.fit_bf_disk(ds)
    assert abs(fit["radius"] - 14) < 1 and abs(fit["center"][0] - 47.5) < 0.5 and abs(fit["center"][1] - 49) < 0.5
    assert fit["confidence"] < 0.5 and fit["confident"] is False and abs(fit["other_edge_radius"] - 35) < 4
    with pytest.warns(qgpu.detector.DiskFitUncertain):
        bf = qgpu.detector.bf(ds)
    assert bf.provenance["parameters"]["bf_disk_fit"]["radius"] == fit["radius"]
    np.testing.assert_array_equal(bf, ring_sum(frames, *fit["center"], 0, fit["radius"]))
    with pytest.warns(qgpu.detector.DiskFitUncertain):
        qgpu.detector.adf(ds)


def test_center_and_radius_replace_the_fit(lobe):
    ds, frames = lobe
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bf = qgpu.detector.bf(ds, radius=13, center=(47, 50))
        adf = qgpu.detector.adf(ds, center=(47, 50), radius=13)
    np.testing.assert_array_equal(bf, ring_sum(frames, 47, 50, 0, 13))
    np.testing.assert_array_equal(adf, ring_sum(frames, 47, 50, 1.2 * 13, 3 * 13))
    mask = adf.provenance["parameters"]["mask"]
    assert mask["inner"] == pytest.approx(15.6, rel=1e-12) and mask["outer"] == pytest.approx(39, rel=1e-12)
    with pytest.raises(qgpu.InvalidArgument, match="radius"):
        qgpu.detector.adf(ds, 5, 9, radius=3)


def test_ssb_and_parallax_disk_overrides(lobe):
    ds, _ = lobe
    with pytest.warns(qgpu.detector.DiskFitUncertain):
        qgpu.ssb.reconstruct(ds, **OPTICS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", qgpu.detector.DiskFitUncertain)
        warnings.simplefilter("ignore", qgpu.parallax.ParallaxUndetermined)  # a 6x6 scan in focus: no parallax
        phase = qgpu.ssb.reconstruct(ds, **OPTICS, disk_center=(47, 50), disk_radius=12.5)
        p = qgpu.parallax.fit(ds, **OPTICS, disk_center=(47, 50), disk_radius=12.5, edge=0)["provenance"]["parameters"]
    q = phase.provenance["parameters"]
    assert q["disk_center"] == [47, 50] and q["disk_center_source"] == "given" and "bf_disk_fit" not in q
    assert q["detector_mrad_per_pixel"] == 20 / 12.5
    assert p["disk_radius_px"] == 12.5 and p["disk_radius_source"] == "given" and "bf_disk_fit" not in p
    with pytest.warns(qgpu.detector.DiskFitUncertain):
        qgpu.parallax.fit(ds, **OPTICS)
