import os

import numpy as np
import pytest

import quantem.gpu as qgpu

HAS_CUDA = qgpu.device.detect()["cuda_available"]
requires_cuda = pytest.mark.skipif(not HAS_CUDA, reason="CUDA test skipped: no usable GPU on this machine ("
                                   + qgpu.device.detect()["reason"] + ")")


def require_backend(backend):
    """Skips the calling test, with the reason, where a GPU backend ("cuda" or "vulkan") is unusable."""
    if backend == "cuda" and not HAS_CUDA:
        pytest.skip("CUDA test skipped: no usable GPU on this machine (" + qgpu.device.detect()["reason"] + ")")
    if backend == "vulkan" and not qgpu.device.vulkan_device()["available"]:
        pytest.skip("vulkan test skipped: no Vulkan device (" + qgpu.device.vulkan_device()["reason"] + ")")


@pytest.fixture(scope="session")
def sample_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("data") / "sample.h5")
    qgpu.io.write_sample(path, scan=(12, 10), detector=(48, 48), dtype="uint16", seed=3)
    return path


@pytest.fixture(scope="session")
def h5py_path(tmp_path_factory):
    """A file written by h5py through the HDF5 bitshuffle plugin: an independent writer."""
    h5py = pytest.importorskip("h5py")
    plugin = "/usr/lib/x86_64-linux-gnu/hdf5/serial/plugins/libh5bshuf.so"  # Debian package 'bitshuffle'
    if not os.path.exists(plugin):
        pytest.skip(f"independent-writer tests need the HDF5 bitshuffle plugin ({plugin}); CI installs it")
    plugin_dir = tmp_path_factory.mktemp("plugin")
    os.symlink(plugin, plugin_dir / "libh5bshuf.so")
    os.environ["HDF5_PLUGIN_PATH"] = str(plugin_dir)  # only bitshuffle: other plugins there fail to load
    rng = np.random.default_rng(5)
    data = rng.poisson(3.0, size=(6 * 7, 40, 36)).astype(np.uint16)
    data[:, 18:22, 16:20] += 500  # a bright centre
    path = str(tmp_path_factory.mktemp("h5py") / "eiger_like.h5")
    with h5py.File(path, "w") as f:
        try:
            ds = f.create_dataset("/entry/data/data", data=data, chunks=(1, 40, 36), compression=32008,
                                  compression_opts=(0, 2))
        except ValueError as e:  # e.g. an h5py wheel bundling its own HDF5, which cannot load Debian's plugin
            pytest.skip(f"this h5py cannot write filter 32008 through {plugin} ({e}); CI runs these tests")
        ds.attrs["scan_shape"] = np.array([6, 7], dtype=np.int64)
    return path, data.reshape(6, 7, 40, 36)
