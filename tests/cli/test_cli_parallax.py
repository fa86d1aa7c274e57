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
