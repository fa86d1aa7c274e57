"""qgpu simulate-detector + qgpu live as a user runs them, two processes on loopback: the series' images equal
`qgpu image` of the same file, and the errors of bad sources and options are named."""
import json
import os
import socket
import subprocess
import zipfile

import numpy as np
import pytest

from conftest import QGPU, qgpu


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("protocol,scheme,extra", [
    ("dectris-v2", "dectris", []),
    ("dectris-v2", "dectris", ["--parse-threads", "2"]),  # the socket thread only receives, 2 parsers decode
    ("dectris-v1", "dectris-v1", ["--scan-shape", "10", "12"]),
    ("merlin", "merlin", []),
])
def test_live_writes_what_qgpu_image_writes(sample, tmp_path, protocol, scheme, extra):
    path = sample[0] if isinstance(sample, tuple) else sample
    port = free_port()
    sim = subprocess.Popen([QGPU, "simulate-detector", path, "--protocol", protocol, "--port", str(port)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    r = qgpu("live", f"{scheme}://127.0.0.1:{port}", "--backend", "cpu", "-o", tmp_path / "live", *extra)
    out, err = sim.communicate(timeout=60)
    assert sim.returncode == 0, err
    assert r.returncode == 0, r.stderr
    assert "sent 120 frames" in out
    assert "1 series, 120 frames decoded, 0 dropped" in r.stdout
    ref = qgpu("image", path, "--backend", "cpu", "-o", tmp_path / "ref", "--bf", "--adf", "--dpc", "--idpc")
    assert ref.returncode == 0, ref.stderr
    live_dir = tmp_path / "live" / "series-1"
    for name in ["bf", "adf", "dpc_row", "dpc_col", "idpc"]:
        a, b = np.load(live_dir / f"{name}.npy"), np.load(tmp_path / "ref" / f"{name}.npy")
        np.testing.assert_array_equal(a, b, err_msg=name)
    report = json.loads((live_dir / "live.json").read_text())
    assert report["protocol"] == protocol
    assert report["missing"] == 0 and report["frames_received"] == 120
    assert report["end"] == "end message"


def test_live_errors_are_named(tmp_path):
    r = qgpu("live", "http://localhost:1", "--backend", "cpu", "-o", tmp_path / "o")
    assert r.returncode != 0 and "unknown scheme 'http'" in r.stderr
    r = qgpu("live", "merlin://localhost:99999", "--backend", "cpu", "-o", tmp_path / "o")
    assert r.returncode != 0 and "not 1..65535" in r.stderr
    r = qgpu("live", "merlin://no-such-host.invalid", "--backend", "cpu", "-o", tmp_path / "o", "--idle-timeout", "1")
    assert r.returncode != 0 and "cannot resolve 'no-such-host.invalid'" in r.stderr
    r = qgpu("live", "dectris://localhost", "--backend", "cpu", "--scan-shape", "0", "4", "-o", tmp_path / "o")
    assert r.returncode != 0 and "--scan-shape" in r.stderr
    r = qgpu("live", "dectris://localhost", "--backend", "cpu", "--parse-threads", "65", "-o", tmp_path / "o")
    assert r.returncode != 0 and "parse_threads 65" in r.stderr
    r = qgpu("simulate-detector", tmp_path / "missing.h5", "--protocol", "merlin")
    assert r.returncode != 0 and "missing.h5" in r.stderr
    r = qgpu("simulate-detector", tmp_path / "missing.h5", "--protocol", "udp")
    assert r.returncode != 0 and "protocol 'udp'" in r.stderr


def test_live_idle_timeout_ends_without_a_detector(tmp_path):
    r = qgpu("live", f"dectris://127.0.0.1:{free_port()}", "--backend", "cpu", "--idle-timeout", "0.5",
             "-o", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    assert "0 series, 0 frames decoded" in r.stdout


MERLIN_ZIP = os.path.join(os.path.dirname(__file__), "../../../shared/data/merlin/Merlin_Single_Quad.zip")


@pytest.mark.parametrize("name", ["Quad_9_Frame_CounterDepth_12_Rows_256.mib",
                                  "Single_9_Frame_CounterDepth_1_Rows_256RAW.mib",
                                  "Quad_9_Frame_CounterDepth_24_Rows_256.mib"])
def test_live_merlin_real_files_equal_qgpu_image(tmp_path, name):
    """Real Merlin acquisitions (quad and single chip, binary and raw) streamed over the Merlin TCP data port give
    the images qgpu image gives from the files (these flat test frames hold no disk: it is given)."""
    if not os.path.exists(MERLIN_ZIP):
        pytest.skip(f"the real Merlin files are not here ({MERLIN_ZIP})")
    with zipfile.ZipFile(MERLIN_ZIP) as z:
        z.extractall(tmp_path)
    mib = next(tmp_path.rglob(name))
    disk = ["--center", "100", "120", "--radius", "40"]
    port = free_port()
    sim = subprocess.Popen([QGPU, "simulate-detector", mib, "--protocol", "merlin", "--port", str(port),
                            "--scan-shape", "3", "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    r = qgpu("live", f"merlin://127.0.0.1:{port}", "--backend", "cpu", "--scan-shape", "3", "3", "-o",
             tmp_path / "live", *disk)
    out, err = sim.communicate(timeout=60)
    assert sim.returncode == 0, err
    assert r.returncode == 0, r.stderr
    assert "verbatim .mib frames" in out
    ref = qgpu("image", mib, "--backend", "cpu", "--scan-shape", "3", "3", "--bf", "--adf", "--dpc", "-o",
               tmp_path / "ref", *disk)
    assert ref.returncode == 0, ref.stderr
    for product in ["bf", "adf", "dpc_row", "dpc_col"]:
        np.testing.assert_array_equal(np.load(tmp_path / "live" / "series-1" / f"{product}.npy"),
                                      np.load(tmp_path / "ref" / f"{product}.npy"), err_msg=product)
