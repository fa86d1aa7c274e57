"""Issue 31: one row of the science truth table (bench/science_truth.sh) from qgpu's outputs, beside py4DSTEM-style
results computed here with numpy on the same frames:
- rotation: py4DSTEM's CoM-curl search (phase_base_class._solve_for_center_of_mass_relative_rotation: CoM of every
  frame minus its mean, for rotation_angles_deg = arange(-89, 90) and both transposes the field turned by py4DSTEM's
  matrices, which are ours (docs/conventions.md), curl = mean |d comy/d x - d comx/d y| by central differences; the
  smallest wins). It leaves the 180-degree choice open: its error is taken modulo 180.
- parallax: py4dstem_parallax below, a numpy port of py4DSTEM's Parallax written from its method (py4DSTEM is not
  imported): C1 (our sign convention), A1, A1 angle, rotation (py4DSTEM folds it into -90..90 deg: the sign of C1
  rests on that), transpose.
- SSB: truth correlation of qgpu's reconstruction with py4DSTEM's Gamma/|Gamma| weighting (`--weighting phase`,
  ssb_math.hpp) beside ours (`auto`), both at the aberrations our fit found.
Usage: science_truth_peer.py WORKDIR FILE.h5 FRAMES.npy KV C1 GEOMETRY DOSE (run by science_truth.sh)."""
import json
import math
import sys

import h5py
import numpy as np

w, h5, npy, kv, c1, geo, dose = sys.argv[1:]
truth = h5py.File(h5, "r")["entry/truth/phase"][...].astype(np.float64)
frames = np.load(npy).astype(np.float64)
rows, cols = truth.shape
frames = frames.reshape(rows, cols, frames.shape[-2], frames.shape[-1])
r_idx, c_idx = np.arange(frames.shape[2]), np.arange(frames.shape[3])
total = frames.sum(axis=(2, 3))
com_r = (frames.sum(axis=3) * r_idx).sum(axis=2) / total
com_c = (frames.sum(axis=2) * c_idx).sum(axis=2) / total
com_r -= com_r.mean()
com_c -= com_c.mean()


def py4dstem_curl(a_deg, transpose):
    x, y = (com_c, com_r) if transpose else (com_r, com_c)  # com_x = rows; transposed: the components swapped
    t = math.radians(a_deg)
    mx = math.cos(t) * x - math.sin(t) * y
    my = math.sin(t) * x + math.cos(t) * y
    gxy = mx[:, 2:] - mx[:, :-2]
    gyx = my[2:, :] - my[:-2, :]
    return np.mean(np.abs(gyx[:, 1:-1] - gxy[1:-1, :]))


best = min((py4dstem_curl(a, t), a, t) for t in (False, True) for a in range(-89, 90))
_, p4_angle, p4_t = best
true_t = geo == "T17"
p4_err = abs(((p4_angle - 17) + 90) % 180 - 90)


def dft_upsample(corr_spec, up, centre):
    """py4DSTEM's dftUpsample: the upsampled cross correlation on a (1.5 px * up)^2 patch around centre (matrix DFT)."""
    nr, nc = corr_spec.shape
    n = int(np.ceil(1.5 * up))
    col = np.exp((-2j * np.pi / (nc * up)) * np.outer(np.fft.ifftshift(np.arange(nc)) - np.floor(nc / 2), np.arange(n) - centre[1]))
    row = np.exp((-2j * np.pi / (nr * up)) * np.outer(np.arange(n) - centre[0], np.fft.ifftshift(np.arange(nr)) - np.floor(nr / 2)))
    return np.real(row @ corr_spec @ col)


def align_fourier(g_ref, g, up=8):
    """py4DSTEM's align_images_fourier: argmax of the cross correlation, parabolic sub-pixel, then the upsampled DFT
    (upsample factor 8); returns the shift that moves image g onto the reference."""
    g12 = g_ref * np.conj(g)
    cc = np.real(np.fft.ifft2(g12))
    m, n = cc.shape
    x, y = np.unravel_index(np.argmax(cc), cc.shape)
    def vertex(a, b, c):
        d = 4 * b - 2 * a - 2 * c
        return (c - a) / d if d != 0 else 0.0
    x0 = x + vertex(cc[(x - 1) % m, y], cc[x, y], cc[(x + 1) % m, y])
    y0 = y + vertex(cc[x, (y - 1) % n], cc[x, y], cc[x, (y + 1) % n])
    x0 = (x0 + m / 2) % m - m / 2
    y0 = (y0 + n / 2) % n - n / 2
    xy = np.round(np.array([x0, y0]) * up) / up
    shift0 = np.fix(np.ceil(up * 1.5) / 2)
    patch = np.conj(dft_upsample(np.conj(g12), up, shift0 - up * xy))
    px, py = np.unravel_index(np.argmax(patch), patch.shape)
    dx = vertex(patch[px - 1, py], patch[px, py], patch[px + 1, py]) if 0 < px < patch.shape[0] - 1 else 0.0
    dy = vertex(patch[px, py - 1], patch[px, py], patch[px, py + 1]) if 0 < py < patch.shape[1] - 1 else 0.0
    px, py = px + dx, py + dy
    return xy + (np.array([px, py]) - shift0) / up


def py4dstem_parallax(frames, mrad_per_px, step, lam, edge_blend=16, threshold=0.8, bins=(8, 4, 2, 1, 1)):
    """A numpy port of py4DSTEM's Parallax (preprocess, reconstruct, aberration_fit), written from its method:
    BF pixels = mean pattern >= 0.8 of its maximum; each BF image divided by its mean, blended to the mean over 16
    px at the scan edges (sin^2) and padded with the mean; alignment at bins 8, 4, 2, 1, 1 (py4DSTEM's halving bins from half the BF diameter and
    2 iterations at bin 1), each bin's groups cross-correlated with the running-average reference (upsample 8), the
    shifts regularised to an affine function of the tilt after every bin and the reference re-made from the shifted
    images; then the least squares shifts (A) = M tilt (rad), no offset, and the polar decomposition of M: C1 and A1
    from its symmetric part, the rotation from its unitary part folded into -90..90 deg (py4DSTEM's rule, with it
    the sign of C1); a transposed detector (det M < 0) is taken out first, as py4DSTEM's transpose flag does.
    Returns C1 in our convention (the shift is -C1 * tilt), A1, A1 angle (deg), rotation (deg) and transpose."""
    rows, cols = frames.shape[:2]
    dp = frames.mean(axis=(0, 1))
    mask = dp >= threshold * dp.max()
    yy, xx = np.nonzero(mask)
    tot = dp.sum()
    cy = (dp.sum(axis=1) * np.arange(dp.shape[0])).sum() / tot
    cx = (dp.sum(axis=0) * np.arange(dp.shape[1])).sum() / tot
    tilt = np.stack([yy - cy, xx - cx], axis=1) * mrad_per_px * 1e-3  # rad, (row, col)
    stack = frames[:, :, yy, xx].transpose(2, 0, 1).astype(np.float64)
    stack /= stack.mean(axis=(1, 2))[:, None, None]
    def ramp1(n):
        d = np.minimum(np.arange(n) + 0.5, n - np.arange(n) - 0.5)
        return np.sin(np.clip(np.pi / (2 * edge_blend) * d, 0, np.pi / 2)) ** 2
    win = ramp1(rows)[:, None] * ramp1(cols)[None, :]
    pad = edge_blend // 2
    pr, pc = rows + 2 * pad, cols + 2 * pad
    padded = np.ones((len(yy), pr, pc))
    padded[:, pad:pad + rows, pad:pad + cols] = (1 - win) + win * stack
    spec = np.fft.fft2(padded)
    qr = np.fft.fftfreq(pr)[:, None]
    qc = np.fft.fftfreq(pc)[None, :]
    op = lambda s: np.exp(-2j * np.pi * (qr * s[0] + qc * s[1]))  # moves an image by +s
    shifts = np.zeros((len(yy), 2))
    def recon():  # the reference: mean of the shifted (blended, padded) images
        return sum(spec[i] * op(shifts[i]) for i in range(len(yy))) / len(yy)
    basis = np.c_[np.ones(len(yy)), tilt]
    g_ref = recon()
    for b in bins:
        keys = np.stack([(yy - yy.min()) // b, (xx - xx.min()) // b], axis=1)
        groups = {}
        for i, k in enumerate(map(tuple, keys)):
            groups.setdefault(k, []).append(i)
        order = sorted(groups.values(), key=lambda g: np.hypot(*tilt[g].mean(axis=0)))
        for a, g in enumerate(order):
            gs = sum(spec[i] * op(shifts[i]) for i in g) / len(g)
            s = align_fourier(g_ref, gs)
            shifts[g] += s
            g_ref = g_ref * (a + 1) / (a + 2) + gs * op(s) / (a + 2)  # running average
        shifts = basis @ np.linalg.lstsq(basis, shifts, rcond=None)[0]  # affine regularisation
        g_ref = recon()
    m = np.linalg.lstsq(tilt, shifts * step, rcond=None)[0].T  # correction shifts (A) = m tilt
    transpose = np.linalg.det(m) < 0
    if transpose:
        m = m[:, ::-1]
    u, sv, vt = np.linalg.svd(m)
    rot, sym = u @ vt, vt.T @ np.diag(sv) @ vt  # polar: m = rot sym
    ang = math.atan2(rot[1, 0], rot[0, 0])
    if abs((ang + math.pi) % (2 * math.pi) - math.pi) > math.pi / 2:  # py4DSTEM: rotation folded into -90..90
        ang = (ang % (2 * math.pi)) - math.pi
        sym = -sym
    # correction = -displacement = +S R tilt (ours, m = rot sym with sym = R^T S R): S = rot sym rot^T
    sym = rot @ sym @ rot.T
    c1 = 0.5 * (sym[0, 0] + sym[1, 1])
    ac, as_ = 0.5 * (sym[1, 1] - sym[0, 0]), sym[0, 1]
    return c1, math.hypot(ac, as_), math.degrees(0.5 * math.atan2(as_, ac)), math.degrees(ang), transpose


def corr(path):
    a = np.load(path).astype(np.float64).ravel()
    b = truth.ravel()
    return float(np.corrcoef(a, b)[0, 1])


cal = h5py.File(h5, "r")["entry/calibration"].attrs
pc1, pa1, pa1ang, prot, pt = py4dstem_parallax(frames, float(cal["detector_mrad_per_pixel"]),
                                               float(cal["scan_step_angstrom"]), float(cal["wavelength_angstrom"]))
prot_err = abs(((prot - 17) + 90) % 180 - 90)
c1_true = float(c1)
pc1_err = f"{100 * (pc1 / c1_true - 1):+.0f} %" if c1_true else "truth 0"
p = json.load(open(f"{w}/px/parallax_fit.json"))["fit"]
s1 = json.load(open(f"{w}/s1/ssb_fit.json"))
def rotation_sigma(r):
    v = r.get("angle_sigma_deg")
    return f" +- {v:.2f}" if isinstance(v, (int, float)) and v == v else ""


r = json.load(open(f"{w}/im/rotation.json"))
r = r.get("provenance", r).get("parameters", r)
print(f"| {kv} | {c1} | {geo} | {float(dose):g} | {p['C1_angstrom']:.1f} / {p['A1_angstrom']:.1f} / "
      f"{math.degrees(p['A1_angle_rad']):.1f} / {p['rotation_deg']:.2f}, {'T' if p['transpose'] else '-'} "
      f"({'yes' if p['determined'] else 'no'}) | {s1['C1']:.1f} / {s1['A1']:.1f} / {math.degrees(s1['A1_angle']):.1f} | "
      f"{corr(f'{w}/s1/ssb_phase.npy'):.3f} / {corr(f'{w}/sp/ssb_phase.npy'):.3f} | "
      f"{r['angle_deg']:.2f}{rotation_sigma(r)}, {'T' if r['transpose'] else '-'} ({r['decided_by']}, "
      f"{r['confidence']:.2f}{', determined' if r.get('determined') else ''}) | "
      f"{p4_angle:.0f}, {'T' if p4_t else '-'} (off by {p4_err:.0f} mod 180{'' if p4_t == true_t else ', wrong transpose'}) | "
      f"{pc1:.1f} ({pc1_err}) / {pa1:.1f} / {pa1ang:.1f} / {prot:.2f}, {'T' if pt else '-'}"
      f"{'' if pt == true_t else ' (wrong transpose)'} |")
