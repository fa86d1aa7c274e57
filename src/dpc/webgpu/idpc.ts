// Integrated DPC on WebGPU (idpc.wgsl) with a fixed rotation: the centred DPC field is rotated on the host as
// dpc::rotate_field (double, rounded to float32), padded as dpc::idpc's default mirror padding (2n per axis,
// the gradient's normal component changing sign in the mirror), transformed on the GPU (direct DFT per axis in
// f32), divided by 2 pi i k^2, transformed back and cropped. Float32 tolerance against the CPU reference (FFTW,
// double): relative L2 difference <= 1e-5, the CUDA backend's tolerance (tests/remote/e2e/local.e2e.mjs measures and reports it).
import shaderSource from './idpc.wgsl';
import { Dft2dGpu } from '../../core/webgpu/dft';
import { compileShader } from '../../core/webgpu/shader';
import { recordDispatch } from '../../core/webgpu/dispatch';

export const IDPC_TOLERANCE_RELATIVE_L2 = 1e-5;

// dpc::rotate_field.
export function rotateField(row: Float32Array, col: Float32Array, angleDeg: number, transpose: boolean): [Float32Array, Float32Array] {
  const fr = transpose ? col : row, fc = transpose ? row : col;
  const a = (angleDeg * Math.PI) / 180, co = Math.cos(a), si = Math.sin(a);
  const outR = new Float32Array(fr.length), outC = new Float32Array(fr.length);
  for (let i = 0; i < fr.length; ++i) {
    outR[i] = co * fr[i] - si * fc[i];
    outC[i] = si * fr[i] + co * fc[i];
  }
  return [outR, outC];
}

// Mirror padding of dpc::idpc: n/2 before, n - n/2 after on each axis.
export function mirrorPad(g: Float32Array, rows: number, cols: number, component: 'row' | 'col'): { data: Float32Array; rows: number; cols: number; r0: number; c0: number } {
  const r0 = Math.floor(rows / 2), c0 = Math.floor(cols / 2);
  const nr = 2 * rows, nc = 2 * cols;
  const src = (q: number, before: number, n: number): [number, number] => {
    const i = q - before;
    if (i >= 0 && i < n) return [i, 1];
    return [i < 0 ? -i - 1 : 2 * n - 1 - i, -1];
  };
  const out = new Float32Array(nr * nc);
  for (let q = 0; q < nr; ++q) {
    const [r, sr] = src(q, r0, rows);
    for (let p = 0; p < nc; ++p) {
      const [c, sc] = src(p, c0, cols);
      out[q * nc + p] = (component === 'row' ? sr : sc) * g[r * cols + c];
    }
  }
  return { data: out, rows: nr, cols: nc, r0, c0 };
}

export class IdpcGpu {
  private constructor(private device: GPUDevice, private dft: Dft2dGpu, private coef: GPUComputePipeline) {}

  static async create(device: GPUDevice): Promise<IdpcGpu> {
    const module = await compileShader(device, 'idpc.wgsl', shaderSource);
    const dft = await Dft2dGpu.create(device);
    const coef = await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'coefficient' } });
    return new IdpcGpu(device, dft, coef);
  }

  // phi from gradients (rows x cols, float32), mirror padding, unit steps.
  async integrate(gradRow: Float32Array, gradCol: Float32Array, rows: number, cols: number): Promise<Float32Array> {
    const pr = mirrorPad(gradRow, rows, cols, 'row'), pc = mirrorPad(gradCol, rows, cols, 'col');
    const nr = pr.rows, nc = pr.cols, n = nr * nc;
    const dev = this.device;
    const S = GPUBufferUsage.STORAGE, D = GPUBufferUsage.COPY_DST;
    const complexOf = (re: Float32Array) => {
      const z = new Float32Array(2 * re.length);
      re.forEach((v, i) => (z[2 * i] = v));
      return z;
    };
    const buffer = (data: Float32Array | Uint32Array | ArrayBuffer | null, size: number, usage: number) => {
      const b = dev.createBuffer({ size: Math.max(16, size), usage: usage | D });
      if (data) dev.queue.writeBuffer(b, 0, data as BufferSource);
      return b;
    };
    const a = buffer(complexOf(pr.data), 8 * n, S | GPUBufferUsage.COPY_SRC);
    const b = buffer(complexOf(pc.data), 8 * n, S | GPUBufferUsage.COPY_SRC);
    const t1 = buffer(null, 8 * n, S | GPUBufferUsage.COPY_SRC);
    const t2 = buffer(null, 8 * n, S | GPUBufferUsage.COPY_SRC);
    const temps: GPUBuffer[] = [a, b, t1, t2];
    const enc = dev.createCommandEncoder();
    const dispatch = (pipeline: GPUComputePipeline, params: ArrayBuffer, bufs: GPUBuffer[], count: number) => {
      const p = buffer(params, params.byteLength, GPUBufferUsage.UNIFORM);
      temps.push(p);
      const groups = Math.ceil(count / 64), gx = Math.min(groups, 65535);
      recordDispatch(dev, enc, pipeline, [p, ...bufs], gx, Math.ceil(groups / gx));
    };
    // forward 2D transforms of both gradients, the coefficient, the inverse transform
    this.dft.encode2d(enc, a, t1, nr, nc, -1);
    this.dft.encode2d(enc, b, t1, nr, nc, -1);
    const cp = new ArrayBuffer(32);
    new Uint32Array(cp, 0, 2).set([nr, nc]);
    new Float32Array(cp, 8, 3).set([1, 1, 1 / n]);
    dispatch(this.coef, cp, [a, b, t2], n);
    this.dft.encode2d(enc, t2, t1, nr, nc, 1);
    const rb = dev.createBuffer({ size: 8 * n, usage: GPUBufferUsage.MAP_READ | D });
    enc.copyBufferToBuffer(t2, 0, rb, 0, 8 * n);
    dev.queue.submit([enc.finish()]);
    await rb.mapAsync(GPUMapMode.READ);
    const z = new Float32Array(rb.getMappedRange().slice(0));
    rb.unmap();
    rb.destroy();
    for (const t of temps) t.destroy();
    this.dft.release();
    const phi = new Float32Array(rows * cols);
    for (let r = 0; r < rows; ++r) for (let c = 0; c < cols; ++c) phi[r * cols + c] = z[2 * ((r + pr.r0) * nc + c + pr.c0)];
    return phi;
  }
}
