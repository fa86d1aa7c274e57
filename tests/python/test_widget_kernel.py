"""The widget through a real Jupyter kernel (jupyter_client + ipykernel, Debian python3-jupyter-client and
python3-ipykernel): a detector drag sent the way a notebook front end sends it comes back as the BF image of that
detector, as a float32 binary buffer (not JSON), equal to qgpu.detector.bf of the same dataset. The messages are
anywidget's protocol where anywidget is importable in the kernel, else the same state on a plain comm."""
import importlib.util
import os

import numpy as np
import pytest

import quantem.gpu as qgpu

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "bench_widget.py")


def frontend_module():
    pytest.importorskip("jupyter_client", reason="a real kernel round trip needs jupyter_client (Debian python3-jupyter-client)")
    pytest.importorskip("ipykernel", reason="a real kernel round trip needs ipykernel (Debian python3-ipykernel)")
    spec = importlib.util.spec_from_file_location("bench_widget", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_drag_in_a_real_kernel_gives_the_bf_of_that_detector(tmp_path):
    mod = frontend_module()
    path = tmp_path / "s.h5"
    qgpu.io.write_sample(path, scan=(12, 10), detector=(32, 32))
    ds = qgpu.io.load(str(path), backend="cpu")
    fe = mod.Frontend(path, "cpu", env={"QGPU_BACKEND": "cpu"})
    try:
        (cr, cc), r = fe.center, fe.radius
        fit = qgpu.detector.fit_bf_disk(ds)
        assert (cr, cc) == pytest.approx(tuple(fit["center"])) and r == pytest.approx(fit["radius"])
        for dr, dc, rad in ((0.5, 0.0, r), (1.5, -2.0, r - 1.0), (-3.0, 1.0, r + 2.5)):  # each differs from the last (an equal value is no change)
            det = {"kind": "disk", "cr": cr + dr, "cc": cc + dc, "r": rad, "inner": 1.2 * rad, "outer": 2.5 * rad,
                   "h": rad, "w": rad}
            _, content, buffers = fe.drag(det)
            assert (content["rows"], content["cols"]) == (12, 10) and len(buffers) == 1
            got = np.frombuffer(buffers[0], np.float32).reshape(12, 10)
            want = np.asarray(qgpu.detector.bf(ds, radius=rad, center=(cr + dr, cc + dc)))
            assert want.sum() > 0
            assert np.array_equal(got, want.astype(np.float32))
    finally:
        fe.close()
