// Real-space images computed in the browser: a window of frames is fetched once (/window), kept on the GPU,
// and every detector change runs the WGSL virtual detector and colormap on it.
import { ColormapGpu } from '../../../display/webgpu/colormap';
import { FrameBlock, ringMask, VirtualDetectorGpu } from '../../../detector/webgpu/virtual_detector';
import { BrowsePlan, DatasetInfo, Detector, datasetPath, getJson, getRaw } from './api';

export interface GpuStatus {
  available: boolean;
  adapter: string;  // vendor / architecture / description, or why there is none
  fallback: boolean;  // a software (fallback) adapter
}

export async function openDevice(): Promise<{ device: GPUDevice | null; status: GpuStatus }> {
  const gpu = (navigator as Navigator & { gpu?: GPU }).gpu;
  if (!gpu) return { device: null, status: { available: false, adapter: 'navigator.gpu is missing', fallback: false } };
  const adapter = await gpu.requestAdapter();
  if (!adapter) return { device: null, status: { available: false, adapter: 'requestAdapter() gave no adapter', fallback: false } };
  const info = adapter.info;
  const name = [info?.vendor, info?.architecture, info?.description].filter((s) => s).join(' / ') || 'unnamed adapter';
  const fallback = Boolean((info as GPUAdapterInfo & { isFallbackAdapter?: boolean })?.isFallbackAdapter);
  const device = await adapter.requestDevice({
    requiredLimits: {
      maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
      maxBufferSize: adapter.limits.maxBufferSize,
    },
  });
  return { device, status: { available: true, adapter: name, fallback } };
}

// A whole-scan window at the smallest exact detector bin that fits `budget` bytes (and the device).
export function chooseBin(plan: BrowsePlan, scanFrames: number, budget: number): number | null {
  for (const bin of plan.detector_bins) {
    const bytes = plan.frame_bytes_by_detector_bin[String(bin)] * scanFrames;
    if (bytes <= Math.min(budget, plan.window_limit_bytes)) return bin;
  }
  return null;
}

export class BrowserCompute {
  bin = 1;
  block: FrameBlock | null = null;
  private constructor(
    private device: GPUDevice,
    private detector: VirtualDetectorGpu,
    private colormap: ColormapGpu,
    private ds: DatasetInfo,
  ) {}

  static async create(device: GPUDevice, ds: DatasetInfo): Promise<BrowserCompute> {
    return new BrowserCompute(device, await VirtualDetectorGpu.create(device), await ColormapGpu.create(device), ds);
  }

  // Fetches the whole scan at detector bin `bin` and uploads it.
  async load(bin: number): Promise<number> {
    const raw = await getRaw(datasetPath(this.ds.id, `window?bin=${bin}`));
    const [rows, cols, dr, dc] = raw.shape;
    this.block = { frames: rows * cols, framePixels: dr * dc, counts: new Uint32Array(raw.data) };
    this.detector.upload(this.block);
    this.bin = bin;
    return raw.computeMs;
  }

  async loadBest(budget: number): Promise<number | null> {
    const plan = await getJson<BrowsePlan>(datasetPath(this.ds.id, 'browse_plan'));
    const limit = Math.min(budget, this.device.limits.maxStorageBufferBindingSize);
    const bin = chooseBin(plan, this.ds.shape[0] * this.ds.shape[1], limit);
    if (bin === null) return null;
    await this.load(bin);
    return bin;
  }

  // The detector's mask on the (binned) window: binned pixel i spans original pixels [i*b, i*b + b).
  mask(d: Detector): Uint32Array {
    const b = this.bin, rows = this.ds.shape[2] / b, cols = this.ds.shape[3] / b;
    const cr = (d.cr - (b - 1) / 2) / b, cc = (d.cc - (b - 1) / 2) / b;
    return d.kind === 'disk' ? ringMask(rows, cols, cr, cc, 0, d.r / b) : ringMask(rows, cols, cr, cc, d.inner / b, d.outer / b);
  }

  // Exact uint64 sums per scan position.
  sums(d: Detector): Promise<BigUint64Array> {
    return this.detector.maskedSum(this.mask(d));
  }

  destroy(): void {
    this.detector.destroy();
    this.device.destroy();
  }

  // Linear viridis picture over [min, max] as display::render does with percentiles 0..100.
  async picture(sums: BigUint64Array): Promise<{ rgba: Uint8ClampedArray; lo: number; hi: number }> {
    const values = Float32Array.from(sums, (v) => Number(v));
    let lo = Infinity, hi = -Infinity;
    for (const v of values) {
      lo = Math.min(lo, v);
      hi = Math.max(hi, v);
    }
    return { rgba: await this.colormap.render(values, lo, hi), lo, hi };
  }
}
