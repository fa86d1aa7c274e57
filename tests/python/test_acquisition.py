"""Multi-file acquisitions from Python: scan_shape and pixel_mask keywords of load and inspect."""
import os

import numpy as np
import pytest

import quantem.gpu as qgpu


@pytest.fixture(scope="module")
def acquisition(tmp_path_factory):
    folder = tmp_path_factory.mktemp("acq")
    master = str(folder / "scan_master.h5")
    single = str(folder / "single.h5")
    qgpu.io.write_sample(master, scan=(6, 8), detector=(20, 20), seed=4, files=4)
    qgpu.io.write_sample(single, scan=(6, 8), detector=(20, 20), seed=4)
    return master, single


def test_master_loads_like_one_file(acquisition):
    master, single = acquisition
    info = qgpu.io.inspect(master)
    assert info["shape"] == [6, 8, 20, 20]
    assert info["scan_shape_source"] == "metadata ntrigger x nimages"
    assert [p["first_frame"] for p in info["parts"]] == [0, 12, 24, 36]
    assert info["pixel_mask"] == {"present": True, "bad_pixels": 5}
    a = qgpu.io.load(master, backend="cpu").read()
    b = qgpu.io.load(single, backend="cpu").read()
    assert a.shape == (6, 8, 20, 20)
    np.testing.assert_array_equal(a, b)


def test_scan_shape_keyword(acquisition):
    master, single = acquisition
    assert qgpu.io.inspect(master, scan_shape=(4, 12))["shape"] == [4, 12, 20, 20]
    ds = qgpu.io.load(master, backend="cpu", scan_shape=(4, 12))
    assert ds.shape == (4, 12, 20, 20)
    flat = qgpu.io.load(single, backend="cpu").read().reshape(48, 20, 20)
    np.testing.assert_array_equal(ds.read().reshape(48, 20, 20), flat)
    with pytest.raises(qgpu.FormatError, match="given scan shape 5x10 does not match the 48 frames"):
        qgpu.io.load(master, backend="cpu", scan_shape=(5, 10))


def test_pixel_mask_keyword(acquisition):
    master, _ = acquisition
    h5py = pytest.importorskip("h5py")
    with h5py.File(master, "r") as f:  # the mask itself is stored without a filter
        bad = f["entry/instrument/detector/detectorSpecific/pixel_mask"][()] > 0
    assert bad.sum() == 5
    kept = qgpu.io.load(master, backend="cpu").read()
    zeroed_ds = qgpu.io.load(master, backend="cpu", pixel_mask="zero")
    zeroed = zeroed_ds.read()
    assert zeroed_ds.provenance["parameters"]["pixel_mask"] == "zero"
    assert (zeroed[:, :, bad] == 0).all()
    assert (kept[:, :, bad] != 0).any()  # zeroing changed something
    np.testing.assert_array_equal(zeroed[:, :, ~bad], kept[:, :, ~bad])
    with pytest.raises(qgpu.InvalidArgument):
        qgpu.io.load(master, backend="cpu", pixel_mask="drop")


def test_h5py_reads_the_same_frames_through_the_links(acquisition, tmp_path_factory):
    """h5py (HDF5 + bitshuffle plugin) following the master's external links is an independent reader."""
    master, _ = acquisition
    h5py = pytest.importorskip("h5py")
    plugin = "/usr/lib/x86_64-linux-gnu/hdf5/serial/plugins/libh5bshuf.so"
    if not os.path.exists(plugin):
        pytest.skip("bitshuffle HDF5 plugin not installed")
    if "HDF5_PLUGIN_PATH" not in os.environ:
        plugin_dir = tmp_path_factory.mktemp("plugin_acq")
        os.symlink(plugin, plugin_dir / "libh5bshuf.so")
        os.environ["HDF5_PLUGIN_PATH"] = str(plugin_dir)  # only bitshuffle: other plugins there fail to load
    with h5py.File(master, "r") as f:
        names = sorted(f["entry/data"].keys())
        assert names == ["data_000001", "data_000002", "data_000003", "data_000004"]
        frames = np.concatenate([f["entry/data"][n][()] for n in names])
    assert frames.shape == (48, 20, 20)
    ours = qgpu.io.load(master, backend="cpu").read()
    np.testing.assert_array_equal(ours, frames.reshape(6, 8, 20, 20))
