"""qgpu ssb: option checks before loading, the fit reports the trials asked for and shows progress."""
import json

import numpy as np
import pytest

from conftest import qgpu, qgpu_on_terminal


@pytest.mark.parametrize("args, message", [
    (["--energy", "-5"], "--energy must be a finite number > 0"),
    (["--semiangle", "0"], "--semiangle must be a finite number > 0"),
    (["--step", "nan"], "--step must be a finite number > 0"),
    (["--fit", "10", "--fit-range", "300", "-300"], "--fit-range: need MIN < MAX"),
    (["--fit-bin", "0"], "--fit-bin must be >= 1"),
    (["--weighting", "gamma"], "--weighting: unknown weighting 'gamma', not one of auto, amplitude, phase, wiener"),
    (["-o", "/etc/passwd/x"], "cannot create the output folder"),
])
def test_bad_ssb_options_fail_before_loading(sample, tmp_path, args, message):
    path, _ = sample
    extra = [] if "-o" in args else ["-o", tmp_path]
    r = qgpu("ssb", path, "--backend", "cpu", *args, *extra)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert r.stderr.startswith("qgpu: error: ") and message in r.stderr, r.stderr
    assert "loading" not in r.stderr


def test_fit_reports_the_trials_asked_for_and_shows_progress(sample, tmp_path):
    path, _ = sample
    r = qgpu("ssb", path, "--backend", "cpu", "--fit", 24, "--fit-range", -300, 300, "--fit-bin", 2, "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "24 trials" in r.stdout
    assert "fitting [" not in r.stderr  # not a terminal: no bar
    fit = json.load(open(tmp_path / "ssb_fit.json"))
    assert fit["trials"] == 24 and 1 <= fit["evaluated"] <= 24 and len(fit["loss_trace"]) == fit["evaluated"]
    assert fit["loss"] == min(fit["loss_trace"])
    phase = np.load(tmp_path / "ssb_phase.npy")
    assert phase.shape == (10, 12) and np.isfinite(phase).all()
    assert json.load(open(tmp_path / "ssb_phase.json"))["result"]["backend"] == "cpu"


def test_fit_shows_progress_on_a_terminal(sample, tmp_path):
    path, _ = sample
    status, err = qgpu_on_terminal("ssb", path, "--backend", "cpu", "--fit", 8, "--fit-bin", 2, "-o", tmp_path)
    assert status == 0 and "fitting [" in err and "100%" in err, err


def test_ssb_help_shows_defaults():
    r = qgpu("ssb", "--help")
    assert r.returncode == 0
    for text in ["--fit-bin UINT=4", "--backend TEXT=auto", "file calibration", "--fit-range FLOAT=[-500,500]"]:
        assert text in r.stdout, text


def test_weighting_is_announced_and_recorded(sample, tmp_path):
    path, _ = sample
    r = qgpu("ssb", path, "--backend", "cpu", "--weighting", "phase", "--c1", 0, "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "weighting      phase (given)" in r.stdout
    params = json.load(open(tmp_path / "ssb_phase.json"))["result"]["parameters"]
    assert params["weighting"] == "phase" and params["weighting_requested"] == "phase"
    r = qgpu("ssb", path, "--backend", "cpu", "-o", tmp_path)  # default: auto, by the sample's 4000 counts per frame
    assert r.returncode == 0, r.stderr
    params = json.load(open(tmp_path / "ssb_phase.json"))["result"]["parameters"]
    assert params["weighting_requested"] == "auto" and params["weighting"] == "wiener"
    assert "counts per frame" in params["weighting_reason"]


def test_ssb_help_states_the_conventions():
    r = qgpu("ssb", "--help")
    assert r.returncode == 0
    for text in ["positive = overfocus", "C1 = -defocus", "--weighting TEXT=auto", "--transpose", "--c1"]:
        assert text in r.stdout, text


def test_rotation_comes_from_the_file_unless_given(sample, tmp_path):
    """ssb::resolve_params: the file's calibration/rotation_deg is used; --rotation replaces it."""
    h5py = pytest.importorskip("h5py")
    import shutil
    path, _ = sample
    rotated = tmp_path / "rotated.h5"
    shutil.copy(path, rotated)
    with h5py.File(rotated, "r+") as f:
        f["/entry/calibration"].attrs["rotation_deg"] = 30.0
    for extra, want in [([], 30.0), (["--rotation", -12.5], -12.5)]:
        out = tmp_path / ("given" if extra else "file")
        r = qgpu("ssb", rotated, "--backend", "cpu", "--preview", 4, *extra, "-o", out)
        assert r.returncode == 0, r.stderr
        params = json.load(open(out / "ssb_preview_phase.json"))["result"]["parameters"]
        assert params["rotation_deg"] == want


def test_a_binned_load_uses_the_size_of_its_own_pixels(sample, tmp_path):
    """--bin-detector 2: the reconstruction's mrad per pixel and BF disk are those of the binned pixels (2.5 mrad/px
    file pixels -> 5.0; disk 8 -> 4 px), not the file's; the phase agrees with the unbinned one."""
    path, _ = sample
    phases, params = {}, {}
    for b in (1, 2):
        out = tmp_path / f"b{b}"
        r = qgpu("ssb", path, "--backend", "cpu", "--bin-detector", b, "-o", out)
        assert r.returncode == 0, r.stderr
        params[b] = json.load(open(out / "ssb_phase.json"))["result"]["parameters"]
        phases[b] = np.load(out / "ssb_phase.npy")
    assert params[2]["detector_mrad_per_pixel"] == 2 * params[1]["detector_mrad_per_pixel"]
    assert params[2]["disk_radius_px"] == params[1]["disk_radius_px"] / 2
    assert np.corrcoef(phases[1].ravel(), phases[2].ravel())[0, 1] > 0.9
