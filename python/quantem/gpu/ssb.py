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
import warnings

from . import _qgpu
from ._args import keywords
from .detector import _warn_provenance
from .result import wrap

class AstigmatismUnfitted(UserWarning):
    """A C1-only fit on data that show two-fold astigmatism: its C1 is biased (fit with fit_astigmatism=True)."""


_PARAMETERS = """    energy: beam energy, keV (> 0). Default: the file's calibration energy_kev.
    semiangle: convergence semi-angle, mrad (> 0). Default: the file's semiangle_mrad.
    step: scan step, angstrom per scan pixel (> 0). Default: the file's scan_step_angstrom.
    mrad_per_pixel: detector calibration, mrad per detector pixel (> 0). Default: the file's, else semiangle /
        BF disk radius.
    rotation: scan-to-detector rotation, degrees. Default: the file's rotation_deg, else 0.
    transpose: swap the detector axes first. Default False.
    defocus, C1: the Krivanek C1 in angstrom (positive = overfocus; give one of the two). Default: the file's
        defocus_angstrom, else 0.
    A1, A1_angle, C3: two-fold astigmatism (angstrom) at A1_angle (radians), spherical aberration (angstrom).
        Default 0.
    disk_center: (row, col) of the BF disk, detector pixels; disk_radius: its radius, px. Default: the fit's.
    weighting: "auto" (default), "amplitude", "phase" or "wiener"."""

_RAISES = """    Raises: InvalidArgument (a required calibration missing from the file and not given, a value not finite
    or not > 0, both defocus and C1), ArgumentTypeError (a TypeError) naming an unknown keyword and the known
    ones, BackendUnavailable; warns detector.DiskFitUncertain when a default came from an uncertain BF disk fit."""


def _given(**params):
    return {k: v for k, v in params.items() if v is not None}


def _phase_or_both(pair, with_amplitude):
    phase, amplitude = wrap(pair[0]), wrap(pair[1])
    _warn_provenance(phase.provenance, stacklevel=6)
    return (phase, amplitude) if with_amplitude else phase


@keywords
def reconstruct(ds, *, energy=None, semiangle=None, step=None, mrad_per_pixel=None, rotation=None, transpose=None,
                defocus=None, C1=None, A1=None, A1_angle=None, C3=None, disk_center=None, disk_radius=None,
                weighting=None, with_amplitude=False):
    """Phase image (radians, scan-shaped float32) as a Result with provenance (parameters used and their sources);
    with_amplitude=True: (phase, amplitude), the amplitude |object| of the same reconstruction (1 = no absorption).

    ds: a loaded Dataset (the whole scan).
"""
    return _phase_or_both(_qgpu.ssb_reconstruct(ds, _given(
        energy=energy, semiangle=semiangle, step=step, mrad_per_pixel=mrad_per_pixel, rotation=rotation,
        transpose=transpose, defocus=defocus, C1=C1, A1=A1, A1_angle=A1_angle, C3=C3, disk_center=disk_center,
        disk_radius=disk_radius, weighting=weighting)), with_amplitude)


@keywords
def preview(ds, detector_bin=4, *, energy=None, semiangle=None, step=None, mrad_per_pixel=None, rotation=None,
            transpose=None, defocus=None, C1=None, A1=None, A1_angle=None, C3=None, disk_center=None,
            disk_radius=None, weighting=None, with_amplitude=False):
    """Fast phase preview at reduced detector sampling: as reconstruct, with the detector binned detector_bin x
    detector_bin (>= 1; default 4); with_amplitude=True: (phase, amplitude).

    ds: a loaded Dataset.
"""
    return _phase_or_both(_qgpu.ssb_preview(ds, detector_bin, _given(
        energy=energy, semiangle=semiangle, step=step, mrad_per_pixel=mrad_per_pixel, rotation=rotation,
        transpose=transpose, defocus=defocus, C1=C1, A1=A1, A1_angle=A1_angle, C3=C3, disk_center=disk_center,
        disk_radius=disk_radius, weighting=weighting)), with_amplitude)


@keywords
def fit(ds, trials=200, c1_range=(-500.0, 500.0), fit_astigmatism=False, detector_bin=4, seed=1, *, energy=None,
        semiangle=None, step=None, mrad_per_pixel=None, rotation=None, transpose=None, defocus=None, C1=None,
        A1=None, A1_angle=None, C3=None, disk_center=None, disk_radius=None, weighting=None):
    """Seeded TPE + Nelder-Mead aberration search (with fit_astigmatism: C1 grid, A1 grid of angles, Nelder-Mead from the 3 best): {'aberrations' (C1, A1, A1_angle, B2, A2, C3), 'loss',
    'loss_trace', 'warning', 'provenance'}. A C1-only fit checks the loss for astigmatism at its best C1 and warns
    (AstigmatismUnfitted) when some A1 lowers it by more than 2 %: C1 is then biased.

    ds: a loaded Dataset.
    trials: evaluations at most (Nelder-Mead may converge earlier). Default 200.
    c1_range: (low, high) C1 search range, angstrom. Default (-500, 500).
    fit_astigmatism: fit A1 and A1_angle too. Default False.
    detector_bin: detector binning while fitting (>= 1). Default 4.
    seed: the search's random seed. Default 1.
    the rest: the starting parameters, as for reconstruct:
"""
    out = _qgpu.ssb_fit(ds, trials, tuple(c1_range), fit_astigmatism, detector_bin, seed, _given(
        energy=energy, semiangle=semiangle, step=step, mrad_per_pixel=mrad_per_pixel, rotation=rotation,
        transpose=transpose, defocus=defocus, C1=C1, A1=A1, A1_angle=A1_angle, C3=C3, disk_center=disk_center,
        disk_radius=disk_radius, weighting=weighting))
    _warn_provenance(out.get("provenance"))
    if out.get("warning"):
        warnings.warn(out["warning"], AstigmatismUnfitted, stacklevel=3)
    return out


class Slider:
    """G(K, Q) computed once for a dataset (the detector binned detector_bin x detector_bin, as preview), then each
    at() evaluates only the aberration-dependent part: a live defocus slider. Holds G on the dataset's backend
    (GPU memory for cuda; host memory for cpu: large at detector_bin 1).

    ds: a loaded Dataset. detector_bin: >= 1 (default 4; 1: every BF pixel, as reconstruct).
    The keyword parameters as for reconstruct (their aberrations are the starting ones).
"""

    @keywords
    def __init__(self, ds, detector_bin=4, *, energy=None, semiangle=None, step=None, mrad_per_pixel=None,
                 rotation=None, transpose=None, defocus=None, C1=None, A1=None, A1_angle=None, C3=None,
                 disk_center=None, disk_radius=None, weighting=None):
        self._r = _qgpu.SsbReconstructor(ds, detector_bin, _given(
            energy=energy, semiangle=semiangle, step=step, mrad_per_pixel=mrad_per_pixel, rotation=rotation,
            transpose=transpose, defocus=defocus, C1=C1, A1=A1, A1_angle=A1_angle, C3=C3, disk_center=disk_center,
            disk_radius=disk_radius, weighting=weighting))

    @keywords
    def at(self, C1=None, defocus=None, A1=None, A1_angle=None, C3=None, scan_bin=1, with_amplitude=False):
        """The phase (and with_amplitude=True the amplitude) at these aberrations, the others as given at
        construction: what preview (or reconstruct, detector_bin 1) gives with them.

        C1, defocus: the Krivanek C1, angstrom (give one). A1, A1_angle, C3: as for reconstruct.
        scan_bin: b > 1 (a divisor of both scan sides): the coarse answer of a large scan on the (rows/b, cols/b)
            grid: the same sums at that grid's frequencies only (b^2 less work), inverted there (the low-pass object
            at every b-th position). Default 1.
        with_amplitude: return (phase, amplitude). Default False.
        Raises: InvalidArgument (both C1 and defocus, a scan bin that does not divide the scan, values not finite)."""
        if C1 is not None and defocus is not None:
            raise _qgpu.InvalidArgument("ssb: give C1 or defocus (the same Krivanek C1), not both")
        change = _given(C1=C1 if C1 is not None else defocus, A1=A1, A1_angle=A1_angle, C3=C3)
        return _phase_or_both(self._r.at(change, scan_bin), with_amplitude)

    @property
    def detector_bin(self):
        """The detector binning of the kept G(K, Q)."""
        return self._r.detector_bin


for _f in (reconstruct, preview, fit):
    _f.__doc__ += _PARAMETERS + "\n" + _RAISES
Slider.__doc__ += _PARAMETERS
del _f
