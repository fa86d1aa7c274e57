// Client-side display of float values (the viewer renders what it shows from the service's raw values, so that
// hover readout, histogram, contrast, gamma, colormap, scale and .npy export all work on the same numbers).
// With the service's defaults (its colormap, linear, 0..100 %, gamma 1) the picture is display::render's, pixel for pixel.
import { colorIndex } from '../../../display/webgpu/colormap';
import { COLORMAP_RGB } from '../../../display/webgpu/colormap_tables';

export type Scale = 'linear' | 'log' | 'signed_log';
export const SCALES: Scale[] = ['linear', 'log', 'signed_log'];
export const COLORMAPS = ['viridis', 'inferno', 'magma', 'plasma', 'gray'] as const;
export type ColormapName = (typeof COLORMAPS)[number];

export interface Look {
  colormap: ColormapName;
  scale: Scale;
  plo: number;  // contrast limits as percentiles of the scaled finite values
  phi: number;
  gamma: number;  // applied to the normalised value (1: none)
}

// The first look; the server viewer replaces the colormap with the service's default (GET /api/datasets defaults).
export const DEFAULT_LOOK: Look = { colormap: 'viridis', scale: 'linear', plo: 0, phi: 100, gamma: 1 };
export const isColormap = (name: unknown): name is ColormapName => COLORMAPS.includes(name as ColormapName);

// The colour tables of display::render (one copy, shared with the browser-compute display).
export function tableOf(name: ColormapName): readonly number[] {
  return COLORMAP_RGB[name] ?? COLORMAP_RGB.viridis;
}

// display/scale.hpp: linear v; log log(1 + max(v, 0)); signed_log sign(v) log(1 + |v|).
export function scaleValue(v: number, s: Scale): number {
  if (s === 'log') return Math.log1p(Math.max(v, 0));
  if (s === 'signed_log') return Math.sign(v) * Math.log1p(Math.abs(v));
  return v;
}

// Percentile of sorted values with linear interpolation (numpy's default).
function percentile(sorted: Float64Array, p: number): number {
  if (!sorted.length) return NaN;
  const x = (p / 100) * (sorted.length - 1);
  const i = Math.floor(x), f = x - i;
  return i + 1 < sorted.length ? sorted[i] * (1 - f) + sorted[i + 1] * f : sorted[i];
}

export interface Rendered {
  rgba: Uint8ClampedArray;
  lo: number;  // contrast limits in scaled units
  hi: number;
  min: number;  // of the scaled finite values
  max: number;
  histogram: Uint32Array;  // 64 bins over [min, max] of the scaled values
}

export function render(values: ArrayLike<number>, look: Look): Rendered {
  const n = values.length;
  const scaled = new Float64Array(n);
  const finite: number[] = [];
  let min = Infinity, max = -Infinity;
  for (let i = 0; i < n; ++i) {
    const s = scaleValue(values[i], look.scale);
    scaled[i] = s;
    if (Number.isFinite(s)) {
      finite.push(s);
      if (s < min) min = s;
      if (s > max) max = s;
    }
  }
  let lo = min, hi = max;
  if (look.plo > 0 || look.phi < 100) {
    const sorted = Float64Array.from(finite).sort();
    lo = percentile(sorted, look.plo);
    hi = percentile(sorted, look.phi);
  }
  const table = tableOf(look.colormap);
  const out = new Uint8ClampedArray(4 * n);
  for (let i = 0; i < n; ++i) {
    const s = scaled[i];
    if (!Number.isFinite(s)) continue;  // transparent, as display::render
    let k: number;
    if (look.gamma === 1) k = colorIndex(s, lo, hi);
    else {
      const t = hi > lo ? Math.min(Math.max((s - lo) / (hi - lo), 0), 1) : 0;
      k = colorIndex(Math.pow(t, look.gamma), 0, 1);
    }
    out[4 * i] = table[3 * k];
    out[4 * i + 1] = table[3 * k + 1];
    out[4 * i + 2] = table[3 * k + 2];
    out[4 * i + 3] = 255;
  }
  const histogram = new Uint32Array(64);
  if (max > min) for (const s of finite) histogram[Math.min(63, Math.floor(((s - min) / (max - min)) * 64))]++;
  else if (finite.length) histogram[0] = finite.length;
  return { rgba: out, lo, hi, min, max, histogram };
}

// The DPC colour wheel: hue = direction of (row, col), value = magnitude / the 99th percentile magnitude.
export function colourWheel(row: ArrayLike<number>, col: ArrayLike<number>): { rgba: Uint8ClampedArray; scale: number } {
  const n = row.length;
  const mags = new Float64Array(n);
  for (let i = 0; i < n; ++i) mags[i] = Math.hypot(row[i], col[i]);
  const sorted = Float64Array.from(mags.filter(Number.isFinite)).sort();
  const scale = percentile(sorted, 99) || 1;
  const out = new Uint8ClampedArray(4 * n);
  for (let i = 0; i < n; ++i) {
    const [r, g, b] = hsv(Math.atan2(row[i], col[i]) / (2 * Math.PI) + 0.5, 1, Math.min(mags[i] / scale, 1));
    out.set([r, g, b, 255], 4 * i);
  }
  return { rgba: out, scale };
}

export function hsv(h: number, s: number, v: number): [number, number, number] {
  const f = (k: number) => {
    const x = (k + h * 6) % 6;
    return Math.round(255 * (v - v * s * Math.max(0, Math.min(x, 4 - x, 1))));
  };
  return [f(5), f(3), f(1)];
}

// |FFT|, centred, log(1 + |F|): radix-2 where a size is a power of two, a direct DFT otherwise.
export function fftLogMagnitude(values: ArrayLike<number>, rows: number, cols: number): Float32Array {
  const re = Float64Array.from(values, (v) => (Number.isFinite(v) ? v : 0));
  const im = new Float64Array(rows * cols);
  const line = (n: number, stride: number, start: number) => {
    const r = new Float64Array(n), i = new Float64Array(n);
    for (let k = 0; k < n; ++k) {
      r[k] = re[start + k * stride];
      i[k] = im[start + k * stride];
    }
    const [fr, fi] = fft1d(r, i);
    for (let k = 0; k < n; ++k) {
      re[start + k * stride] = fr[k];
      im[start + k * stride] = fi[k];
    }
  };
  for (let r = 0; r < rows; ++r) line(cols, 1, r * cols);
  for (let c = 0; c < cols; ++c) line(rows, cols, c);
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; ++r)
    for (let c = 0; c < cols; ++c) {
      const sr = (r + Math.floor(rows / 2)) % rows, sc = (c + Math.floor(cols / 2)) % cols;
      out[sr * cols + sc] = Math.log1p(Math.hypot(re[r * cols + c], im[r * cols + c]));
    }
  return out;
}

function fft1d(re: Float64Array, im: Float64Array): [Float64Array, Float64Array] {
  const n = re.length;
  if (n <= 1) return [re, im];
  if ((n & (n - 1)) !== 0) {
    const orr = new Float64Array(n), oi = new Float64Array(n);
    for (let k = 0; k < n; ++k)
      for (let t = 0; t < n; ++t) {
        const a = (-2 * Math.PI * ((k * t) % n)) / n, c = Math.cos(a), s = Math.sin(a);
        orr[k] += re[t] * c - im[t] * s;
        oi[k] += re[t] * s + im[t] * c;
      }
    return [orr, oi];
  }
  const er = new Float64Array(n / 2), ei = new Float64Array(n / 2), odr = new Float64Array(n / 2), odi = new Float64Array(n / 2);
  for (let k = 0; k < n / 2; ++k) {
    er[k] = re[2 * k];
    ei[k] = im[2 * k];
    odr[k] = re[2 * k + 1];
    odi[k] = im[2 * k + 1];
  }
  const [Er, Ei] = fft1d(er, ei), [Or, Oi] = fft1d(odr, odi);
  const orr = new Float64Array(n), oi = new Float64Array(n);
  for (let k = 0; k < n / 2; ++k) {
    const a = (-2 * Math.PI * k) / n, c = Math.cos(a), s = Math.sin(a);
    const tr = Or[k] * c - Oi[k] * s, ti = Or[k] * s + Oi[k] * c;
    orr[k] = Er[k] + tr;
    oi[k] = Ei[k] + ti;
    orr[k + n / 2] = Er[k] - tr;
    oi[k + n / 2] = Ei[k] - ti;
  }
  return [orr, oi];
}

// A NumPy .npy (format 1.0) file of float32 values (or float64 when asked) in C order.
export function npyBytes(values: ArrayLike<number>, shape: number[], dtype: '<f4' | '<f8' = '<f4'): Uint8Array {
  let header = `{'descr': '${dtype}', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad === 64 ? 0 : pad) + '\n';
  const data = dtype === '<f4' ? Float32Array.from(values) : Float64Array.from(values);
  const out = new Uint8Array(10 + header.length + data.byteLength);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, header.length & 0xff, header.length >> 8]);
  for (let i = 0; i < header.length; ++i) out[10 + i] = header.charCodeAt(i);
  out.set(new Uint8Array(data.buffer), 10 + header.length);
  return out;
}
