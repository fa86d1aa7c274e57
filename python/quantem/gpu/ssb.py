"""Single-side-band ptychography. Calibration defaults come from the file (/entry/calibration); keyword
arguments override: energy (keV), semiangle (mrad), step (angstrom), mrad_per_pixel, rotation (deg), transpose,
defocus or C1 (angstrom), A1, A1_angle, C3, disk_center, disk_radius, weighting. disk_center (row, col) and
disk_radius (px) replace the fitted BF disk's; a default from an uncertain fit warns (detector.DiskFitUncertain).

Conventions (docs/conventions.md):
- defocus / C1: the Krivanek C1, chi = pi lambda C1 k^2 with probe exp(-i chi): positive = OVERFOCUS;
  C1 = -defocus of py4DSTEM, abTEM and Kirkland (their defocus > 0 is underfocus).
- rotation, transpose: as qgpu.dpc.calibrate_rotation reports them ("angle_deg", "transpose"): the detector
  (row, col) axes are swapped first if transpose, then turned by rotation degrees, positive from the row axis
  towards the col axis, into the scan axes.
- weighting: "auto" (default; wiener below 3e5 counts per frame in the BF disk, else amplitude), "amplitude"
  (least squares, quantitative phase), "phase" (py4DSTEM's Gamma/|Gamma|), "wiener" (Poisson noise from the counts,
  object power per |Q| ring from the data). The choice and its reason are in the result's provenance."""
from . import _qgpu
from .detector import _warn_provenance
from .result import wrap


def reconstruct(ds, **params):
    """Phase image (radians) as a Result with provenance."""
    out = wrap(_qgpu.ssb_reconstruct(ds, params))
    _warn_provenance(out.provenance)
    return out


def preview(ds, detector_bin=4, **params):
    """Fast phase preview at reduced detector sampling."""
    out = wrap(_qgpu.ssb_preview(ds, detector_bin, params))
    _warn_provenance(out.provenance)
    return out


def fit(ds, trials=200, c1_range=(-500.0, 500.0), fit_astigmatism=False, detector_bin=4, seed=1, **params):
    """Seeded TPE + Nelder-Mead aberration search; {'aberrations', 'loss', 'loss_trace', 'provenance'}."""
    out = _qgpu.ssb_fit(ds, trials, tuple(c1_range), fit_astigmatism, detector_bin, seed, params)
    _warn_provenance(out.get("provenance"))
    return out
