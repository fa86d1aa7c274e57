"""Centre of mass, DPC, rotation calibration and integrated DPC.

Operations on maps run where the maps live (their provenance's backend; plain numpy arrays: cpu)."""
import warnings

from . import _qgpu
from ._args import keywords
from .result import Result, backend_of, wrap


class RotationUndetermined(UserWarning):
    """calibrate_rotation could not tell the angle / transpose / 180-degree choice apart."""


@keywords
def center_of_mass(ds, mask=None, scan_bin=1):
    """(com_row, com_col): each frame's intensity-weighted centre in detector pixels, scan-shaped Results.

    ds: a loaded Dataset. mask: None (default: every pixel) or a detector-shaped 0/1 array of the pixels used.
    scan_bin: b > 1 (a divisor of both scan sides): the centre of b x b blocks of frames summed (the CoM of the
    binned scan), (rows/b, cols/b) maps; default 1.
    Raises: InvalidArgument (a mask of another shape or with values other than 0 and 1)."""
    r, c, prov = _qgpu.center_of_mass(ds, mask, scan_bin)
    return Result(r, prov), Result(c, prov)


@keywords
def centered_dpc(ds, reference=None):
    """(dpc_row, dpc_col): the centre of mass minus a reference, detector pixels (signed maps: render them with
    display.render(..., symmetric=True)).

    ds: a loaded Dataset. reference: (row, col) in detector pixels; None (default) = the mean centre of mass."""
    r, c, prov = _qgpu.centered_dpc(ds, reference)
    return Result(r, prov), Result(c, prov)


@keywords
def calibrate_rotation(dpc_row, dpc_col, ds=None):
    """dpc_row, dpc_col: the centred DPC maps (centered_dpc); ds: their Dataset (optional, default None).
    Returns {'angle_deg', 'transpose', 'curl_rms', 'divergence_rms', 'confidence', 'angle_sigma_deg', 'determined',
    'method', 'warning', 'provenance'} minimising the curl; 'angle_sigma_deg' is the angle's standard error from the
    data (NaN when the parallax decided). With ds (the dataset the field came from), a CoM answer that is not
    determined (e.g. a strongly defocused probe, low dose) is replaced by the parallax shift field's rotation and
    transpose when that is more confident; 'method' says which decided ('com_curl' or 'parallax'). Warns
    (RotationUndetermined) when the answer is still not determined (confidence < 0.1 or, for the CoM answer,
    angle_sigma_deg > 0.5): pass the rotation to
    rotate_field yourself then."""
    rot = _qgpu.calibrate_rotation(dpc_row, dpc_col, backend_of(dpc_row, dpc_col), ds)
    if not rot["determined"]:
        warnings.warn(rot["warning"], RotationUndetermined, stacklevel=3)  # the caller (past _args.keywords)
    return rot


@keywords
def pipeline(ds, reference=None, rotation=None, transpose=False, idpc=True, padding="mirror"):
    """ds: a loaded Dataset; reference: (row, col) detector pixels or None; rotation: degrees or None (calibrate);
    transpose: bool; idpc: integrate (default True); padding: "mirror" (default), "zeros" or "periodic", as for
    idpc().
    The whole DPC chain as `qgpu image` and the service run it: centre of mass -> centred DPC (CoM minus
    reference, default the mean CoM) -> rotation (rotation=ANGLE_DEG with transpose, else calibrated as
    calibrate_rotation(..., ds) does, parallax fallback included) -> rotated field -> iDPC (when idpc).
    On a GPU-resident dataset the field is made and integrated on the GPU while the maps come down: nothing goes
    back up, and the values are those of the steps one by one.
    A dict: 'com_row', 'com_col', 'dpc_row', 'dpc_col', 'field_row', 'field_col', 'idpc' (Results; 'idpc' None
    unless idpc), 'angle_deg', 'transpose' (the rotation applied) and 'calibration' (as calibrate_rotation returns
    it; None for a given rotation). Warns (RotationUndetermined) when a calibration is not determined."""
    r = _qgpu.dpc_pipeline(ds, reference, rotation, transpose, idpc, padding)
    cal = r["calibration"]
    if cal is not None and not cal["determined"]:
        warnings.warn(cal["warning"], RotationUndetermined, stacklevel=3)  # the caller (past _args.keywords)
    com_row, com_col, com_prov = r["com"]
    dpc_row, dpc_col, dpc_prov = r["dpc"]
    field_row, field_col = r["field"]
    return {"com_row": Result(com_row, com_prov), "com_col": Result(com_col, com_prov),
            "dpc_row": Result(dpc_row, dpc_prov), "dpc_col": Result(dpc_col, dpc_prov),
            "field_row": wrap(field_row), "field_col": wrap(field_col),
            "idpc": wrap(r["idpc"]) if r["idpc"] is not None else None,
            "angle_deg": r["angle_deg"], "transpose": r["transpose"], "calibration": cal}


@keywords
def rotate_field(dpc_row, dpc_col, angle_deg, transpose=False):
    """The field (dpc_row, dpc_col) rotated by angle_deg degrees (after swapping the detector axes when transpose,
    default False): (row, col) Results on the input's backend.

    Raises: InvalidArgument (maps of different shapes or backends, an angle not finite)."""
    r, c = _qgpu.rotate_field(dpc_row, dpc_col, angle_deg, transpose, backend_of(dpc_row, dpc_col))
    return wrap(r), wrap(c)


@keywords
def idpc(grad_row, grad_col, padding="mirror", step_row=1.0, step_col=1.0, rotation=None, transpose=False):
    """Potential whose gradient is (grad_row, grad_col), by Fourier integration, on the gradients' backend.

    grad_row, grad_col: the rotated DPC field (rotate_field), or, with rotation (degrees; transpose first when
    transpose), the centred DPC: rotated as rotate_field does (the same values) and integrated in one call (cuda: on
    the GPU, no host pass). padding: "mirror" (default: the mirrored potential, no seam), "zeros" (zero-gradient
    margins) or "periodic" (none). step_row, step_col: scan step along each axis (the result scales with it; default
    1.0 = per scan pixel).
    Raises: InvalidArgument (maps of different shapes or backends, an unknown padding, steps not > 0, a rotation
    that is not finite)."""
    return wrap(_qgpu.idpc(grad_row, grad_col, backend_of(grad_row, grad_col), padding, step_row, step_col,
                           rotation, transpose))
