// Display on WebGPU (display.wgsl) and the CPU reference it must equal: display::render and display::histogram
// (src/display: scaling.hpp, range.cpp, cpu/histogram_cpu.cpp) ported to JavaScript doubles, which are IEEE
// doubles without fused multiply-adds like the C++ reference (-ffp-contract=off), so the same bits come out.
// The range (vmin/vmax or percentiles of the scaled finite values) is resolved on the host in double; the GPU
// colours and counts every pixel whose f32 index is certain, and lists the others, which the host recomputes in
// double: RGBA and the 256-bin histogram equal the CPU reference exactly.
import shaderSource from './display.wgsl';
import { COLORMAP_RGB } from './colormap_tables';
import { colorIndex, packedLut } from './colormap';
import { compileShader } from '../../core/webgpu/shader';
import { recordDispatch } from '../../core/webgpu/dispatch';

export type Scale = 'linear' | 'log' | 'signed_log';
export const COLORMAPS = ['viridis', 'magma', 'inferno', 'plasma', 'gray'] as const;

export interface DisplayOptions {
  colormap: string;
  scale: Scale;
  lowerPercentile: number;
  upperPercentile: number;
  vmin?: number;
  vmax?: number;
}

export const DEFAULT_DISPLAY: DisplayOptions = { colormap: 'viridis', scale: 'linear', lowerPercentile: 0, upperPercentile: 100 };

const f64 = new Float64Array(1);
const u64 = new BigUint64Array(f64.buffer);

// display::det_log: log of a positive normal finite double from a fixed polynomial (no libm).
export function detLog(x: number): number {
  f64[0] = x;
  const u = u64[0];
  let e = Number((u >> 52n) & 0x7ffn) - 1023;
  u64[0] = (u & 0x000fffffffffffffn) | 0x3ff0000000000000n;
  let m = f64[0];
  if (m > 1.4142135623730951) {
    m = m * 0.5;
    e = e + 1;
  }
  const f = m - 1.0;
  const s = f / (2.0 + f);
  const s2 = s * s;
  let p = 1.0 / 21.0;
  for (const c of [1 / 19, 1 / 17, 1 / 15, 1 / 13, 1 / 11, 1 / 9, 1 / 7, 1 / 5, 1 / 3, 1]) p = p * s2 + c;
  const logM = 2.0 * s * p;
  const ln2Hi = 6.93147180369123816490e-01, ln2Lo = 1.90821492927058770002e-10;
  return e * ln2Hi + (e * ln2Lo + logM);
}

export function detLog1p(x: number): number {
  const u = 1.0 + x;
  if (u === 1.0) return x;
  return detLog(u) * (x / (u - 1.0));
}

// display::scale_value (float in, float out; -0 -> +0).
export function scaleValue(v: number, scale: Scale): number {
  if (v === 0) return 0;
  if (scale === 'linear') return v;
  if (scale === 'log') return v > 0 ? Math.fround(detLog1p(v)) : 0;
  const a = Math.fround(detLog1p(v > 0 ? v : -v));
  return v > 0 ? a : -a;
}

export function percentileRank(p: number, n: number): number {
  const k = Math.floor((p / 100) * (n - 1) + 0.5);
  return k < n ? k : n - 1;
}

// display::resolve_range over the scaled finite values.
export function resolveRange(values: Float32Array, o: DisplayOptions): { lo: number; hi: number } {
  const scaled: number[] = [];
  for (const v of values) if (Number.isFinite(v)) scaled.push(scaleValue(v, o.scale));
  scaled.sort((a, b) => a - b);
  const n = scaled.length;
  const lo = o.vmin ?? (n ? scaled[percentileRank(o.lowerPercentile, n)] : 0);
  const hi = o.vmax ?? (n ? scaled[percentileRank(o.upperPercentile, n)] : 0);
  if (lo > hi) throw new Error(`display range is empty: lo=${lo} > hi=${hi}`);
  return { lo, hi };
}

export function colormapLut(name: string): Uint32Array<ArrayBuffer> {
  const rgb = COLORMAP_RGB[name];
  if (!rgb) throw new Error(`unknown colormap '${name}' (one of ${COLORMAPS.join(', ')})`);
  return packedLut(rgb);
}

export interface Rendered {
  rgba: Uint8ClampedArray<ArrayBuffer>;
  histogram: Uint32Array;   // 256 bins of colour indices over the finite pixels
  lo: number;
  hi: number;
  flagged: number;          // pixels the GPU left to the host (f32 index not certain)
}

// CPU reference: display::render + display::histogram.
export function renderCpu(values: Float32Array, o: DisplayOptions): Rendered {
  const { lo, hi } = resolveRange(values, o);
  const lut = colormapLut(o.colormap);
  const out = new Uint32Array(values.length);
  const histogram = new Uint32Array(256);
  values.forEach((v, i) => {
    if (!Number.isFinite(v)) return;
    const k = colorIndex(scaleValue(v, o.scale), lo, hi);
    out[i] = lut[k];
    histogram[k]++;
  });
  return { rgba: new Uint8ClampedArray(out.buffer), histogram, lo, hi, flagged: 0 };
}

export class DisplayGpu {
  private constructor(private device: GPUDevice, private pipeline: GPUComputePipeline) {}

  static async create(device: GPUDevice): Promise<DisplayGpu> {
    const module = await compileShader(device, 'display.wgsl', shaderSource);
    const pipeline = await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'display' } });
    return new DisplayGpu(device, pipeline);
  }

  async render(values: Float32Array, o: DisplayOptions): Promise<Rendered> {
    const { lo, hi } = resolveRange(values, o);
    const lut = colormapLut(o.colormap);
    const dev = this.device;
    const n = values.length;
    const groups = Math.ceil(n / 256), groupsX = Math.min(groups, 65535), groupsY = Math.ceil(groups / groupsX);
    const maxFlagged = Math.max(1024, Math.ceil(n / 16));
    const params = new ArrayBuffer(32);
    const pu = new Uint32Array(params), pf = new Float32Array(params);
    pu[0] = n;
    pu[1] = o.scale === 'linear' ? 0 : o.scale === 'log' ? 1 : 2;
    pf[2] = lo;
    pf[3] = hi;
    pu[4] = groupsX;
    pu[5] = maxFlagged;
    const buf = (size: number, usage: number, data?: ArrayBufferView<ArrayBuffer>) => {
      const b = dev.createBuffer({ size: Math.max(16, size), usage: usage | GPUBufferUsage.COPY_DST });
      if (data) dev.queue.writeBuffer(b, 0, data);
      return b;
    };
    const S = GPUBufferUsage.STORAGE;
    const pBuf = buf(32, GPUBufferUsage.UNIFORM, new Uint32Array(params));
    const vBuf = buf(4 * n, S, values as Float32Array<ArrayBuffer>);
    const lBuf = buf(1024, S, lut);
    const rBuf = buf(4 * n, S | GPUBufferUsage.COPY_SRC);
    const hBuf = buf(1024, S | GPUBufferUsage.COPY_SRC, new Uint32Array(256));
    const fBuf = buf(4 * (maxFlagged + 1), S | GPUBufferUsage.COPY_SRC, new Uint32Array(maxFlagged + 1));
    const total = 4 * n + 1024 + 4 * (maxFlagged + 1);
    const rb = dev.createBuffer({ size: Math.max(16, total), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const enc = dev.createCommandEncoder();
    recordDispatch(dev, enc, this.pipeline, [pBuf, vBuf, lBuf, rBuf, hBuf, fBuf], groupsX, groupsY);
    enc.copyBufferToBuffer(rBuf, 0, rb, 0, 4 * n);
    enc.copyBufferToBuffer(hBuf, 0, rb, 4 * n, 1024);
    enc.copyBufferToBuffer(fBuf, 0, rb, 4 * n + 1024, 4 * (maxFlagged + 1));
    dev.queue.submit([enc.finish()]);
    await rb.mapAsync(GPUMapMode.READ);
    const all = rb.getMappedRange().slice(0);
    rb.unmap();
    for (const b of [pBuf, vBuf, lBuf, rBuf, hBuf, fBuf, rb]) b.destroy();
    const rgba32 = new Uint32Array(all, 0, n);
    const histogram = new Uint32Array(all.slice(4 * n, 4 * n + 1024));
    const fl = new Uint32Array(all, 4 * n + 1024, maxFlagged + 1);
    const flagged = fl[0];
    const fix = (i: number) => {
      const k = colorIndex(scaleValue(values[i], o.scale), lo, hi);
      rgba32[i] = lut[k];
      histogram[k]++;
    };
    if (flagged <= maxFlagged) for (let j = 1; j <= flagged; ++j) fix(fl[j]);
    else {
      // More uncertain pixels than listed (a range at f32 resolution): the host colours the whole image.
      const ref = renderCpu(values, o);
      return { ...ref, flagged };
    }
    return { rgba: new Uint8ClampedArray(rgba32.buffer.slice(0, 4 * n)), histogram, lo, hi, flagged };
  }
}
