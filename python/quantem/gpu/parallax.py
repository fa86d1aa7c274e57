"""Parallax / tilt-corrected bright field. Calibration defaults come from the file (/entry/calibration); keyword
arguments override: energy (keV), semiangle (mrad), step (angstrom), mrad_per_pixel, disk_center (row, col) and
disk_radius (px; both replace the fitted BF disk's: a default from an uncertain fit warns, detector.DiskFitUncertain),
edge (px left out at the disk edge), detector_bin (0 = auto: by dose, >= 10 counts per group and frame), upsample (2), iterations (3), search (px),
measured_shifts (False: shift-and-sum with the linear fit), defocus_sign (known sign of C1; 0 = from the image).

C1 follows the SSB convention (chi = +pi lambda C1 k^2; a BF-pixel image shifts by -C1 * tilt); rotation_deg and
transpose follow quantem.gpu.dpc (transpose first, then rotate)."""
import warnings

from . import _qgpu
from .detector import _warn_provenance
from .result import wrap


class ParallaxUndetermined(UserWarning):
    """The shift fit saw no parallax (in-focus or too noisy data): its C1 and rotation are not reliable."""


def _warn(out):
    _warn_provenance(out.get("provenance"), stacklevel=5)
    fit = out.get("fit", {})
    if not fit.get("determined", True):
        warnings.warn(fit["warning"], ParallaxUndetermined, stacklevel=3)
    return out


def _unwrap(d):
    out = dict(d)
    for key in ("image", "bf"):
        if key in out:
            out[key] = wrap(out[key])
    return out


def run(ds, **params):
    """{'image': tilt-corrected BF (Result, scan x upsample), 'bf': plain BF contrast (Result), 'fit': {C1_angstrom,
    A1_angstrom, A1_angle_rad, rotation_deg, transpose, confidence, determined, warning, ...}, 'det_row', 'det_col',
    'shift_row', 'shift_col' (per BF-pixel group), 'provenance'}. Warns (ParallaxUndetermined) when the fit saw no
    parallax (confidence < 0.6: in-focus or too noisy data), whose C1 and rotation are then not reliable."""
    return _warn(_unwrap(_qgpu.parallax_run(ds, params)))


def fit(ds, **params):
    """Only the alignment and the shift fit (no upsampled image): the same dict without 'image'."""
    return _warn(_unwrap(_qgpu.parallax_fit(ds, params)))
