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


def rotate_field(dpc_row, dpc_col, angle_deg, transpose=False):
    """The field rotated by angle_deg (after an optional transpose): (row, col) Results on the input's backend."""
    r, c = _qgpu.rotate_field(dpc_row, dpc_col, angle_deg, transpose, backend_of(dpc_row, dpc_col))
    return wrap(r), wrap(c)


def idpc(grad_row, grad_col, padding="mirror", step_row=1.0, step_col=1.0):
    """Potential whose gradient is (grad_row, grad_col), by Fourier integration, on the gradients' backend."""
    return wrap(_qgpu.idpc(grad_row, grad_col, backend_of(grad_row, grad_col), padding, step_row, step_col))
