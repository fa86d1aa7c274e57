"""DECTRIS metadata from Python: inspect never fails for want of a scan shape; the ARINA sidecar's scan shape and
calibration reach the loaded dataset's metadata and provenance."""
import numpy as np
import pytest

import quantem.gpu as qgpu

h5py = pytest.importorskip("h5py")


@pytest.fixture()
def master(tmp_path):
    """An ARINA-style master: 48 frames, ntrigger 48, nimages 1, no calibration of our own."""
    path = tmp_path / "run_master.h5"
    qgpu.io.write_sample(str(path), scan=(6, 8), detector=(16, 16), seed=2, files=2)
    with h5py.File(path, "r+") as f:
        del f["/entry/calibration"]
        f["/entry/instrument/detector/detectorSpecific/ntrigger"][()] = 48
        f["/entry/instrument/detector/detectorSpecific/nimages"][()] = 1
        f["/entry/instrument/detector/x_pixel_size"] = 1e-4
        f["/entry/instrument/detector/x_pixel_size"].attrs["units"] = "m"
    return path


def test_inspect_without_a_scan_shape_reports_frames_and_need(master):
    info = qgpu.io.inspect(str(master))
    assert info["shape"] is None
    assert info["frames"] == 48 and info["detector_shape"] == [16, 16]
    assert info["scan_shape_known"] is False
    assert "give scan_shape" in info["scan_shape_needed"]
    with pytest.raises(qgpu.FormatError, match="48 frames, no scan_shape attribute and no square scan"):
        qgpu.io.load(str(master), backend="cpu")
    assert qgpu.io.inspect(str(master), scan_shape=(8, 6))["shape"] == [8, 6, 16, 16]


def test_sidecar_scan_shape_and_calibration_reach_the_dataset(master):
    with h5py.File(master.parent / "run.h5", "w") as f:
        g = f.create_group("STEM Metadata")
        g.attrs["NumPixelsX"] = np.int64(8)
        g.attrs["NumPixelsY"] = np.int64(6)
        g.attrs["High Tension"] = np.array([200000.0])
        g.attrs["Camera Length"] = np.array([0.2])
    info = qgpu.io.inspect(str(master))
    assert info["shape"] == [6, 8, 16, 16]
    assert info["scan_shape_source"] == "ARINA sidecar 'run.h5' STEM Metadata NumPixelsY x NumPixelsX"
    ds = qgpu.io.load(str(master), backend="cpu")
    assert ds.shape == (6, 8, 16, 16)
    cal = ds.metadata["calibration"]
    assert cal["energy_kev"] == 200.0
    assert cal["detector_mrad_per_pixel"] == pytest.approx(0.5, rel=1e-12)  # 1000 x 100 um / 200 mm
    detail = ds.metadata["calibration_detail"]["detector_mrad_per_pixel"]
    assert detail["unit"] == "mrad/px" and detail["source"] == "detector pixel size / camera length (0.0001 m / 0.2 m)"
    p = ds.provenance["parameters"]
    assert p["scan_shape"] == {"value": [6, 8], "source": info["scan_shape_source"]}
    assert p["calibration"]["energy_kev"]["source"] == "ARINA sidecar 'run.h5' STEM Metadata/High Tension (200000 V)"
