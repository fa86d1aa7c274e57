"""Issue 25, point 3: counts stored big-endian load to the same numbers as little-endian ones on both cpu decoders,
dense and encoded, cropped and binned, and the byte order is recorded (inspect, provenance). The files come from
the sample writer (byte_order="big": our encoder) and, where h5py and the plugin are present, from h5py ('>u2',
'>u4' through the HDF5 bitshuffle plugin: an independent writer)."""
import os

import numpy as np
import pytest

import quantem.gpu as qgpu


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    d = tmp_path_factory.mktemp("byte_order")
    paths = {}
    for dtype in ("uint16", "uint32"):
        for order in ("little", "big"):
            p = str(d / f"{dtype}_{order}.h5")
            qgpu.io.write_sample(p, scan=(6, 8), detector=(20, 24), dtype=dtype, seed=7, byte_order=order)
            paths[dtype, order] = p
    return paths


def binned(a, bs, bd):
    r, c, dr, dc = a.shape
    return a.reshape(r // bs, bs, c // bs, bs, dr // bd, bd, dc // bd, bd).sum(axis=(1, 3, 5, 7), dtype=np.uint64)


@pytest.mark.parametrize("dtype", ["uint16", "uint32"])
@pytest.mark.parametrize("decoder", ["quantem", "hdf5"])
@pytest.mark.parametrize("representation", ["dense", "encoded"])
def test_big_endian_counts_equal_little_endian_ones(samples, dtype, decoder, representation):
    assert qgpu.io.inspect(samples[dtype, "big"])["byte_order"] == "big"
    assert qgpu.io.inspect(samples[dtype, "little"])["byte_order"] == "little"
    want = np.asarray(qgpu.io.load(samples[dtype, "little"], backend="cpu", representation="dense"))
    assert want.dtype == np.dtype(dtype) and want.max() < 2**16  # counts, not byte-swapped values
    ds = qgpu.io.load(samples[dtype, "big"], backend="cpu", decoder=decoder, representation=representation)
    assert ds.representation == representation
    assert ds.provenance["parameters"]["byte_order"] == "big"
    np.testing.assert_array_equal(np.asarray(ds), want)
    disk = qgpu.detector.disk_mask(20, 24, 10, 12, 5)
    np.testing.assert_array_equal(qgpu.detector.virtual_image(ds, disk), (want * disk).sum(axis=(2, 3)))
    cut = qgpu.io.load(samples[dtype, "big"], backend="cpu", decoder=decoder, representation=representation,
                       scan_region=(1, 2, 4, 6), detector_region=(2, 4, 12, 16), bin_scan=2, bin_detector=4)
    np.testing.assert_array_equal(np.asarray(cut), binned(want[1:5, 2:8, 2:14, 4:20].astype(np.uint64), 2, 4))


@pytest.mark.parametrize("dtype", [">u2", ">u4"])
def test_h5py_big_endian_file_loads_exactly(tmp_path, dtype):
    h5py = pytest.importorskip("h5py")
    plugin = "/usr/lib/x86_64-linux-gnu/hdf5/serial/plugins/libh5bshuf.so"  # Debian package 'bitshuffle'
    if not os.path.exists(plugin):
        pytest.skip(f"needs the HDF5 bitshuffle plugin ({plugin})")
    plugin_dir = tmp_path / "plugin"
    plugin_dir.mkdir()
    os.symlink(plugin, plugin_dir / "libh5bshuf.so")
    os.environ["HDF5_PLUGIN_PATH"] = str(plugin_dir)
    rng = np.random.default_rng(9)
    data = rng.poisson(3.0, size=(5 * 6, 18, 20)).astype(dtype)
    data[:, 7:11, 8:12] += 700
    path = str(tmp_path / "big_endian.h5")
    with h5py.File(path, "w") as f:
        try:
            ds = f.create_dataset("/entry/data/data", data=data, chunks=(1, 18, 20), compression=32008,
                                  compression_opts=(0, 2))
        except ValueError as e:
            pytest.skip(f"this h5py cannot write filter 32008 through {plugin} ({e})")
        ds.attrs["scan_shape"] = np.array([5, 6], dtype=np.int64)
    assert qgpu.io.inspect(path)["byte_order"] == "big"
    want = data.astype(data.dtype.newbyteorder("=")).reshape(5, 6, 18, 20)
    for decoder in ("quantem", "hdf5"):
        for representation in ("dense", "encoded"):
            got = qgpu.io.load(path, backend="cpu", decoder=decoder, representation=representation)
            np.testing.assert_array_equal(np.asarray(got), want)
