// Masks of the detectors the service has no GET query for (rectangle, point, the 4 segments of a quadrant
// detector), POSTed to /virtual as uint8 weights, and the `quantem.gpu` code that builds the same mask.
// Geometry in detector pixels, pixel centres at integers, as detector/mask.cpp (ring: inner^2 <= d^2 <= outer^2).
import type { Detector } from './api';

export function rectangleMask(rows: number, cols: number, d: Detector): Uint8Array {
  const m = new Uint8Array(rows * cols);
  for (let r = 0; r < rows; ++r)
    for (let c = 0; c < cols; ++c) m[r * cols + c] = Math.abs(r - d.cr) <= d.h && Math.abs(c - d.cc) <= d.w ? 1 : 0;
  return m;
}

export function pointMask(rows: number, cols: number, d: Detector): Uint8Array {
  const m = new Uint8Array(rows * cols);
  m[Math.round(d.cr) * cols + Math.round(d.cc)] = 1;
  return m;
}

// Segment q of the ring inner..outer: 0 = up-right (row < cr, col >= cc), 1 = up-left, 2 = down-left,
// 3 = down-right (row >= cr, col >= cc). The four partition the ring.
export function quadrantMask(rows: number, cols: number, d: Detector, q: number): Uint8Array {
  const m = new Uint8Array(rows * cols);
  for (let r = 0; r < rows; ++r)
    for (let c = 0; c < cols; ++c) {
      const dr = r - d.cr, dc = c - d.cc, d2 = dr * dr + dc * dc;
      if (d2 < d.inner * d.inner || d2 > d.outer * d.outer) continue;
      const up = dr < 0, right = dc >= 0;
      const seg = up ? (right ? 0 : 1) : right ? 3 : 2;
      m[r * cols + c] = seg === q ? 1 : 0;
    }
  return m;
}

// Segmented DPC from the four segment images: row = (down) - (up), col = (right) - (left), normalised by the sum.
export function segmentedDpc(seg: Float64Array[]): { row: Float32Array; col: Float32Array } {
  const n = seg[0].length;
  const row = new Float32Array(n), col = new Float32Array(n);
  for (let i = 0; i < n; ++i) {
    const [a, b, c, d] = [seg[0][i], seg[1][i], seg[2][i], seg[3][i]];
    const total = a + b + c + d;
    row[i] = total > 0 ? (c + d - a - b) / total : 0;
    col[i] = total > 0 ? (a + d - b - c) / total : 0;
  }
  return { row, col };
}

// Python lines (after `ds = qgpu.io.load(...)`) giving the detector's image as `img`.
export function pythonForDetector(d: Detector): string[] {
  const centre = `center=(${d.cr}, ${d.cc})`;
  const grid = 'rows, cols = ds.shape[2], ds.shape[3]\nr, c = np.mgrid[0:rows, 0:cols]';
  switch (d.kind) {
    case 'disk': return [`img = qgpu.detector.bf(ds, radius=${d.r}, ${centre})`];
    case 'annulus': return [`img = qgpu.detector.adf(ds, inner=${d.inner}, outer=${d.outer}, ${centre})`];
    case 'rectangle':
      return [grid, `mask = (abs(r - ${d.cr}) <= ${d.h}) & (abs(c - ${d.cc}) <= ${d.w})`,
        'img = qgpu.detector.virtual_image(ds, mask.astype(np.uint8))'];
    case 'point':
      return [`mask = np.zeros(ds.shape[2:], np.uint8); mask[${Math.round(d.cr)}, ${Math.round(d.cc)}] = 1`,
        'img = qgpu.detector.virtual_image(ds, mask)'];
    case 'quadrants':
      return [grid, `d2 = (r - ${d.cr}) ** 2 + (c - ${d.cc}) ** 2`,
        `ring = (d2 >= ${d.inner} ** 2) & (d2 <= ${d.outer} ** 2)`,
        `up, right = r < ${d.cr}, c >= ${d.cc}`,
        'seg = [qgpu.detector.virtual_image(ds, (ring & m).astype(np.uint8)).astype(float) for m in',
        '       (up & right, up & ~right, ~up & ~right, ~up & right)]',
        'total = np.maximum(sum(seg), 1)',
        'dpc_row = (seg[2] + seg[3] - seg[0] - seg[1]) / total',
        'dpc_col = (seg[0] + seg[3] - seg[1] - seg[2]) / total',
        'img = dpc_col'];
  }
}
