"""`qgpu info` on files that crash or hang the HDF5 library: a clear error and exit 1, never a crash of qgpu."""
import os
import subprocess

import pytest

from conftest import QGPU, qgpu

CRASH_DIR = os.path.join(os.path.dirname(__file__), "../fuzz/known_hdf5_crashes")
KNOWN_HDF5_CRASHES = sorted(os.path.join(CRASH_DIR, n) for n in os.listdir(CRASH_DIR) if n.endswith(".h5"))


@pytest.mark.parametrize("path", KNOWN_HDF5_CRASHES, ids=os.path.basename)
def test_info_on_file_that_crashes_hdf5(path):
    r = qgpu("info", path)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"qgpu: error: HDF5 library crashed parsing '{path}' (signal 11, SIGSEGV)" in r.stderr
    r = qgpu("image", path, "--backend", "cpu", "--bf", "-o", os.devnull + ".d")
    assert r.returncode == 1 and "HDF5 library crashed parsing" in r.stderr, r.stderr


def test_info_when_the_parse_hangs(sample):
    path, _ = sample
    env = dict(os.environ, QGPU_TEST_PARSE_HANG="1", QGPU_PARSE_TIMEOUT_S="0.5")
    r = subprocess.run([QGPU, "info", str(path)], capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode == 1
    assert "did not finish parsing the metadata" in r.stderr and "within 0.5 s" in r.stderr
