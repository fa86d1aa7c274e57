import os
import subprocess

import numpy as np
import pytest

QGPU = os.environ.get("QGPU", os.path.join(os.path.dirname(__file__), "../../build/qgpu"))


def qgpu(*args, cwd=None):
    """Runs the qgpu command: CompletedProcess with text stdout/stderr."""
    return subprocess.run([QGPU, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=300)


def qgpu_on_terminal(*args):
    """Runs qgpu with stderr on a pseudo-terminal (where progress bars are drawn): (returncode, stderr text)."""
    import pty
    master, slave = pty.openpty()
    p = subprocess.Popen([QGPU, *map(str, args)], stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    return p.wait(timeout=300), seen.decode(errors="replace")


@pytest.fixture(scope="session")
def sample(tmp_path_factory):
    """A small sample written by `qgpu sample` (scan 10x12, detector 48x48) and its frames read by h5py + plugin."""
    path = tmp_path_factory.mktemp("data") / "small.h5"
    r = qgpu("sample", path, "--scan", 10, 12, "--detector", 48, 48, "--seed", 4)
    assert r.returncode == 0, r.stderr
    h5py = pytest.importorskip("h5py")
    plugin_dir = tmp_path_factory.mktemp("plugin")
    os.symlink("/usr/lib/x86_64-linux-gnu/hdf5/serial/plugins/libh5bshuf.so", plugin_dir / "libh5bshuf.so")
    os.environ["HDF5_PLUGIN_PATH"] = str(plugin_dir)
    with h5py.File(path) as f:
        frames = f["/entry/data/data"][:]
    return path, frames.reshape(10, 12, 48, 48).astype(np.int64)


def half_maximum_disk(frames):
    """A simple independent BF disk estimate: pixels of the summed pattern >= half its maximum; centroid, equal-area
    radius (right on a clean disk such as the sample's; a bright lobe around the disk fools it)."""
    s = frames.sum(axis=(0, 1))
    rows, cols = np.nonzero(2 * s >= s.max())
    return rows.mean(), cols.mean(), np.sqrt(rows.size / np.pi)
