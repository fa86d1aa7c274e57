"""DECTRIS metadata through the qgpu command: an ARINA-style master (NeXus instrument values, ntrigger = frames) and
its sidecar <stem>.h5 give the scan shape and the calibration; `qgpu info` shows each value with its source and
never fails for want of a scan shape; SSB uses the values unless the user gives their own."""
import json

import numpy as np
import pytest

from conftest import qgpu

h5py = pytest.importorskip("h5py")

DET = "/entry/instrument/detector"


def nexus(f, path, value, units):
    f[path] = value
    f[path].attrs["units"] = units


@pytest.fixture()
def arina(tmp_path):
    """A 6 x 8 scan of 20 x 20 frames in 2 data files; the master made ARINA-like (no /entry/calibration,
    ntrigger 48, nimages 1, NeXus instrument values equivalent to the sample's calibration). Returns the master,
    a function writing the sidecar, and the sample's calibration."""
    master = tmp_path / "scan_master.h5"
    r = qgpu("sample", master, "--scan", 6, 8, "--detector", 20, 20, "--files", 2, "--seed", 3)
    assert r.returncode == 0, r.stderr
    with h5py.File(master, "r+") as f:
        cal = {k: float(v) for k, v in f["/entry/calibration"].attrs.items()}
        del f["/entry/calibration"]
        f[DET + "/detectorSpecific/ntrigger"][()] = 48
        f[DET + "/detectorSpecific/nimages"][()] = 1
        nexus(f, DET + "/detectorSpecific/photon_energy", cal["energy_kev"] * 1e3, "eV")
        pixel = cal["detector_mrad_per_pixel"] / 1e3 * 0.115  # so that pixel / camera length is the sample's
        nexus(f, DET + "/x_pixel_size", pixel * 1e6, "um")  # units honoured (h5py: variable-length UTF-8)
        nexus(f, DET + "/y_pixel_size", pixel, "m")
        nexus(f, DET + "/detector_distance", 0.0, "m")  # as the real ARINA master: not set
        nexus(f, DET + "/count_time", 9.95e-05, "s")

    def sidecar(rows=6, cols=8):
        with h5py.File(tmp_path / "scan.h5", "w") as f:
            g = f.create_group("STEM Metadata")
            g.attrs["NumPixelsX"] = np.int64(cols)
            g.attrs["NumPixelsY"] = np.int64(rows)
            g.attrs["High Tension"] = np.array([cal["energy_kev"] * 1e3])
            g.attrs["Pixel Size"] = np.array([cal["scan_step_angstrom"] / 10])
            g.attrs["Camera Length"] = np.array([0.115])
            g.attrs["Rotation"] = np.array([0.0])

    return master, sidecar, cal


def test_info_without_a_scan_shape_says_what_it_needs(arina, tmp_path):
    master, _, _ = arina
    r = qgpu("info", master)
    assert r.returncode == 0, r.stderr
    assert "shape       scan unknown, detector 20 x 20: " in r.stdout
    assert "has 48 frames, no scan_shape attribute and no square scan: give scan_shape" in r.stdout
    assert "frames      48 in 2 parts (linked files)" in r.stdout
    assert "load        needs a scan shape: give --scan-shape ROWS COLS (48 frames = ROWS x COLS)" in r.stdout
    j = json.loads(qgpu("info", master, "--json").stdout)
    assert j["shape"] is None and j["frames"] == 48 and j["detector_shape"] == [20, 20]
    assert j["scan_shape_known"] is False and "give scan_shape" in j["scan_shape_needed"]
    # Only a load needs it: refused with the same words; given, it loads.
    r = qgpu("image", master, "--backend", "cpu", "--bf", "-o", tmp_path / "out")
    assert r.returncode == 1 and "give scan_shape" in r.stderr, r.stderr
    r = qgpu("info", master, "--scan-shape", 6, 8)
    assert "shape       scan 6 x 8, detector 20 x 20 (given)" in r.stdout


def test_info_shows_every_value_with_its_source(arina):
    master, sidecar, cal = arina
    sidecar()
    r = qgpu("info", master)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    side = "ARINA sidecar 'scan.h5' STEM Metadata"
    assert f"shape       scan 6 x 8, detector 20 x 20 ({side} NumPixelsY x NumPixelsX)" in out, out
    assert f"sidecar     {master.parent / 'scan.h5'} (ARINA STEM Metadata)" in out
    kv = cal["energy_kev"]
    assert f"calibration energy_kev = {kv:g} keV <- {side}/High Tension ({kv * 1e3:g} V)" in out, out
    assert f"calibration scan_step_angstrom = {cal['scan_step_angstrom']:g} angstrom <- {side}/Pixel Size" in out
    assert f"calibration camera_length_m = 0.115 m <- {side}/Camera Length (0.115 m)" in out
    assert f"calibration detector_mrad_per_pixel = {cal['detector_mrad_per_pixel']:g} mrad/px <- detector pixel size" \
           " / camera length" in out, out
    assert f"calibration count_time_s = 9.95e-05 s <- NeXus {DET}/count_time (9.95e-05 s)" in out
    assert f"warning     NeXus {DET}/detector_distance is 0 m, not > 0: ignored" in out
    j = json.loads(qgpu("info", master, "--json").stdout)
    assert j["shape"] == [6, 8, 20, 20]
    assert j["calibration_detail"]["energy_kev"] == {"value": kv, "unit": "keV",
                                                     "source": f"{side}/High Tension ({kv * 1e3:g} V)"}
    assert j["calibration"]["detector_mrad_per_pixel"] == pytest.approx(cal["detector_mrad_per_pixel"], rel=1e-12)
    assert len(j["metadata_warnings"]) == 1


def test_ssb_takes_the_dectris_calibration_and_the_user_wins(arina, tmp_path):
    master, sidecar, cal = arina
    sidecar()
    reference = tmp_path / "reference.h5"  # the same frames with the sample's own calibration
    assert qgpu("sample", reference, "--scan", 6, 8, "--detector", 20, 20, "--seed", 3).returncode == 0
    runs = {}
    for name, path, extra in [("dectris", master, []), ("reference", reference, []),
                              ("given", master, ["--energy", 200, "--step", 2.5])]:
        out = tmp_path / name
        r = qgpu("ssb", path, "--backend", "cpu", "--preview", 2, "--semiangle", cal["semiangle_mrad"], *extra,
                 "-o", out)
        assert r.returncode == 0, r.stderr
        runs[name] = (np.load(out / "ssb_preview_phase.npy"),
                      json.load(open(out / "ssb_preview_phase.json"))["result"]["parameters"])
    phase, p = runs["dectris"]
    assert p["energy_kev"] == cal["energy_kev"]
    assert p["scan_step_angstrom"] == pytest.approx(cal["scan_step_angstrom"], rel=1e-12)
    src = p["calibration_sources"]
    assert src["energy_kev"].startswith("ARINA sidecar 'scan.h5' STEM Metadata/High Tension")
    assert src["detector_mrad_per_pixel"].startswith("detector pixel size / camera length")
    assert src["semiangle_mrad"] == "given (--semiangle)"
    np.testing.assert_allclose(phase, runs["reference"][0], atol=1e-5)  # same physics as the sample's calibration
    _, g = runs["given"]
    assert g["energy_kev"] == 200 and g["scan_step_angstrom"] == 2.5
    assert g["calibration_sources"]["energy_kev"] == "given (--energy)"
    assert g["calibration_sources"]["scan_step_angstrom"] == "given (--step)"


def test_sidecar_disagreeing_with_the_frames_is_named(arina, tmp_path):
    master, sidecar, _ = arina
    sidecar(rows=7, cols=8)
    r = qgpu("info", master)
    assert r.returncode == 0, r.stderr
    assert "NumPixelsY x NumPixelsX = 7 x 8 = 56 scan positions, but dataset" in r.stdout
    r = qgpu("image", master, "--backend", "cpu", "--bf", "-o", tmp_path / "out")
    assert r.returncode == 1 and "= 7 x 8 = 56 scan positions" in r.stderr and "holds 48 frames" in r.stderr


def test_parallax_names_a_value_neither_file_nor_user_gives(arina, tmp_path):
    master, sidecar, _ = arina
    sidecar()
    r = qgpu("parallax", master, "--backend", "cpu", "-o", tmp_path / "px")
    assert r.returncode == 1
    assert "parallax: semiangle_mrad is missing: not in the file's calibration and not given (--semiangle)" in r.stderr
