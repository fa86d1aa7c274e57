"""Single-side-band ptychography. Calibration defaults come from the file (/entry/calibration); keyword
arguments override: energy (keV), semiangle (mrad), step (angstrom), mrad_per_pixel, rotation (deg),
defocus (C1, angstrom), A1, A1_angle, C3, disk_center, disk_radius."""
from . import _qgpu
from .result import wrap


def reconstruct(ds, **params):
    """Phase image (radians) as a Result with provenance."""
    return wrap(_qgpu.ssb_reconstruct(ds, params))


def preview(ds, detector_bin=4, **params):
    """Fast phase preview at reduced detector sampling."""
    return wrap(_qgpu.ssb_preview(ds, detector_bin, params))


def fit(ds, trials=200, c1_range=(-500.0, 500.0), fit_astigmatism=False, detector_bin=4, seed=1, **params):
    """Seeded TPE + Nelder-Mead aberration search; {'aberrations', 'loss', 'loss_trace', 'provenance'}."""
    return _qgpu.ssb_fit(ds, trials, tuple(c1_range), fit_astigmatism, detector_bin, seed, params)
