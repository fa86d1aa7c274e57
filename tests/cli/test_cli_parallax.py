"""qgpu parallax: option checks before loading; on a defocused sample the fit and the written outputs."""
import json

import numpy as np
import pytest

from conftest import qgpu


@pytest.mark.parametrize("args, message", [
    (["--energy", "-5"], "--energy must be a finite number > 0"),
    (["--upsample", "0"], "--upsample must be in 1..8"),
    (["--bin", "65"], "--bin must be <= 64"),
    (["--iterations", "0"], "--iterations must be in 1..20"),
    (["--search", "0"], "--search must be in 1..64"),
    (["--edge", "-1"], "--edge must be >= 0"),
    (["-o", "/etc/passwd/x"], "cannot create the output folder"),
])
def test_bad_parallax_options_fail_before_loading(sample, tmp_path, args, message):
    path, _ = sample
    extra = [] if "-o" in args else ["-o", tmp_path]
    r = qgpu("parallax", path, "--backend", "cpu", *args, *extra)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert r.stderr.startswith("qgpu: error: ") and message in r.stderr, r.stderr
    assert "loading" not in r.stderr


def test_parallax_fits_the_simulated_defocus_and_writes_the_outputs(tmp_path):
    path = tmp_path / "defocused.h5"
    r = qgpu("sample", path, "--scan", 48, 56, "--detector", 64, 64, "--defocus", 150, "--dose", 60000, "--seed", 3)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    r = qgpu("parallax", path, "--backend", "cpu", "--upsample", 2, "-o", out)
    assert r.returncode == 0, r.stderr
    assert "C1 = " in r.stdout and "transpose no" in r.stdout
    fit = json.load(open(out / "parallax_fit.json"))
    assert abs(fit["fit"]["C1_angstrom"] - 150) < 3
    assert min(fit["fit"]["rotation_deg"], 360 - fit["fit"]["rotation_deg"]) < 1
    assert fit["fit"]["transpose"] is False
    assert fit["fit"]["sign_method"] == "nominal defocus sign"
    assert len(fit["shift_row_px"]) == len(fit["det_row"]) == fit["provenance"]["parameters"]["groups"]
    image = np.load(out / "parallax.npy")
    assert image.shape == (96, 112) and np.isfinite(image).all()
    assert np.load(out / "parallax_bf.npy").shape == (48, 56)
    assert json.load(open(out / "parallax.json"))["result"]["operation"] == "parallax.run"
    assert (out / "parallax.png").stat().st_size > 0


def test_parallax_help_shows_defaults():
    r = qgpu("parallax", "--help")
    assert r.returncode == 0
    for text in ["--upsample UINT=2", "--bin UINT=0", "--backend TEXT=auto", "file calibration"]:
        assert text in r.stdout, text


def _rotation(out):
    r = json.load(open(out / "rotation.json"))
    return r.get("provenance", r).get("parameters", r)


def test_issue31_rotation_rule_in_focus_and_turned_detector(tmp_path):
    """Issue 31, point 3, as the user meets it: `qgpu image --dpc` on an in-focus file at 500 counts per frame with
    the detector turned by 17 degrees keeps the CoM answer (the parallax sees no shift field and does not vote);
    on a defocused, transposed one the parallax decides within 0.5 degree. No calibration hints in the files."""
    common = ["--scan", 48, 48, "--detector", 64, 64, "--semiangle", 22, "--astigmatism", 30, 20, "--no-defocus-hint"]
    focus = tmp_path / "focus.h5"
    assert qgpu("sample", focus, *common, "--defocus", 0, "--rotation", 17, "--dose", 500).returncode == 0
    r = qgpu("image", focus, "--backend", "cpu", "--dpc", "-o", tmp_path / "f")
    assert r.returncode == 0, r.stderr
    p = _rotation(tmp_path / "f")
    assert p["decided_by"] == "com_curl" and p["parallax"]["vote"].startswith("none"), p
    defocused = tmp_path / "defocused.h5"
    assert qgpu("sample", defocused, *common, "--defocus", 120, "--rotation", 17, "--transpose",
                "--dose", 5000).returncode == 0
    r = qgpu("image", defocused, "--backend", "cpu", "--dpc", "-o", tmp_path / "d")
    assert r.returncode == 0, r.stderr
    p = _rotation(tmp_path / "d")
    assert p["decided_by"] == "parallax" and p["transpose"] is True and abs(p["angle_deg"] - 17) < 0.5, p
    r = qgpu("parallax", defocused, "--backend", "cpu", "-o", tmp_path / "p")
    fit = json.load(open(tmp_path / "p" / "parallax_fit.json"))["fit"]
    assert fit["determined"] and fit["sign_determined"] and abs(fit["A1_angstrom"] - 30) < 3, fit
