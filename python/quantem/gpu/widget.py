"""Show4D: the viewer's panels in a notebook (an anywidget), on a Dataset or a product cache.

    w = qgpu.widget.Show4D(ds)      # mean pattern with a draggable detector, the product, the frame of a position
    w                               # (the last line of a cell) shows it; w.detector, w.product, w.position, w.c1
                                    # are synced both ways: set them from Python too

The front end is one ES module (src/remote/web/src/widget.ts, anywidget's render({model, el})) built from the
same TypeScript panels as the `qgpu serve` viewer (colourbar, hover values, zoom, PNG/figure/.npy export).
Everything goes through the kernel's comm channel, so it works where the kernel runs on another machine (no
port): images travel as binary float32 buffers (not JSON), detector drags are debounced in the browser.
Products: "virtual" (the detector: disk = BF, annulus = ADF, rectangle, point), "com_row"/"com_col", "dpc_row"/
"dpc_col", "idpc" (the CLI's chain), "ssb" (phase at the C1 of the `c1` trait, angstrom); a product cache offers
its own products (no frames, fixed detectors).

Without anywidget (`pip install anywidget`, or Debian: not packaged) Show4D still computes and keeps its state on
traitlets, with a stub model that collects what it would send (`w.sent`), and a notebook shows the static view
(the Dataset's rich repr) with a note saying how to get the widget.
"""
import os
import time

import numpy as np

from . import _qgpu, detector as _detector, dpc as _dpc, rich, ssb as _ssb
from .cache import ProductCache

try:
    import traitlets
except ImportError as e:  # pragma: no cover - Debian python3-traitlets, or pip install traitlets
    raise ImportError("qgpu.widget needs traitlets (Debian: apt-get install python3-traitlets; or pip install "
                      f"anywidget, which brings it): {e}") from None

try:
    import anywidget
    ANYWIDGET_ERROR = None
except Exception as e:  # noqa: BLE001 - absent, or an install that fails to import
    anywidget = None
    ANYWIDGET_ERROR = f"{type(e).__name__}: {e}"

HOW_TO_GET = ("the interactive Show4D widget needs anywidget (pip install anywidget, in the environment of the "
              "kernel; JupyterLab >= 3 or Notebook >= 7 show it)")
DATASET_PRODUCTS = ["virtual", "com_row", "com_col", "dpc_row", "dpc_col", "idpc", "ssb"]
KINDS = ("disk", "annulus", "rectangle", "point")  # the viewer's names (src/remote/web/src/api.ts)


def esm_path():
    """The built ES module: QGPU_WIDGET_JS, the installed package's static/widget.js, or the source tree's
    src/remote/web/dist/widget.js (built with `cd src/remote/web && npm ci && npm run build`)."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.environ.get("QGPU_WIDGET_JS", ""), os.path.join(here, "static", "widget.js")]
    folder = here
    for _ in range(6):  # python/quantem/gpu or build/python/quantem/gpu -> the source tree
        folder = os.path.dirname(folder)
        candidates.append(os.path.join(folder, "src", "remote", "web", "dist", "widget.js"))
    for c in candidates:
        if c and os.path.isfile(c):
            return c
    return None


def _missing_of(metadata):
    m = metadata if "missing_positions" in metadata else (metadata.get("live") or {}).get("report") or {}
    listed = m.get("missing_positions")
    positions = [int(p) for p in listed] if isinstance(listed, list) else []
    count = max(int(m.get("missing") or 0), len(positions))
    return {"count": count, "positions": positions} if count else {}


SCAN_BIN_LIMIT = 1024  # the viewer's (src/remote/web/src/scan_bin.ts): pictures of at most this many pixels a side


def display_scan_bin(rows, cols, limit=SCAN_BIN_LIMIT):
    """The scan bin of a large scan's virtual images, as the viewer chooses it: 1 up to `limit` positions a side, else
    the smallest common divisor b of rows and cols with max(rows, cols) / b in limit/4..limit (none: 1)."""
    side = max(rows, cols)
    if side <= limit:
        return 1
    b = 2
    while b <= min(rows, cols) and side / b >= limit / 4:
        if rows % b == 0 and cols % b == 0 and side / b <= limit:
            return b
        b += 1
    return 1


def _plain(a):
    return np.ascontiguousarray(np.asarray(a, dtype=np.float32))


class Show4DState(traitlets.HasTraits):
    """What the widget shows, on traitlets (synced to the browser by anywidget), and the computations behind it."""

    shape = traitlets.List(traitlets.Int()).tag(sync=True)
    products = traitlets.List(traitlets.Unicode()).tag(sync=True)
    product = traitlets.Unicode("virtual").tag(sync=True)
    detector = traitlets.Dict().tag(sync=True)
    position = traitlets.List(traitlets.Int(), default_value=[0, 0]).tag(sync=True)
    c1 = traitlets.Float(0.0).tag(sync=True)
    colormap = traitlets.Unicode("inferno").tag(sync=True)
    calibration = traitlets.Dict().tag(sync=True)  # {"scan": [value, unit] | None, "detector": [value, unit] | None}
    status = traitlets.Unicode("").tag(sync=True)  # the last error, else the last update's timing
    source = traitlets.Unicode("dataset").tag(sync=True)  # "dataset" or "cache"
    # Scan positions without a frame (a sparse file's, a DE csv scan's, a live series' dropped frames), as the
    # dataset's metadata names them: {"count": N, "positions": [flat index, ...]} (positions empty past 10000).
    missing = traitlets.Dict().tag(sync=True)

    def _setup(self, data, product=None, detector=None):
        self.timings = []  # (what, milliseconds) of each update: compute + hand over to the comm
        self._dpc = None
        self._slider = None  # ssb.Slider of a large scan, made at its first SSB
        self._scan_bin = 1
        if isinstance(data, ProductCache):
            self._ds, self._cache = None, data
            g = data.geometry
            self.source = "cache"
            scan, det = list(g["scan_shape"]), list(g["detector_shape"])
            self.products = [p for p in data.products if p not in ("mean_pattern", "sum_pattern", "frame_totals",
                                                                  "rotation")]
            cal = rich.Calibration({k: {"value": v, "unit": ""} for k, v in (g.get("calibration") or {}).items()
                                    if isinstance(v, (int, float))})
            center, radius = g["disk_center"], g["disk_radius"]
        elif isinstance(data, _qgpu.Dataset):
            self._ds, self._cache = data, None
            s = data.shape
            scan, det = [s[0], s[1]], [s[2], s[3]]
            self.products = list(DATASET_PRODUCTS)
            self._scan_bin = display_scan_bin(s[0], s[1])  # virtual images of a large scan: b x b block sums
            cal = data.calibration
            self.missing = _missing_of(data.metadata)
            try:
                fit = _detector.fit_bf_disk(data)
                center, radius = fit["center"], fit["radius"]
            except _qgpu.Error:
                center, radius = (det[0] / 2, det[1] / 2), min(det) / 8
        else:
            from . import ArgumentTypeError
            raise ArgumentTypeError(
                f"Show4D takes a Dataset (qgpu.io.load) or a ProductCache (qgpu.cache.open), not {type(data).__name__}")
        self.shape = scan + det
        scan_px = cal.get("scan_step_angstrom")
        det_px = cal.get("detector_mrad_per_pixel")
        self.calibration = {"scan": None if scan_px is None else [float(scan_px) * getattr(cal, "bin_scan", 1), "angstrom"],
                            "detector": None if det_px is None else [float(det_px) * getattr(cal, "bin_detector", 1), "mrad"]}
        self.detector = dict(detector or {"kind": "disk", "cr": float(center[0]), "cc": float(center[1]),
                                          "r": float(radius), "inner": float(radius) * 1.2,
                                          "outer": float(radius) * 2.5, "h": float(radius), "w": float(radius)})
        self.product = product or ("virtual" if self._ds is not None else ("bf" if "bf" in self.products
                                                                            else self.products[0]))
        self.observe(self._changed, names=["detector", "product", "position", "c1"])

    @traitlets.validate("product")
    def _valid_product(self, proposal):
        if self.products and proposal["value"] not in self.products:
            raise traitlets.TraitError(f"product {proposal['value']!r}: one of {', '.join(self.products)}")
        return proposal["value"]

    @traitlets.validate("detector")
    def _valid_detector(self, proposal):
        d = dict(proposal["value"])
        if d.get("kind") not in KINDS:
            raise traitlets.TraitError(f"detector kind {d.get('kind')!r}: one of {', '.join(KINDS)}")
        for k in ("cr", "cc", "r", "inner", "outer", "h", "w"):
            v = d.get(k)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not np.isfinite(v):
                raise traitlets.TraitError(f"detector {k} must be a finite number, got {v!r}")
        return d

    @traitlets.validate("position")
    def _valid_position(self, proposal):
        r, c = proposal["value"]
        if self.shape and not (0 <= r < self.shape[0] and 0 <= c < self.shape[1]):
            raise traitlets.TraitError(f"position {r, c} is outside the scan {self.shape[0]} x {self.shape[1]}")
        return [int(r), int(c)]

    # ------------------------------------------------------------------------------------------ computations
    def pattern(self):
        if self._ds is not None:
            return _detector.mean_pattern(self._ds)
        return self._cache["mean_pattern"]

    def image(self):
        """The product now selected, as a 2D Result."""
        p, d = self.product, self.detector
        if self._cache is not None:
            return self._cache[p]
        ds, center, b = self._ds, (d["cr"], d["cc"]), self._scan_bin
        if p == "virtual":
            if d["kind"] == "disk":
                return _detector.bf(ds, radius=d["r"], center=center, scan_bin=b)
            if d["kind"] == "annulus":
                return _detector.adf(ds, d["inner"], d["outer"], center=center, scan_bin=b)
            if d["kind"] == "point":
                return _detector.bf(ds, radius=0.5, center=center, scan_bin=b)
            rows, cols = np.ogrid[:self.shape[2], :self.shape[3]]
            mask = (np.abs(rows - d["cr"]) <= d["h"]) & (np.abs(cols - d["cc"]) <= d["w"])
            return _detector.virtual_image(ds, mask, scan_bin=b)
        if p == "ssb":
            if b > 1:  # a large scan: G kept at detector bin 4 (the viewer's slider), the low-pass binned answer
                if self._slider is None:
                    self._slider = _ssb.Slider(ds, detector_bin=4)
                return self._slider.at(C1=self.c1, scan_bin=b)
            return _ssb.reconstruct(ds, C1=self.c1)
        if self._dpc is None:
            self._dpc = _dpc.pipeline(ds)
        return self._dpc[p]

    def frame(self):
        if self._ds is None:
            return None
        r, c = self.position
        return self._ds[r, c]

    # ------------------------------------------------------------------------------------------ messages
    def _send_image(self, panel, values, title, pixel, scan_bin=1):
        arr = _plain(values)
        start = time.perf_counter()
        if scan_bin > 1:  # b x b scan positions a pixel: said in the title, the pixel size and the click's mapping
            how = "low-pass" if self.product == "ssb" else "exact sums"
            title += f" (binned {scan_bin}\u00d7{scan_bin} scan positions, {how})"
            pixel = [pixel[0] * scan_bin, pixel[1]] if pixel else None
        self.send({"type": "image", "panel": panel, "rows": int(arr.shape[0]), "cols": int(arr.shape[1]),
                   "title": title, "pixel": list(pixel) if pixel else None, "scan_bin": int(scan_bin)},
                  [memoryview(arr).cast("B")])
        return (time.perf_counter() - start) * 1e3

    def _update(self, what):
        start = time.perf_counter()
        try:
            if what in ("all", "pattern"):
                m = self.pattern()
                self._send_image("pattern", m, "mean pattern", self.calibration.get("detector"))
            if what in ("all", "image"):
                img = self.image()
                b = self._scan_bin if self.shape and img.shape[0] * self._scan_bin == self.shape[0] and \
                    self._scan_bin > 1 else 1
                self._send_image("real", img, self._title(), self.calibration.get("scan"), b)
            if what in ("all", "frame") and self._ds is not None:
                r, c = self.position
                self._send_image("frame", self.frame(), f"frame ({r}, {c})", self.calibration.get("detector"))
        except Exception as e:  # noqa: BLE001 - shown in the widget, not lost in the kernel's log
            self.status = f"{type(e).__name__}: {e}"
            self.send({"type": "error", "message": self.status})
            return
        ms = (time.perf_counter() - start) * 1e3
        self.timings.append((what, ms))
        self.status = f"{what} updated in {ms:.1f} ms"

    def _title(self):
        if self.product != "virtual":
            return self.product + (f" (C1 {self.c1:g} \u00c5)" if self.product == "ssb" else "")
        d = self.detector
        if d["kind"] == "annulus":
            return f"virtual annulus {d['inner']:.1f}..{d['outer']:.1f} px"
        if d["kind"] == "rectangle":
            return f"virtual rectangle {2 * d['h']:.0f} x {2 * d['w']:.0f} px"
        return f"virtual {d['kind']} r {d['r'] if d['kind'] == 'disk' else 0.5:.1f} px"

    def _changed(self, change):
        self._update("frame" if change["name"] == "position" else "image")

    def handle_message(self, content, buffers=None):
        """A message from the browser: {"type": "ready"} (a view opened: send it everything)."""
        if isinstance(content, dict) and content.get("type") == "ready":
            self._update("all")


def _static_html(data):
    if isinstance(data, _qgpu.Dataset):
        return data._repr_html_()
    return f"<pre>{data!r}</pre>"


if anywidget is not None:
    class Show4D(anywidget.AnyWidget, Show4DState):
        """The interactive 4D-STEM view (see the module's doc)."""

        def __init__(self, data, product=None, detector=None, **kwargs):
            path = esm_path()
            if path is None:
                raise FileNotFoundError("the widget's ES module is not built: cd src/remote/web && npm ci && npm run "
                                        "build (or set QGPU_WIDGET_JS)")
            self._esm = open(path).read()
            super().__init__(**kwargs)
            self._setup(data, product, detector)
            self.on_msg(lambda _w, content, buffers: self.handle_message(content, buffers))
else:
    class Show4D(Show4DState):
        """Show4D without anywidget: the same state and computations on traitlets, a stub model that keeps what
        it would send in `sent` ([(content, buffers)]), and the static view where a notebook displays it."""

        def __init__(self, data, product=None, detector=None):
            super().__init__()
            self.sent = []
            self._data = data
            self._setup(data, product, detector)

        def send(self, content, buffers=None):
            self.sent.append((content, [bytes(b) for b in (buffers or [])]))

        def _repr_html_(self):
            return (f"<p><b>qgpu.widget.Show4D</b>: {HOW_TO_GET} ({ANYWIDGET_ERROR}); the static view:</p>"
                    + _static_html(self._data))

        def __repr__(self):
            return f"<qgpu.widget.Show4D (static: {HOW_TO_GET})>"
