// Shareable state in the URL hash, and the `quantem.gpu` code reproducing the image shown.
import { DETECTOR_KINDS, Detector, DetectorKind, calibrationOf } from './api';
import { pythonForDetector } from './detector_masks';
import { COLORMAPS, ColormapName, Look, SCALES, Scale } from './render';
import { PRODUCTS, ProductId, ViewerState } from './state';

export interface UrlState {
  ds?: string;
  product?: ProductId;
  det?: Detector;
  look?: Look;
  pos?: [number, number];
  defocus?: number;
  fft?: boolean;
  scanBin?: number;  // scanbin=N: the display scan bin asked for (checked against the scan when the dataset opens)
}

const num = (s: string | undefined) => (s !== undefined && s !== '' && Number.isFinite(Number(s)) ? Number(s) : undefined);

export function toHash(s: ViewerState): string {
  const q = new URLSearchParams();
  if (s.dataset) q.set('ds', s.dataset.id);
  q.set('product', s.product);
  const d = s.detector;
  if (d) q.set('det', [d.kind, d.cr, d.cc, d.r, d.inner, d.outer, d.h, d.w].join(','));
  const l = s.look;
  q.set('look', [l.colormap, l.scale, l.plo, l.phi, l.gamma].join(','));
  if (s.frame.row >= 0) q.set('pos', `${s.frame.row},${s.frame.col}`);
  if (s.product === 'ssb') q.set('defocus', String(s.defocus));
  if (s.fft) q.set('fft', '1');
  if (s.scanBinOverride !== null) q.set('scanbin', String(s.scanBinOverride));
  return '#' + q.toString();
}

// Whatever parses is taken; the rest is left to the defaults (a hand-edited URL never breaks the page).
export function fromHash(hash: string): UrlState {
  const q = new URLSearchParams(hash.replace(/^#/, ''));
  const out: UrlState = {};
  const ds = q.get('ds');
  if (ds) out.ds = ds;
  const p = q.get('product');
  if (PRODUCTS.some((x) => x.id === p)) out.product = p as ProductId;
  const det = q.get('det')?.split(',');
  if (det && DETECTOR_KINDS.includes(det[0] as DetectorKind)) {
    const v = det.slice(1).map((x) => num(x));
    if (v.length === 7 && v.every((x) => x !== undefined))
      out.det = { kind: det[0] as DetectorKind, cr: v[0]!, cc: v[1]!, r: v[2]!, inner: v[3]!, outer: v[4]!, h: v[5]!, w: v[6]! };
  }
  const look = q.get('look')?.split(',');
  if (look && look.length === 5 && COLORMAPS.includes(look[0] as ColormapName) && SCALES.includes(look[1] as Scale)) {
    const [plo, phi, gamma] = look.slice(2).map((x) => num(x));
    if (plo !== undefined && phi !== undefined && gamma !== undefined && plo >= 0 && plo < phi && phi <= 100 && gamma > 0)
      out.look = { colormap: look[0] as ColormapName, scale: look[1] as Scale, plo, phi, gamma };
  }
  const pos = q.get('pos')?.split(',').map((x) => num(x));
  if (pos && pos.length === 2 && pos.every((x) => x !== undefined && Number.isInteger(x) && x >= 0)) out.pos = [pos[0]!, pos[1]!];
  const df = num(q.get('defocus') ?? undefined);
  if (df !== undefined) out.defocus = df;
  if (q.get('fft') === '1') out.fft = true;
  const sb = q.get('scanbin');
  if (sb !== null) out.scanBin = Number(sb);  // NaN too: the viewer says why it is not taken
  return out;
}

export function pythonCode(s: ViewerState): string {
  const ds = s.dataset;
  if (!ds) return '';
  const lines = ['import numpy as np', 'import quantem.gpu as qgpu', ''];
  if (ds.representation === 'product cache') {
    // Served from a product cache: the same cached products, read without the raw data.
    lines.push(`c = qgpu.cache.open(${JSON.stringify(ds.file)})`);
    const name = { virtual: s.cachedProduct, com: 'com_row', dpc: 'field_row', idpc: 'idpc', ssb: '' }[s.product];
    lines.push(name ? `img = c[${JSON.stringify(name)}]` : '# not in the cache: load the raw data');
  } else {
    lines.push(`ds = qgpu.io.load(${JSON.stringify(ds.file)}, backend=${JSON.stringify(ds.backend)})`);
    lines.push(...productLines(s));
    // a large scan is shown binned (scan_bin.ts): virtual images as exact b x b block sums, the CoM of each block
    const b = s.scanBin;
    if (b > 1 && s.product === 'virtual' && s.virtualSource !== 'browser' && s.detector?.kind !== 'quadrants')
      lines.push(`img = np.asarray(img).reshape(${ds.shape[0] / b}, ${b}, ${ds.shape[1] / b}, ${b}).sum(axis=(1, 3))  # the viewer's ${b}×${b} scan bin`);
    else if (b > 1 && (s.product === 'com' || (s.product === 'virtual' && s.virtualSource !== 'browser')))
      lines.push(`# the viewer shows this binned ${b}×${b} (scan_bin=${b} of the service: the same computed on b x b blocks of positions)`);
  }
  const l = s.look;
  lines.push(`rgba = qgpu.display.render(np.asarray(img, np.float32), colormap=${JSON.stringify(l.colormap)}, ` +
    `scale=${JSON.stringify(l.scale)}, percentiles=(${l.plo}, ${l.phi}))` + (l.gamma !== 1 ? `  # the viewer also applies gamma ${l.gamma}` : ''));
  return lines.join('\n');
}

function productLines(s: ViewerState): string[] {
  const ds = s.dataset!;
  const lines: string[] = [];
  switch (s.product) {
    case 'virtual':
      lines.push(...pythonForDetector(s.detector!));
      break;
    case 'com':
      lines.push('com_row, com_col = qgpu.dpc.center_of_mass(ds)', 'img = com_row');
      break;
    case 'dpc':
    case 'idpc':
      lines.push('dpc_row, dpc_col = qgpu.dpc.centered_dpc(ds)', 'rot = qgpu.dpc.calibrate_rotation(dpc_row, dpc_col)',
        "field_row, field_col = qgpu.dpc.rotate_field(dpc_row, dpc_col, rot['angle_deg'], rot['transpose'])");
      lines.push(s.product === 'dpc' ? 'img = field_row' : 'img = qgpu.dpc.idpc(field_row, field_col)');
      break;
    case 'ssb': {
      const cal = calibrationOf(ds);
      const nominal = cal.defocus_angstrom ?? 0;
      const df = s.defocus !== nominal ? `, defocus=${s.defocus}` : '';
      lines.push(s.ssbBin === 1 ? `img = qgpu.ssb.reconstruct(ds${df})` : `img = qgpu.ssb.preview(ds, detector_bin=${s.ssbBin}${df})`);
      break;
    }
  }
  return lines;
}
