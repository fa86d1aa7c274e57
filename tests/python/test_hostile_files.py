"""Hostile files through the Python module (issue 10): refused with a typed error, never a hang or a crash."""
import os

import pytest

import quantem.gpu as qgpu


def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "f.h5"
    os.mkfifo(fifo)
    with pytest.raises(qgpu.IoError, match="named pipe"):
        qgpu.io.inspect(str(fifo))
    with pytest.raises(qgpu.IoError, match="named pipe"):
        qgpu.io.load(str(fifo), backend="cpu")


def test_symlink_loop_is_an_io_error(tmp_path):
    loop = tmp_path / "l.h5"
    os.symlink("l.h5", loop)
    with pytest.raises(qgpu.IoError, match="cannot access"):
        qgpu.io.inspect(str(loop))


def test_huge_shape_is_a_format_error(tmp_path):
    h5py = pytest.importorskip("h5py")
    path = str(tmp_path / "huge.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("data", shape=(2**32, 2**32, 1, 1), dtype="uint8", chunks=(1, 1, 1, 1))
    with pytest.raises(qgpu.FormatError, match="overflows 64 bits"):
        qgpu.io.inspect(path)
