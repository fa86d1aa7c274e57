"""Notebook views without the widget: rich reprs and the calibration with its units.

In Jupyter (and nbviewer or GitHub, which show the saved outputs) a Dataset displays its shape, dtype, backend,
representation, calibration (value, unit, source) and thumbnails of the mean pattern and the bright-field image; a
2D Result displays as the image with its colourbar and, when its pixel size is known, a scale bar.

    ds.calibration                      # Calibration: name -> Quantity (a float with .unit and .source)
    ds.calibration.energy_kev           # 300.0, .unit "keV"
    ds.calibration.scan_pixel_size      # angstrom per scan pixel of this load (scan step x bin_scan), or None
    bf.pixel_size                       # (0.33, "angstrom"): set on results of a Dataset (and kept through
                                        # functions of results of the same shape), used for the scale bar
"""
import base64
import html
import math
import warnings
from collections.abc import Mapping

import numpy as np

from . import _qgpu

UNIT_TEXT = {"angstrom": "\u00c5", "angstrom/px": "\u00c5/px", "": ""}
PATTERNS = ("detector.mean_pattern", "detector.sum_pattern", "detector.max_pattern")
THUMB_MAX = 512  # thumbnails of larger images are decimated (every k-th pixel) to at most this many pixels a side


class Quantity(float):
    """A calibration value: a float with its .unit ("keV", "angstrom", "mrad/px", ...) and .source (where it came
    from: the file's attribute, a sidecar, a value given at load)."""

    def __new__(cls, value, unit="", source=""):
        q = float.__new__(cls, value)
        q.unit, q.source = unit, source
        return q

    def __repr__(self):
        return f"{float(self)!r} {self.unit}".rstrip()

    def __str__(self):
        return f"{float(self):.6g} {UNIT_TEXT.get(self.unit, self.unit)}".rstrip()


class Calibration(Mapping):
    """The dataset's calibration: name -> Quantity (value, unit, source), also as attributes (cal.energy_kev).
    Names are the file's (energy_kev, scan_step_angstrom, detector_mrad_per_pixel, semiangle_mrad, ...;
    `qgpu info` prints the same). scan_pixel_size and detector_pixel_size are this load's pixels (binning
    included), None when the file does not give them."""

    def __init__(self, detail, bin_scan=1, bin_detector=1):
        self._q = {k: Quantity(v["value"], v.get("unit", ""), v.get("source", "")) for k, v in sorted(detail.items())
                   if isinstance(v, dict) and isinstance(v.get("value"), (int, float))}
        self.bin_scan, self.bin_detector = int(bin_scan), int(bin_detector)

    def __getitem__(self, name):
        try:
            return self._q[name]
        except KeyError:
            raise KeyError(f"no calibration value {name!r}; this dataset has: {', '.join(self._q) or 'none'}") from None

    def __iter__(self):
        return iter(self._q)

    def __len__(self):
        return len(self._q)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._q[name]
        except KeyError:
            raise AttributeError(f"no calibration value {name!r}; this dataset has: "
                                 f"{', '.join(self._q) or 'none'}") from None

    @property
    def scan_pixel_size(self):
        """Angstrom per scan pixel of this load (scan_step_angstrom x bin_scan), or None."""
        q = self._q.get("scan_step_angstrom")
        return None if q is None else Quantity(q * self.bin_scan, "angstrom", q.source)

    @property
    def detector_pixel_size(self):
        """mrad per detector pixel of this load (detector_mrad_per_pixel x bin_detector), or None."""
        q = self._q.get("detector_mrad_per_pixel")
        return None if q is None else Quantity(q * self.bin_detector, "mrad/px", q.source)

    def __repr__(self):
        return "Calibration(" + ", ".join(f"{k}={v!r}" for k, v in self._q.items()) + ")"

    def _repr_html_(self):
        rows = "".join(f"<tr><td>{html.escape(k)}</td><td style='text-align:right'>{float(v):.6g}</td>"
                       f"<td>{html.escape(UNIT_TEXT.get(v.unit, v.unit))}</td><td>{html.escape(v.source)}</td></tr>"
                       for k, v in self._q.items())
        if not rows:
            return "<p>no calibration in the file (give it at load or to each call)</p>"
        return ("<table class='qgpu-calibration'><thead><tr><th>calibration</th><th>value</th><th>unit</th>"
                f"<th>source</th></tr></thead><tbody>{rows}</tbody></table>")


def calibration(ds):
    params = (ds.provenance or {}).get("parameters") or {}
    return Calibration(ds.metadata.get("calibration_detail") or {}, params.get("bin_scan", 1),
                       params.get("bin_detector", 1))


# ------------------------------------------------------------------------------------------------- pixel sizes
def _results(out):
    from .result import Result
    if isinstance(out, Result):
        yield out
    elif isinstance(out, (tuple, list)):
        for o in out:
            yield from _results(o)
    elif isinstance(out, dict):
        for o in out.values():
            if isinstance(o, Result):
                yield o


def _scan_bin(r):
    """The scan bin a Result's provenance records (scan_bin of the product), else 1."""
    prov = r.provenance if isinstance(getattr(r, "provenance", None), dict) else {}
    return int((prov.get("parameters") or {}).get("scan_bin", 1))


def attach_pixel_size(out, args, kwargs):
    """Gives the 2D Results in `out` their pixel size: from a Dataset among the arguments (scan-shaped images: the
    scan pixel in angstrom; patterns: the detector pixel in mrad), else from an argument Result of the same shape."""
    inputs = list(args) + list(kwargs.values())
    ds = next((a for a in inputs if isinstance(a, _qgpu.Dataset)), None)
    given = [r for a in inputs for r in _results(a) if getattr(r, "pixel_size", None) is not None]
    for r in _results(out):
        if r.ndim not in (2, 3) or getattr(r, "pixel_size", None) is not None:
            continue
        shape = tuple(r.shape[:2])
        if ds is not None:
            cal = calibration(ds)
            op = (r.provenance or {}).get("operation", "") if isinstance(r.provenance, dict) else ""
            if op in PATTERNS and shape == tuple(ds.shape[2:]) and cal.detector_pixel_size is not None:
                r.pixel_size = (float(cal.detector_pixel_size), "mrad")
            elif op not in PATTERNS and shape == tuple(ds.shape[:2]) and cal.scan_pixel_size is not None:
                r.pixel_size = (float(cal.scan_pixel_size), "angstrom")
            elif op not in PATTERNS and cal.scan_pixel_size is not None and _scan_bin(r) > 1 and \
                    shape == (ds.shape[0] // _scan_bin(r), ds.shape[1] // _scan_bin(r)):
                r.pixel_size = (float(cal.scan_pixel_size) * _scan_bin(r), "angstrom")  # b x b positions a pixel
        else:
            same = next((g for g in given if tuple(g.shape[:2]) == shape), None)
            if same is not None:
                r.pixel_size = same.pixel_size
    return out


# ------------------------------------------------------------------------------------------------- pictures
def png(rgba):
    """PNG bytes of an (rows, cols, 4) uint8 image (libpng, as qgpu's own PNG files)."""
    return _qgpu.encode_png(np.ascontiguousarray(rgba, dtype=np.uint8))


def _img_tag(png_bytes, alt):
    return (f"<img alt='{html.escape(alt)}' style='image-rendering:pixelated;max-width:100%' "
            f"src='data:image/png;base64,{base64.b64encode(png_bytes).decode()}'>")


def _thumb_scale(shape, target=256):
    return max(1, min(64, math.ceil(target / max(shape))))


def _decimated(image):
    """A host copy of a 2D image, every k-th pixel when it is larger than THUMB_MAX, and k."""
    k = max(1, math.ceil(max(image.shape[:2]) / THUMB_MAX))
    return np.ascontiguousarray(np.asarray(image)[::k, ::k]), k


def render_result(r):
    """RGBA of a Result as its repr shows it: patterns in the dark-field halo view, signed maps on RdBu_r about 0,
    others inferno (the CLI's look), with a colourbar and a scale bar when the pixel size is known."""
    from . import display
    arr = r.view(np.ndarray)
    if arr.ndim == 3 and arr.shape[2] == 4 and arr.dtype == np.uint8:
        return arr
    if arr.ndim != 2 or arr.size == 0 or arr.dtype.kind not in "biuf":
        return None
    op = r.provenance.get("operation", "") if isinstance(r.provenance, dict) else ""
    pixel = getattr(r, "pixel_size", None)
    img, k = (r, 1) if max(arr.shape) <= THUMB_MAX else _decimated(arr)
    if pixel is not None and k > 1:
        pixel = (pixel[0] * k, pixel[1])
    scale = _thumb_scale(img.shape)
    if op in PATTERNS and np.any(arr > 0):
        return display.render_pattern(img, png_scale=scale, annotate=True, pixel_size=pixel)
    finite = arr[np.isfinite(arr)] if arr.dtype.kind == "f" else arr
    signed = finite.size > 0 and finite.min() < 0 < finite.max()
    return display.render(img, colormap="RdBu_r" if signed else "inferno", symmetric=signed, png_scale=scale,
                          percentiles=(0.5, 99.5), annotate=True, pixel_size=pixel)


def result_png(r):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rgba = render_result(r)
    return None if rgba is None else png(rgba)


def result_html(r):
    data = result_png(r)
    if data is None:
        return None
    prov = r.provenance if isinstance(r.provenance, dict) else {}
    arr = r.view(np.ndarray)
    finite = arr[np.isfinite(arr)] if arr.dtype.kind == "f" else arr
    stats = f", min {finite.min():.6g}, max {finite.max():.6g}" if finite.size and arr.ndim == 2 else ""
    pixel = getattr(r, "pixel_size", None)
    size = f", {pixel[0]:.4g} {UNIT_TEXT.get(pixel[1], pixel[1])}/px" if pixel else ""
    caption = (f"{prov.get('operation', 'result')}: {' x '.join(map(str, arr.shape))} {arr.dtype} on "
               f"{prov.get('backend', 'cpu')}{stats}{size}")
    return f"<figure class='qgpu-result'>{_img_tag(data, caption)}<figcaption>{html.escape(caption)}</figcaption></figure>"


def dataset_thumbnails(ds):
    """{"mean pattern": rgba, "bright field": rgba} (annotated), or the error text in place of a picture."""
    from . import detector
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, compute in (("mean pattern", detector.mean_pattern), ("bright field", detector.bf)):
            try:
                out[name] = render_result(compute(ds))
            except Exception as e:  # noqa: BLE001 - a repr must show what it can
                out[name] = f"{type(e).__name__}: {e}"
    return out


def _bytes(n):
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.4g} {unit}"
        n /= 1000


def dataset_html(ds):
    s = ds.shape
    params = (ds.provenance or {}).get("parameters") or {}
    path = params.get("path", "")
    facts = [("file", path), ("shape", f"scan {s[0]} x {s[1]}, detector {s[2]} x {s[3]}"), ("dtype", ds.dtype),
             ("backend", ds.backend), ("representation", f"{ds.representation} ({_bytes(ds.resident_bytes)} resident, "
                                                         f"{_bytes(ds.dense_bytes)} dense)")]
    if params.get("bin_scan", 1) != 1 or params.get("bin_detector", 1) != 1:
        facts.append(("binning", f"scan {params.get('bin_scan', 1)}, detector {params.get('bin_detector', 1)}"))
    table = "".join(f"<tr><th style='text-align:left'>{k}</th><td style='text-align:left'>{html.escape(str(v))}</td>"
                    "</tr>" for k, v in facts)
    pictures = []
    for name, rgba in dataset_thumbnails(ds).items():
        body = _img_tag(png(rgba), name) if isinstance(rgba, np.ndarray) else f"<pre>{html.escape(rgba)}</pre>"
        pictures.append(f"<figure style='display:inline-block;margin:4px;vertical-align:top'>{body}"
                        f"<figcaption>{name}</figcaption></figure>")
    return (f"<div class='qgpu-dataset'><b>quantem.gpu Dataset</b><table>{table}</table>"
            f"{calibration(ds)._repr_html_()}<div>{''.join(pictures)}</div></div>")


def dataset_png(ds):
    """The mean pattern and the bright field side by side, one PNG."""
    images = [v for v in dataset_thumbnails(ds).values() if isinstance(v, np.ndarray)]
    if not images:
        return None
    rows, gap = max(i.shape[0] for i in images), 8
    cols = sum(i.shape[1] for i in images) + gap * (len(images) - 1)
    canvas = np.full((rows, cols, 4), 255, np.uint8)
    c = 0
    for i in images:
        canvas[:i.shape[0], c:c + i.shape[1]] = i
        c += i.shape[1] + gap
    return png(canvas)
