// SSB ptychography on WebGPU (ssb.wgsl) at given aberrations on a binned detector: the K set (plan) is built on
// the host exactly as ssb::make_plan (BF-disk pixels grouped into bin x bin blocks, group centroid K rotated into
// the scan frame), then gather, per-group scan DFTs, the trotter sums and the inverse DFT run on the GPU in
// float32; phase = arg(1 + IFFT(Psi)) on the host. Parity with the CPU reference (FFTW complex128, double):
// max |phase difference| <= 2e-4 rad (upstream's SSB tolerance); tests/remote/e2e/local.e2e.mjs measures it.
import shaderSource from './ssb.wgsl';
import { Dft2dGpu } from '../../core/webgpu/dft';
import { compileShader } from '../../core/webgpu/shader';
import { recordDispatch } from '../../core/webgpu/dispatch';

export const SSB_PHASE_TOLERANCE_RAD = 2e-4;
const APERTURE_SLACK = 1e-5, WEIGHT_FLOOR = 0.1;

export interface Aberrations {
  C1: number; A1?: number; A1_angle?: number; B2?: number; B2_angle?: number; A2?: number; A2_angle?: number; C3?: number;
}

export interface SsbParams {
  energyKev: number;
  semiangleMrad: number;
  scanStepAngstrom: number;
  detectorMradPerPixel: number;
  diskCenter: [number, number];   // detector (row, col) of the BF disk centre
  rotationDeg: number;            // as qgpu ssb --rotation (dpc::rotate_field's sense, docs/conventions.md)
  transpose?: boolean;            // as qgpu ssb --transpose: detector row/col swapped before the rotation
  detectorBin: number;            // the weighting is qgpu ssb's "amplitude" (least squares)
  aberrations: Aberrations;
}

export function wavelengthAngstrom(energyKev: number): number {
  const h = 6.62607015e-34, m0 = 9.1093837015e-31, e = 1.602176634e-19, c = 299792458.0;
  const v = energyKev * 1e3;
  return (h / Math.sqrt(2 * m0 * e * v * (1 + (e * v) / (2 * m0 * c * c)))) * 1e10;
}

export interface Plan {
  scanRows: number; scanCols: number; step: number; lambda: number; kmax2: number;
  offsets: Uint32Array; pixels: Uint32Array; ky: number[]; kx: number[]; weight: number[];
}

// ssb::make_plan with the disk centre and pixel size given.
export function makePlan(scanRows: number, scanCols: number, detRows: number, detCols: number, p: SsbParams): Plan {
  const lambda = wavelengthAngstrom(p.energyKev);
  const kmax = (p.semiangleMrad * 1e-3) / lambda;
  const kmax2 = kmax * kmax * (1 + APERTURE_SLACK);
  const dk = (p.detectorMradPerPixel * 1e-3) / lambda;
  const [cr, cc] = p.diskCenter;
  const bin = p.detectorBin;
  if (!(bin >= 1) || !Number.isInteger(bin)) throw new Error('ssb: detector bin must be an integer >= 1');
  const radius = kmax / dk;
  if (cr - radius < -0.5 || cc - radius < -0.5 || cr + radius > detRows - 0.5 || cc + radius > detCols - 0.5)
    throw new Error(`ssb: BF disk (centre ${cr}, ${cc}, radius ${radius} px) does not fit on the ${detRows}x${detCols} detector`);
  const t = (p.rotationDeg * Math.PI) / 180, ct = Math.cos(t), st = Math.sin(t);
  const blocks = new Map<number, number[]>();  // key (r / bin) * big + c / bin, in std::map order
  const bcols = Math.ceil(detCols / bin);
  for (let r = 0; r < detRows; ++r)
    for (let c = 0; c < detCols; ++c) {
      const ky = (r - cr) * dk, kx = (c - cc) * dk;
      if (ky * ky + kx * kx <= kmax2) {
        const key = Math.floor(r / bin) * bcols + Math.floor(c / bin);
        if (!blocks.has(key)) blocks.set(key, []);
        blocks.get(key)!.push(r * detCols + c);
      }
    }
  if (!blocks.size) throw new Error('ssb: no detector pixel inside the BF disk');
  const offsets = [0], pixels: number[] = [], ky: number[] = [], kx: number[] = [], weight: number[] = [];
  for (const key of [...blocks.keys()].sort((a, b) => a - b)) {
    const pix = blocks.get(key)!;
    let sy = 0, sx = 0;
    for (const q of pix) {
      const y = (Math.floor(q / detCols) - cr) * dk, x = ((q % detCols) - cc) * dk;
      const dy = p.transpose ? x : y, dx = p.transpose ? y : x;  // detector -> scan frame, as src/ssb/ssb.cpp
      sy += ct * dy - st * dx;
      sx += st * dy + ct * dx;
      pixels.push(q);
    }
    ky.push(sy / pix.length);
    kx.push(sx / pix.length);
    weight.push(pix.length);
    offsets.push(pixels.length);
  }
  return { scanRows, scanCols, step: p.scanStepAngstrom, lambda, kmax2, offsets: new Uint32Array(offsets), pixels: new Uint32Array(pixels), ky, kx, weight };
}

function chiCoeffs(ab: Aberrations, lambda: number): number[] {
  const a1a = ab.A1_angle ?? 0, b2a = ab.B2_angle ?? 0, a2a = ab.A2_angle ?? 0;
  return [(2 * Math.PI) / lambda, lambda, ab.C1, ab.C3 ?? 0, ab.A1 ?? 0, Math.cos(2 * a1a), Math.sin(2 * a1a), ab.B2 ?? 0,
    Math.cos(b2a), Math.sin(b2a), ab.A2 ?? 0, Math.cos(3 * a2a), Math.sin(3 * a2a)];
}

// ssb_math.hpp chi in double (for chi(K) of every group).
function chiDouble(ky: number, kx: number, c: number[]): number {
  const [tpl, l, c1, c3, a1, a1c, a1s, b2, b2c, b2s, a2, a2c, a2s] = c;
  const w2 = l * l * (kx * kx + ky * ky);
  const re2 = l * l * ((kx * kx - ky * ky) * a1c + 2 * kx * ky * a1s);
  const re1 = l * (kx * b2c + ky * b2s);
  const re3 = l * l * l * ((kx * kx * kx - 3 * kx * ky * ky) * a2c + (3 * kx * kx * ky - ky * ky * ky) * a2s);
  return tpl * ((c1 * w2) / 2 + (a1 * re2) / 2 + (b2 * w2 * re1) / 3 + (a2 * re3) / 3 + (c3 * w2 * w2) / 4);
}

const signedFrequency = (i: number, n: number) => (i <= Math.floor((n - 1) / 2) ? i : i - n);

export class SsbGpu {
  private constructor(private device: GPUDevice, private pipes: Record<'gather' | 'ssb_sums', GPUComputePipeline>, private dft: Dft2dGpu) {}

  static async create(device: GPUDevice): Promise<SsbGpu> {
    const module = await compileShader(device, 'ssb.wgsl', shaderSource);
    const make = (entryPoint: string) => device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint } });
    return new SsbGpu(device, { gather: await make('gather'), ssb_sums: await make('ssb_sums') }, await Dft2dGpu.create(device));
  }

  // Phase (scanRows x scanCols) from frames on the GPU (u32 per pixel, frame-major).
  async phase(frames: GPUBuffer, scanRows: number, scanCols: number, detRows: number, detCols: number, p: SsbParams): Promise<Float32Array> {
    const plan = makePlan(scanRows, scanCols, detRows, detCols, p);
    const dev = this.device;
    const n = scanRows * scanCols, groups = plan.ky.length, fp = detRows * detCols;
    const S = GPUBufferUsage.STORAGE, D = GPUBufferUsage.COPY_DST, SRC = GPUBufferUsage.COPY_SRC;
    const temps: GPUBuffer[] = [];
    const buffer = (data: ArrayBufferView | ArrayBuffer | null, size: number, usage: number) => {
      const b = dev.createBuffer({ size: Math.max(16, size), usage: usage | D });
      if (data) dev.queue.writeBuffer(b, 0, data as BufferSource);
      temps.push(b);
      return b;
    };
    const run = (enc: GPUCommandEncoder, pipe: GPUComputePipeline, params: ArrayBuffer, bufs: GPUBuffer[], count: number) => {
      const u = buffer(params, params.byteLength, GPUBufferUsage.UNIFORM);
      const wg = Math.ceil(count / 64), gx = Math.min(wg, 65535);
      recordDispatch(dev, enc, pipe, [u, ...bufs], gx, Math.ceil(wg / gx));
    };
    const read = async (enc: GPUCommandEncoder, buf: GPUBuffer, bytes: number) => {
      const rb = dev.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | D });
      enc.copyBufferToBuffer(buf, 0, rb, 0, bytes);
      dev.queue.submit([enc.finish()]);
      await rb.mapAsync(GPUMapMode.READ);
      const out = new Float32Array(rb.getMappedRange().slice(0));
      rb.unmap();
      rb.destroy();
      return out;
    };
    // gather
    const g = buffer(null, 8 * groups * n, S | SRC), t = buffer(null, 8 * groups * n, S | SRC);
    let enc = dev.createCommandEncoder();
    const gpar = new Uint32Array([n, fp, groups, 0]);
    run(enc, this.pipes.gather, gpar.buffer, [frames, buffer(plan.offsets, plan.offsets.byteLength, S), buffer(plan.pixels, plan.pixels.byteLength, S), g], n * groups);
    const gathered = await read(enc, g, 8 * groups * n);
    let dc = 0;
    for (let k = 0; k < groups * n; ++k) dc += gathered[2 * k];
    const i0 = dc / (n * plan.pixels.length);
    if (!(i0 > 0)) throw new Error('ssb: the BF disk holds no counts');
    // forward DFT over the scan of every group: rows, then columns
    enc = dev.createCommandEncoder();
    this.dft.encode2d(enc, g, t, scanRows, scanCols, -1, groups);
    // sums
    const c = chiCoeffs(p.aberrations, plan.lambda);
    const kg = new Float32Array(4 * groups);
    for (let k = 0; k < groups; ++k) kg.set([plan.ky[k], plan.kx[k], chiDouble(plan.ky[k], plan.kx[k], c), plan.weight[k]], 4 * k);
    const qaxes = new Float32Array(scanRows + scanCols);
    for (let i = 0; i < scanRows; ++i) qaxes[i] = signedFrequency(i, scanRows) / (scanRows * plan.step);
    for (let j = 0; j < scanCols; ++j) qaxes[scanRows + j] = signedFrequency(j, scanCols) / (scanCols * plan.step);
    const sp = new ArrayBuffer(96);
    const su = new Uint32Array(sp), sf = new Float32Array(sp);
    su.set([scanRows, scanCols, groups, 0]);
    sf.set([plan.kmax2, 4 * plan.kmax2, 1 / (i0 * n), WEIGHT_FLOOR * plan.pixels.length, ...c], 4);
    const psi = buffer(null, 8 * n, S | SRC), psi2 = buffer(null, 8 * n, S | SRC);
    run(enc, this.pipes.ssb_sums, sp, [g, buffer(kg, kg.byteLength, S), buffer(qaxes, qaxes.byteLength, S), psi], n);
    this.dft.encode2d(enc, psi, psi2, scanRows, scanCols, 1);
    const z = await read(enc, psi, 8 * n);
    for (const b of temps) b.destroy();
    this.dft.release();
    const phase = new Float32Array(n);
    for (let s = 0; s < n; ++s) phase[s] = Math.atan2(z[2 * s + 1], 1 + z[2 * s]);
    return phase;
  }
}
