"""Parallax / tilt-corrected bright field. Calibration defaults come from the file (/entry/calibration); keyword
arguments override: energy (keV), semiangle (mrad), step (angstrom), mrad_per_pixel, disk_center (row, col) and
disk_radius (px; both replace the fitted BF disk's: a default from an uncertain fit warns, detector.DiskFitUncertain),
edge (px left out at the disk edge), detector_bin (0 = auto: by dose, >= 10 counts per group and frame), upsample (2), iterations (3), search (px),
measured_shifts (False: shift-and-sum with the linear fit), defocus_sign (known sign of C1; 0 = from the image).

C1 follows the SSB convention (chi = +pi lambda C1 k^2; a BF-pixel image shifts by -C1 * tilt); rotation_deg and
transpose follow quantem.gpu.dpc (transpose first, then rotate)."""
import warnings

from . import _qgpu
from ._args import keywords
from .detector import _warn_provenance
from .result import wrap


class ParallaxUndetermined(UserWarning):
    """The shift fit saw no parallax (in-focus or too noisy data): its C1 and rotation are not reliable."""


def _warn(out):
    _warn_provenance(out.get("provenance"), stacklevel=6)
    fit = out.get("fit", {})
    if not fit.get("determined", True):
        warnings.warn(fit["warning"], ParallaxUndetermined, stacklevel=4)
    return out


def _unwrap(d):
    out = dict(d)
    for key in ("image", "bf"):
        if key in out:
            out[key] = wrap(out[key])
    return out


_PARAMETERS = """
    ds: a loaded Dataset.
    energy: beam energy, keV (> 0). Default: the file's calibration energy_kev.
    semiangle: convergence semi-angle, mrad (> 0). Default: the file's semiangle_mrad.
    step: scan step, angstrom per scan pixel (> 0). Default: the file's scan_step_angstrom.
    mrad_per_pixel: mrad per detector pixel (> 0). Default: the file's, else semiangle / BF disk radius.
    disk_center: (row, col) of the BF disk, detector pixels; disk_radius: its radius, px. Default: the fit's.
    edge: pixels left out at the BF disk edge. Default 1.
    detector_bin: detector pixel grouping; 0 (default) = by dose (>= 10 counts per group and frame).
    upsample: the image's sampling, scan step / upsample (1..8). Default 2.
    iterations: alignment iterations. Default 3.
    search: shift search radius, scan pixels. Default 4.
    measured_shifts: True = shift each group by its measured shift, False (default) = by the linear fit.
    defocus_sign: the known sign of C1 (+1 or -1); 0 (default) = decided from the image.

    Raises: InvalidArgument (a required calibration missing and not given, bad values), ArgumentTypeError (a
    TypeError) naming an unknown keyword and the known ones; warns ParallaxUndetermined when the fit saw no
    parallax, detector.DiskFitUncertain when a default came from an uncertain BF disk fit."""


def _given(**params):
    return {k: v for k, v in params.items() if v is not None}


@keywords
def run(ds, *, energy=None, semiangle=None, step=None, mrad_per_pixel=None, disk_center=None, disk_radius=None,
        edge=None, detector_bin=None, upsample=None, iterations=None, search=None, measured_shifts=None,
        defocus_sign=None):
    """{'image': tilt-corrected BF (Result, scan x upsample), 'bf': plain BF contrast (Result), 'fit': {C1_angstrom,
    A1_angstrom, A1_angle_rad, rotation_deg, transpose, confidence, determined, warning, ...}, 'det_row', 'det_col',
    'shift_row', 'shift_col' (per BF-pixel group), 'provenance'}. Warns (ParallaxUndetermined) when the fit saw no
    parallax (confidence < 0.6: in-focus or too noisy data), whose C1 and rotation are then not reliable.
"""
    return _warn(_unwrap(_qgpu.parallax_run(ds, _given(
        energy=energy, semiangle=semiangle, step=step, mrad_per_pixel=mrad_per_pixel, disk_center=disk_center,
        disk_radius=disk_radius, edge=edge, detector_bin=detector_bin, upsample=upsample, iterations=iterations,
        search=search, measured_shifts=measured_shifts, defocus_sign=defocus_sign))))


@keywords
def fit(ds, *, energy=None, semiangle=None, step=None, mrad_per_pixel=None, disk_center=None, disk_radius=None,
        edge=None, detector_bin=None, upsample=None, iterations=None, search=None, measured_shifts=None,
        defocus_sign=None):
    """Only the alignment and the shift fit (no upsampled image): the dict of run without 'image'.
"""
    return _warn(_unwrap(_qgpu.parallax_fit(ds, _given(
        energy=energy, semiangle=semiangle, step=step, mrad_per_pixel=mrad_per_pixel, disk_center=disk_center,
        disk_radius=disk_radius, edge=edge, detector_bin=detector_bin, upsample=upsample, iterations=iterations,
        search=search, measured_shifts=measured_shifts, defocus_sign=defocus_sign))))


for _f in (run, fit):
    _f.__doc__ += _PARAMETERS
del _f
