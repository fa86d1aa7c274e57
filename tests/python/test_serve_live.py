"""`qgpu serve --live` answering an ADF while the scan runs and after it: the answer at the end equals the offline
load's (the same request to `qgpu serve FILE`). On cuda the ADF subtracts a complement from cached per-frame totals:
those were kept across the acquisition's writes, so an ADF asked mid-scan made every later ADF use the totals of
the frames that had arrived before (fixed: the writes forget every cached product)."""
import json
import os
import re
import socket
import subprocess
import time
import urllib.request

import pytest

from conftest import require_backend

QUERY = "virtual?kind=annulus&cr=24&cc=24&inner=2&outer=60&format=json"  # most of the detector: total minus a disk


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def serve(args):
    """Starts `qgpu serve ARGS --port 0`; (process, base url) once it listens."""
    p = subprocess.Popen([os.environ["QGPU_BIN"], "serve", *map(str, args), "--port", "0"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 60
    seen = ""
    while time.time() < deadline:
        line = p.stdout.readline()
        seen += line
        m = re.search(r"listening on (http://\S+)", line)
        if m:
            return p, m.group(1).rstrip("/") + "/"
        if not line and p.poll() is not None:
            break
    p.kill()
    raise AssertionError("qgpu serve did not listen: " + seen)


def get(url):
    with urllib.request.urlopen(url, timeout=60) as r:
        return json.loads(r.read())


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_live_adf_asked_mid_scan_equals_the_offline_load_at_the_end(tmp_path, backend):
    require_backend(backend)
    path = tmp_path / "s.h5"
    subprocess.run([os.environ["QGPU_BIN"], "sample", str(path), "--scan", "16", "16", "--detector", "48", "48"], check=True,
                   capture_output=True)
    port = free_port()
    sim = subprocess.Popen([os.environ["QGPU_BIN"], "simulate-detector", str(path), "--port", str(port), "--rate", "60"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    live, offline = None, None
    try:
        live, base = serve(["--live", f"dectris://127.0.0.1:{port}", "--backend", backend])
        mid = None
        deadline = time.time() + 60
        while time.time() < deadline:  # an ADF while the scan runs (256 frames at 60/s: about 4 s)
            st = get(base + "api/datasets/live/live")
            if 30 <= st.get("frames_received", 0) < 200:
                mid = get(base + "api/datasets/live/" + QUERY)
                break
            time.sleep(0.05)
        assert mid is not None, "no ADF answered while the scan ran"
        while time.time() < deadline and not get(base + "api/datasets/live/live").get("finished"):
            time.sleep(0.1)
        end = get(base + "api/datasets/live/" + QUERY)
        offline, obase = serve([path, "--backend", "cpu"])
        ref = get(obase + "api/datasets/s/" + QUERY)
        assert end["data"] == ref["data"], "the live ADF at the end differs from the offline load's"
        assert mid["data"] != ref["data"], "asked mid-scan, the ADF should still lack the frames to come"
    finally:
        for p in (sim, live, offline):
            if p is not None:
                p.kill()
                p.wait()
