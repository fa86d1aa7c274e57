"""Parallax / tilt-corrected bright field. Calibration defaults come from the file (/entry/calibration); keyword
arguments override: energy (keV), semiangle (mrad), step (angstrom), mrad_per_pixel, disk_center, disk_radius,
edge (px left out at the disk edge), detector_bin (0 = auto: by dose, >= 10 counts per group and frame), upsample (2), iterations (3), search (px),
measured_shifts (False: shift-and-sum with the linear fit), defocus_sign (known sign of C1; 0 = from the image).

C1 follows the SSB convention (chi = +pi lambda C1 k^2; a BF-pixel image shifts by -C1 * tilt); rotation_deg and
transpose follow quantem.gpu.dpc (transpose first, then rotate)."""
from . import _qgpu
from .result import wrap


def _unwrap(d):
    out = dict(d)
    for key in ("image", "bf"):
        if key in out:
            out[key] = wrap(out[key])
    return out


def run(ds, **params):
    """{'image': tilt-corrected BF (Result, scan x upsample), 'bf': plain BF contrast (Result), 'fit': {C1_angstrom,
    A1_angstrom, A1_angle_rad, rotation_deg, transpose, confidence, ...}, 'det_row', 'det_col', 'shift_row',
    'shift_col' (per BF-pixel group), 'provenance'}."""
    return _unwrap(_qgpu.parallax_run(ds, params))


def fit(ds, **params):
    """Only the alignment and the shift fit (no upsampled image): the same dict without 'image'."""
    return _unwrap(_qgpu.parallax_fit(ds, params))
