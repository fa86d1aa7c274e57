"""quantem.gpu.parallax: the fit on a defocused sample, the tilt-corrected image against the truth, keywords."""
import numpy as np
import pytest

import quantem.gpu as qgpu
from conftest import requires_cuda


@pytest.fixture(scope="module")
def defocused(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("parallax") / "defocus.h5")
    qgpu.io.write_sample(path, scan=(48, 56), detector=(64, 64), defocus=150.0, dose=60000.0)
    return path


def test_parallax_fits_the_defocus_and_beats_the_bright_field(defocused):
    ds = qgpu.io.load(defocused, backend="cpu")
    r = qgpu.parallax.run(ds)
    fit = r["fit"]
    assert fit["determined"] is True and fit["warning"] == ""
    assert abs(fit["C1_angstrom"] - 150.0) < 3.0
    assert min(fit["rotation_deg"], 360 - fit["rotation_deg"]) < 1.0 and fit["transpose"] is False
    assert r["image"].shape == (96, 112) and r["image"].provenance["operation"] == "parallax.run"
    assert r["bf"].shape == (48, 56)
    assert len(r["shift_row"]) == len(r["det_row"]) == r["provenance"]["parameters"]["groups"]
    import h5py
    with h5py.File(defocused) as h:
        truth = h["/entry/truth/phase"][:]
    c_tc = np.corrcoef(np.asarray(r["image"])[::2, ::2].ravel(), truth.ravel())[0, 1]
    c_bf = np.corrcoef(np.asarray(r["bf"]).ravel(), truth.ravel())[0, 1]
    assert c_tc > c_bf + 0.2, (c_tc, c_bf)


def test_in_focus_fit_warns_that_it_saw_no_parallax(tmp_path):
    path = str(tmp_path / "focus.h5")
    qgpu.io.write_sample(path, scan=(48, 56), detector=(64, 64), defocus=0.0, dose=60000.0)
    ds = qgpu.io.load(path, backend="cpu")
    with pytest.warns(qgpu.parallax.ParallaxUndetermined, match="no parallax measured"):
        f = qgpu.parallax.fit(ds)
    assert f["fit"]["determined"] is False and f["fit"]["confidence"] < 0.6


def test_parallax_fit_only_and_options(defocused):
    ds = qgpu.io.load(defocused, backend="cpu")
    f = qgpu.parallax.fit(ds, detector_bin=2, defocus_sign=0)
    assert "image" not in f
    assert f["provenance"]["parameters"]["detector_bin"] == 2
    assert f["fit"]["sign_method"] == "skewness of the tilt-corrected image"
    assert abs(f["fit"]["C1_angstrom"] - 150.0) < 4.5
    r = qgpu.parallax.run(ds, upsample=3)
    assert r["image"].shape == (144, 168)


def test_parallax_rejects_unknown_keywords(defocused):
    ds = qgpu.io.load(defocused, backend="cpu")
    with pytest.raises(qgpu.InvalidArgument, match="unknown parameter 'upsampel'"):
        qgpu.parallax.run(ds, upsampel=2)
    with pytest.raises(qgpu.InvalidArgument, match="upsample must be in 1..8"):
        qgpu.parallax.run(ds, upsample=0)


@requires_cuda
def test_parallax_on_the_gpu_matches_the_cpu(defocused):
    cpu = qgpu.parallax.run(qgpu.io.load(defocused, backend="cpu"))
    gpu = qgpu.parallax.run(qgpu.io.load(defocused, backend="cuda"))
    assert abs(gpu["fit"]["C1_angstrom"] - cpu["fit"]["C1_angstrom"]) < 2e-3 * abs(cpu["fit"]["C1_angstrom"])
    a, b = np.asarray(gpu["image"]), np.asarray(cpu["image"])
    assert np.linalg.norm(a - b) <= 1e-3 * np.linalg.norm(b)


def test_issue31_sample_options_undetermined_sign_and_astigmatism_warning(tmp_path):
    """The simulator's astigmatism, turned detector and missing defocus hint (issue 31); the truth is in the file;
    the parallax finds the rotation and A1; a C1-only SSB fit warns that the data show astigmatism."""
    import h5py
    path = str(tmp_path / "astig.h5")
    qgpu.io.write_sample(path, scan=(48, 48), detector=(64, 64), defocus=120.0, dose=100000.0, semiangle=22.0,
                         astigmatism=(30.0, 20.0), rotation=17.0, transpose=True, defocus_hint=False)
    with h5py.File(path) as h:
        assert "defocus_angstrom" not in h["/entry/calibration"].attrs
        t = h["/entry/truth"].attrs
        assert (t["C1_angstrom"], t["A1_angstrom"], t["A1_angle_deg"], t["rotation_deg"], t["transpose"]) == \
            (120.0, 30.0, 20.0, 17.0, 1.0)
    ds = qgpu.io.load(path, backend="cpu")
    fit = qgpu.parallax.fit(ds)["fit"]
    assert fit["determined"] and fit["transpose"] is True
    assert abs(fit["rotation_deg"] - 17.0) < 0.5 and abs(fit["A1_angstrom"] - 30.0) < 3.0
    assert abs(np.degrees(fit["A1_angle_rad"]) - 20.0) < 5.0 and abs(fit["C1_angstrom"] - 120.0) < 0.05 * 120
    with pytest.warns(qgpu.ssb.AstigmatismUnfitted, match="two-fold astigmatism"):
        f = qgpu.ssb.fit(ds, trials=60, c1_range=(-400, 400), rotation=17.0, transpose=True)
    assert f["warning"] != ""
