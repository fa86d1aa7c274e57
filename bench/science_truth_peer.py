"""Issue 31: one row of the science truth table (bench/science_truth.sh) from qgpu's outputs, beside py4DSTEM-style
results computed here with numpy on the same frames:
- rotation: py4DSTEM's CoM-curl search (phase_base_class._solve_for_center_of_mass_relative_rotation: CoM of every
  frame minus its mean, for rotation_angles_deg = arange(-89, 90) and both transposes the field turned by py4DSTEM's
  matrices, which are ours (docs/conventions.md), curl = mean |d comy/d x - d comx/d y| by central differences; the
  smallest wins). It leaves the 180-degree choice open: its error is taken modulo 180.
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


def corr(path):
    a = np.load(path).astype(np.float64).ravel()
    b = truth.ravel()
    return float(np.corrcoef(a, b)[0, 1])


p = json.load(open(f"{w}/px/parallax_fit.json"))["fit"]
s1 = json.load(open(f"{w}/s1/ssb_fit.json"))
r = json.load(open(f"{w}/im/rotation.json"))
r = r.get("provenance", r).get("parameters", r)
print(f"| {kv} | {c1} | {geo} | {float(dose):g} | {p['C1_angstrom']:.1f} / {p['A1_angstrom']:.1f} / "
      f"{math.degrees(p['A1_angle_rad']):.1f} / {p['rotation_deg']:.2f}, {'T' if p['transpose'] else '-'} "
      f"({'yes' if p['determined'] else 'no'}) | {s1['C1']:.1f} / {s1['A1']:.1f} / {math.degrees(s1['A1_angle']):.1f} | "
      f"{corr(f'{w}/s1/ssb_phase.npy'):.3f} / {corr(f'{w}/sp/ssb_phase.npy'):.3f} | "
      f"{r['angle_deg']:.2f}, {'T' if r['transpose'] else '-'} ({r['decided_by']}, {r['confidence']:.2f}) | "
      f"{p4_angle:.0f}, {'T' if p4_t else '-'} (off by {p4_err:.0f} mod 180{'' if p4_t == true_t else ', wrong transpose'}) |")
