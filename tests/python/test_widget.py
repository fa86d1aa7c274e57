"""qgpu.widget.Show4D, Python side: the state on traitlets and the float32 buffers it sends, checked against the
library's own results; without anywidget the stub model and the static view. The ES module itself:
tests/remote/e2e/widget.e2e.mjs; the notebook: test_notebook.py."""
import numpy as np
import pytest

import quantem.gpu as qgpu

traitlets = pytest.importorskip("traitlets", reason="qgpu.widget needs traitlets (Debian python3-traitlets)")
from quantem.gpu import widget  # noqa: E402


class Recorder(widget.Show4DState):
    """Show4DState with a model that records (works with or without anywidget)."""

    def __init__(self, data, **kw):
        super().__init__()
        self.sent = []
        self._setup(data, **kw)

    def send(self, content, buffers=None):
        self.sent.append((content, [bytes(b) for b in buffers or []]))

    def got(self, i=-1):
        content, buffers = self.sent[i]
        assert content["type"] == "image", content
        return content, np.frombuffer(buffers[0], np.float32).reshape(content["rows"], content["cols"])


@pytest.fixture(scope="module")
def ds(sample_path):
    return qgpu.io.load(sample_path, backend="cpu")


def test_ready_sends_pattern_product_and_frame_as_float32_buffers(ds):
    w = Recorder(ds)
    fit = qgpu.detector.fit_bf_disk(ds)
    assert w.detector["kind"] == "disk" and w.detector["r"] == pytest.approx(fit["radius"])
    assert w.shape == [12, 10, 48, 48] and w.calibration["scan"][1] == "angstrom"
    w.handle_message({"type": "ready"})
    assert [c["panel"] for c, _ in w.sent] == ["pattern", "real", "frame"]
    _, pattern = w.got(0)
    np.testing.assert_array_equal(pattern, np.asarray(qgpu.detector.mean_pattern(ds), np.float32))
    content, real = w.got(1)
    np.testing.assert_array_equal(real, np.asarray(qgpu.detector.bf(ds), np.float32))
    assert content["pixel"] == [ds.calibration.scan_step_angstrom, "angstrom"]
    _, frame = w.got(2)
    np.testing.assert_array_equal(frame, ds[0, 0].astype(np.float32))


def test_trait_changes_recompute(ds):
    w = Recorder(ds)
    w.detector = {**w.detector, "r": 5.0, "cr": 23.0}
    content, real = w.got()
    np.testing.assert_array_equal(real, np.asarray(qgpu.detector.bf(ds, radius=5.0, center=(23.0, w.detector["cc"])),
                                                   np.float32))
    assert content["title"] == "virtual disk r 5.0 px"
    w.detector = {**w.detector, "kind": "annulus", "inner": 10.0, "outer": 20.0}
    np.testing.assert_array_equal(w.got()[1], np.asarray(qgpu.detector.adf(ds, 10.0, 20.0, center=(23.0, 24.0)),
                                                           np.float32))
    w.detector = {**w.detector, "kind": "rectangle", "h": 2.0, "w": 3.0}
    mask = np.zeros((48, 48), bool)
    mask[21:26, 21:28] = True
    np.testing.assert_array_equal(w.got()[1], np.asarray(qgpu.detector.virtual_image(ds, mask), np.float32))
    w.product = "idpc"
    np.testing.assert_array_equal(w.got()[1], np.asarray(qgpu.dpc.pipeline(ds)["idpc"], np.float32))
    w.position = [11, 9]
    content, frame = w.got()
    assert content["panel"] == "frame" and content["title"] == "frame (11, 9)"
    np.testing.assert_array_equal(frame, ds[11, 9].astype(np.float32))
    assert all(ms >= 0 for _, ms in w.timings) and "updated in" in w.status


def test_bad_values_are_named(ds):
    w = Recorder(ds)
    with pytest.raises(traitlets.TraitError, match="product 'bff': one of virtual, com_row"):
        w.product = "bff"
    with pytest.raises(traitlets.TraitError, match=r"position \(12, 0\) is outside the scan 12 x 10"):
        w.position = [12, 0]
    with pytest.raises(traitlets.TraitError, match="detector kind 'ring'"):
        w.detector = {**w.detector, "kind": "ring"}
    with pytest.raises(traitlets.TraitError, match="detector r must be a finite number, got nan"):
        w.detector = {**w.detector, "r": float("nan")}
    with pytest.raises(qgpu.ArgumentTypeError, match="Show4D takes a Dataset .* not ndarray"):
        widget.Show4D(np.zeros((2, 2, 4, 4)))
    w.product = "ssb"  # an SSB the data cannot give is shown as the widget's status, not raised in the kernel
    assert w.sent[-1][0]["type"] in ("image", "error")


def test_from_a_product_cache(ds, tmp_path):
    qgpu.cache.build(ds, tmp_path / "products.h5")
    w = Recorder(qgpu.cache.open(tmp_path / "products.h5"))
    assert w.source == "cache" and "bf" in w.products and "mean_pattern" not in w.products and w.product == "bf"
    w.handle_message({"type": "ready"})
    assert [c["panel"] for c, _ in w.sent] == ["pattern", "real"]  # no frames without the raw data
    np.testing.assert_array_equal(w.got(1)[1], np.asarray(qgpu.cache.open(tmp_path / "products.h5")["bf"],
                                                            np.float32))


@pytest.mark.skipif(widget.anywidget is not None, reason="anywidget is importable: Show4D is the real widget")
def test_without_anywidget_the_static_view_says_how_to_get_it(ds):
    w = widget.Show4D(ds)
    html = w._repr_html_()
    assert "pip install anywidget" in html and "quantem.gpu Dataset" in html and "data:image/png" in html
    w.handle_message({"type": "ready"})
    assert len(w.sent) == 3 and "anywidget" in repr(w)


@pytest.mark.skipif(widget.anywidget is None, reason=f"anywidget is not importable here ({widget.ANYWIDGET_ERROR}); "
                    "the ES module is tested against a mock model in tests/remote/e2e/widget.e2e.mjs")
def test_anywidget_model_carries_the_module(ds):
    path = widget.esm_path()
    if path is None:
        pytest.skip("the ES module is not built (cd src/remote/web && npm ci && npm run build)")
    w = widget.Show4D(ds)
    assert "render" in w._esm and w.shape == [12, 10, 48, 48]


def test_missing_positions_of_the_dataset_are_synced(ds):
    """The real Direct Electron custom scan (../shared/data/mrc) never lists 10 of its 25 positions: the widget's
    `missing` trait names them (the browser draws them hatched); a dataset without any has an empty trait."""
    import os
    movie = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "mrc", "Custom_movie.mrc")
    assert os.path.exists(movie), f"the real Direct Electron files are missing: {movie}"
    de = qgpu.io.load(movie, backend="cpu")
    xy = np.loadtxt(movie.replace("_movie.mrc", "_scan_coordinates.csv"), delimiter=",", dtype=int)
    never = sorted(set(range(25)) - {int(y) * 5 + int(x) for x, y in xy})
    assert len(never) == 10
    assert Recorder(de).missing == {"count": 10, "positions": never}
    assert Recorder(ds).missing == {}
    # more than 10000: the count alone (the browser names it without drawing)
    assert widget._missing_of({"missing": 12345, "missing_positions": "more than 10000"}) == {"count": 12345,
                                                                                              "positions": []}
    # a finished live series names them in its report
    assert widget._missing_of({"live": {"report": {"missing": 2, "missing_positions": [3, 7]}}}) == {
        "count": 2, "positions": [3, 7]}


def test_a_large_scan_is_shown_binned(tmp_path):
    # 4 x 2048 positions: the viewer's rule (scan_bin.ts) bins it 2 x 2 (1024 a side); clicks map in the browser
    path = tmp_path / "wide.h5"
    qgpu.io.write_sample(str(path), scan=(4, 2048), detector=(16, 16), seed=3)
    big = qgpu.io.load(str(path), backend="cpu")
    assert widget.display_scan_bin(4, 2048) == 2 and widget.display_scan_bin(512, 512) == 1
    assert widget.display_scan_bin(1031, 1031) == 1  # a prime side: no bin leaves 256..1024 pixels
    w = Recorder(big)
    w.handle_message({"type": "ready"})
    content, real = next((c, np.frombuffer(b[0], np.float32).reshape(c["rows"], c["cols"])) for c, b in w.sent
                         if c["panel"] == "real")
    assert content["scan_bin"] == 2 and real.shape == (2, 1024)
    full = np.asarray(qgpu.detector.bf(big, radius=w.detector["r"], center=(w.detector["cr"], w.detector["cc"])),
                      np.float64)
    np.testing.assert_array_equal(real, full.reshape(2, 2, 1024, 2).sum(axis=(1, 3)).astype(np.float32))
    assert "binned 2\u00d72" in content["title"]
    if content["pixel"]:
        assert content["pixel"][0] == pytest.approx(2 * w.calibration["scan"][0])
    # the SSB of a large scan: the kept slider's low-pass answer on the binned grid
    w.c1 = 40.0
    w.product = "ssb"
    content, real = w.got()
    assert content["scan_bin"] == 2 and real.shape == (2, 1024) and "low-pass" in content["title"]
    np.testing.assert_array_equal(real, np.asarray(qgpu.ssb.Slider(big, detector_bin=4).at(C1=40.0, scan_bin=2),
                                                   np.float32))
