"""quantem.gpu.live: the simulator and a receiver in one process, the products while it runs and the finished
Dataset, against the offline load of the same file (numpy)."""
import socket
import threading

import numpy as np
import pytest

import quantem.gpu as qgpu


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    path = tmp_path_factory.mktemp("live") / "s.h5"
    qgpu.io.write_sample(path, scan=(6, 8), detector=(20, 24))
    return path


def run(sample, protocol, **connect):
    port = free_port()
    t = threading.Thread(target=qgpu.live.simulate, args=(sample,), kwargs=dict(protocol=protocol, port=port))
    t.start()
    scheme = {"dectris-v2": "dectris", "dectris-v1": "dectris-v1", "merlin": "merlin"}[protocol]
    with qgpu.live.connect(f"{scheme}://127.0.0.1:{port}", backend="cpu", series=1, **connect) as live:
        ds = live.wait(1, timeout=60)
        products = live.products()
        stats = live.stats()
    t.join()
    return ds, products, stats


@pytest.mark.parametrize("protocol", ["dectris-v2", "dectris-v1", "merlin"])
def test_live_dataset_and_products_equal_the_offline_load(sample, protocol):
    ref = qgpu.io.load(sample, backend="cpu")
    # stream V1 states no scan shape (the detector does not know it): the user gives it; V2 and Merlin carry it
    ds, p, stats = run(sample, protocol, **({"scan_shape": (6, 8)} if protocol == "dectris-v1" else {}))
    assert ds is not None
    assert ds.shape == ref.shape
    np.testing.assert_array_equal(ds.read(), ref.read())
    assert p["finished"]
    assert p["frames_received"] == 48
    assert p["received"].all()
    np.testing.assert_array_equal(p["sum_pattern"], qgpu.detector.sum_pattern(ref))
    fit = qgpu.detector.fit_bf_disk(ref)
    assert "bf" in p["images"] and "adf" in p["images"]
    com = qgpu.dpc.center_of_mass(ref)
    np.testing.assert_array_equal(p["com_row"], com[0])
    np.testing.assert_array_equal(p["com_col"], com[1])
    # the finished dataset answers the queries of a loaded one
    np.testing.assert_array_equal(qgpu.detector.bf(ds, radius=fit["radius"], center=fit["center"]),
                                  qgpu.detector.bf(ref, radius=fit["radius"], center=fit["center"]))
    assert stats["dropped"] == 0 and stats["frames_decoded"] == 48


def test_no_scan_shape_is_named(sample):
    port = free_port()
    t = threading.Thread(target=qgpu.live.simulate, args=(sample,), kwargs=dict(protocol="dectris-v1", port=port))
    t.start()
    with qgpu.live.connect(f"dectris-v1://127.0.0.1:{port}", backend="cpu", series=1) as live:
        t.join()
        assert live.wait(1, timeout=1) is None
        problems = live.products()["problems"]
    assert any("no scan shape" in p and "48 frames" in p for p in problems), problems


def test_set_detector_mid_run_and_bad_urls(sample):
    ref = qgpu.io.load(sample, backend="cpu")
    port = free_port()
    t = threading.Thread(target=qgpu.live.simulate, args=(sample,),
                         kwargs=dict(protocol="dectris-v2", port=port, rate=100))
    t.start()
    with qgpu.live.connect(f"dectris://127.0.0.1:{port}", backend="cpu", series=1) as live:
        mask = qgpu.detector.annulus_mask(20, 24, 10, 12, 3, 8)
        for _ in range(2000):  # once frames are in (the series started: the detector shape is known)
            before = live.products()["frames_received"]
            if before:
                break
            threading.Event().wait(0.01)
        live.set_detector("ring", mask)
        part = live.current()  # the frames so far: each either received (equal) or still zero
        ds = live.wait(1, timeout=60)
        p = live.products()
    t.join()
    assert ds is not None
    np.testing.assert_array_equal(p["images"]["ring"], qgpu.detector.virtual_image(ref, mask))
    frames, want = part.read(), ref.read()
    got_any = 0
    for r in range(6):
        for c in range(8):
            if frames[r, c].any():
                np.testing.assert_array_equal(frames[r, c], want[r, c])
                got_any += 1
    assert got_any >= before > 0, (got_any, before)  # frames only arrive: the copy holds those in before it
    with pytest.raises(qgpu.InvalidArgument, match="unknown scheme"):
        qgpu.live.connect("http://x:1", backend="cpu")
    with pytest.raises(TypeError, match="scan_shape"):
        qgpu.live.connect("dectris://x", scan_shap=(1, 2))
