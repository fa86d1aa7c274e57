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


KNOWN_HDF5_CRASHES = sorted(
    (os.path.join(os.path.dirname(__file__), "../fuzz/known_hdf5_crashes", name))
    for name in os.listdir(os.path.join(os.path.dirname(__file__), "../fuzz/known_hdf5_crashes"))
    if name.endswith(".h5"))


@pytest.mark.parametrize("path", KNOWN_HDF5_CRASHES, ids=os.path.basename)
def test_file_that_crashes_hdf5_is_a_format_error(path):
    # HDF5 1.10.8 segfaults parsing it; the parse runs in a child process, so Python gets an exception.
    with pytest.raises(qgpu.FormatError, match=r"HDF5 library crashed parsing .*\(signal 11, SIGSEGV\)"):
        qgpu.io.inspect(path)
    with pytest.raises(qgpu.FormatError, match="HDF5 library crashed parsing"):
        qgpu.io.load(path, backend="cpu")


def test_hanging_parse_is_a_timeout_error(tmp_path, monkeypatch):
    path = str(tmp_path / "s.h5")
    qgpu.io.write_sample(path, scan=(2, 2), detector=(8, 8))
    monkeypatch.setenv("QGPU_TEST_PARSE_HANG", "1")
    monkeypatch.setenv("QGPU_PARSE_TIMEOUT_S", "0.5")
    with pytest.raises(qgpu.FormatError, match=r"did not finish parsing the metadata of .* within 0.5 s"):
        qgpu.io.inspect(path)
