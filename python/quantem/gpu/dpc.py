"""Centre of mass, DPC, rotation calibration and integrated DPC.

Operations on maps run where the maps live (their provenance's backend; plain numpy arrays: cpu)."""
import warnings

from . import _qgpu
from .result import Result, backend_of, wrap


class RotationUndetermined(UserWarning):
    """calibrate_rotation could not tell the angle / transpose / 180-degree choice apart."""


def center_of_mass(ds, mask=None):
    """(com_row, com_col) in detector pixels, each a Result with the provenance."""
    r, c, prov = _qgpu.center_of_mass(ds, mask)
    return Result(r, prov), Result(c, prov)


def centered_dpc(ds, reference=None):
    """CoM minus reference (default: mean CoM) as (dpc_row, dpc_col)."""
    r, c, prov = _qgpu.centered_dpc(ds, reference)
    return Result(r, prov), Result(c, prov)


def calibrate_rotation(dpc_row, dpc_col, ds=None):
    """{'angle_deg', 'transpose', 'curl_rms', 'divergence_rms', 'confidence', 'determined', 'method', 'warning',
    'provenance'} minimising the curl. With ds (the dataset the field came from), a CoM answer that is not
    determined (e.g. a strongly defocused probe, low dose) is replaced by the parallax shift field's rotation and
    transpose when that is more confident; 'method' says which decided ('com_curl' or 'parallax'). Warns
    (RotationUndetermined) when the answer is still not determined (confidence < 0.1): pass the rotation to
    rotate_field yourself then."""
    rot = _qgpu.calibrate_rotation(dpc_row, dpc_col, backend_of(dpc_row, dpc_col), ds)
    if not rot["determined"]:
        warnings.warn(rot["warning"], RotationUndetermined, stacklevel=2)
    return rot


def pipeline(ds, reference=None, rotation=None, transpose=False, idpc=True, padding="mirror"):
    """The whole DPC chain as `qgpu image` and the service run it: centre of mass -> centred DPC (CoM minus
    reference, default the mean CoM) -> rotation (rotation=ANGLE_DEG with transpose, else calibrated as
    calibrate_rotation(..., ds) does, parallax fallback included) -> rotated field -> iDPC (when idpc).
    A dict: 'com_row', 'com_col', 'dpc_row', 'dpc_col', 'field_row', 'field_col', 'idpc' (Results; 'idpc' None
    unless idpc), 'angle_deg', 'transpose' (the rotation applied) and 'calibration' (as calibrate_rotation returns
    it; None for a given rotation). Warns (RotationUndetermined) when a calibration is not determined."""
    r = _qgpu.dpc_pipeline(ds, reference, rotation, transpose, idpc, padding)
    cal = r["calibration"]
    if cal is not None and not cal["determined"]:
        warnings.warn(cal["warning"], RotationUndetermined, stacklevel=2)
    com_row, com_col, com_prov = r["com"]
    dpc_row, dpc_col, dpc_prov = r["dpc"]
    field_row, field_col = r["field"]
    return {"com_row": Result(com_row, com_prov), "com_col": Result(com_col, com_prov),
            "dpc_row": Result(dpc_row, dpc_prov), "dpc_col": Result(dpc_col, dpc_prov),
            "field_row": wrap(field_row), "field_col": wrap(field_col),
            "idpc": wrap(r["idpc"]) if r["idpc"] is not None else None,
            "angle_deg": r["angle_deg"], "transpose": r["transpose"], "calibration": cal}


def rotate_field(dpc_row, dpc_col, angle_deg, transpose=False):
    """The field rotated by angle_deg (after an optional transpose): (row, col) Results on the input's backend."""
    r, c = _qgpu.rotate_field(dpc_row, dpc_col, angle_deg, transpose, backend_of(dpc_row, dpc_col))
    return wrap(r), wrap(c)


def idpc(grad_row, grad_col, padding="mirror", step_row=1.0, step_col=1.0):
    """Potential whose gradient is (grad_row, grad_col), by Fourier integration, on the gradients' backend."""
    return wrap(_qgpu.idpc(grad_row, grad_col, backend_of(grad_row, grad_col), padding, step_row, step_col))
