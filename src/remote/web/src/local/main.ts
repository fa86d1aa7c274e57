// Local-file page (local.html): opens an HDF5 acquisition picked or dropped by the user (a master with its data
// files together), reads it with the TypeScript HDF5 reader, decodes bitshuffle+LZ4 chunks in WGSL and computes
// an exact bright-field image with the WGSL virtual detector: no server. Test and scripting hooks are on
// window.qgpuLocal (LocalState).
import { Acquisition, AcquisitionInfo, admit, openAcquisition } from '../../../../io/hdf5/webgpu/acquisition';
import { BitshuffleDecoderGpu, readBuffer } from '../../../../io/hdf5/webgpu/bitshuffle_gpu';
import { FileSet } from '../../../../io/hdf5/webgpu/h5file';
import { FrameBinnerGpu, ResidentFrames, decodeFramesCpu, decodeFramesGpu, framePixels, loadResident, readFrameChunks } from '../../../../io/hdf5/webgpu/local_dataset';
import { LoadRequest } from '../../../../io/hdf5/webgpu/acquisition';
import { decodeChunkRef } from '../../../../io/hdf5/webgpu/bitshuffle_ref';
import { VirtualDetectorGpu, ringMask } from '../../../../detector/webgpu/virtual_detector';
import { colorizeCpu } from '../../../../display/webgpu/colormap';
import { ComGpu, centredDpc } from '../../../../dpc/webgpu/com';
import { IdpcGpu, rotateField } from '../../../../dpc/webgpu/idpc';
import { SsbGpu, SsbParams } from '../../../../ssb/webgpu/ssb';
import { DisplayGpu, DisplayOptions, renderCpu } from '../../../../display/webgpu/display';

interface AdapterInfo {
  adapter: string;
  fallback: boolean;
}

export interface LocalState {
  ready: boolean;
  adapter: AdapterInfo | null;
  info: AcquisitionInfo | null;
  version: number;            // bumps after each open (and its BF image)
  bfSums: string[] | null;    // exact uint64 sums of the image shown
  bfQuery: { cr: number; cc: number; r: number } | null;
  methods: string[];          // chunk index parsed, per part
  shape: [number, number, number, number] | null;  // resident frames (after crop and bin)
  chunkOffsets(): number[];   // file offsets of the first part's chunks (tests)
  load(req: LoadRequest): Promise<void>;
  errors: string[];
  limitBytes: number;
  decodeReplicated(copies: number): Promise<{ blocks: number; mismatches: number; badStatus: number }>;
  corruptCheck(): Promise<{ status: number[]; messages: string[]; intactEqual: boolean }>;
  open(files: File[]): Promise<void>;
  decodeFrames(first: number, count: number, on: 'gpu' | 'cpu'): Promise<{ values: number[]; status: number[]; messages: string[] }>;
  bf(cr: number, cc: number, r: number): Promise<string[]>;
  ring(cr: number, cc: number, inner: number, outer: number): Promise<{ sums: string[]; plan: string }>;
  renderCheck(values: number[], o: DisplayOptions, png: number[]): Promise<{ gpuVsPng: number; cpuVsPng: number; histogramsEqual: boolean; flagged: number; histogram: number[] }>;
  renderSynthetic(n: number, o: DisplayOptions): Promise<{ rgbaEqual: boolean; histogramsEqual: boolean; flagged: number; counted: number }>;
  idpc(angleDeg: number, transpose: boolean): Promise<number[]>;
  ssb(p: SsbParams): Promise<number[]>;
  com(): Promise<{ row: number[]; col: number[]; dpcRow: number[]; dpcCol: number[]; ref: [number, number] }>;
  admit: typeof admit;
}

const $ = <T extends Element>(id: string) => document.getElementById(id) as unknown as T;
let device: GPUDevice | null = null;
let decoder: BitshuffleDecoderGpu | null = null;
let detector: VirtualDetectorGpu | null = null;
let comGpu: ComGpu | null = null;
let displayGpu: DisplayGpu | null = null;
let idpcGpu: IdpcGpu | null = null;
let ssbGpu: SsbGpu | null = null;
let residentBuffer: GPUBuffer | null = null;
let acq: Acquisition | null = null;
let resident: ResidentFrames | null = null;
let binner: FrameBinnerGpu | null = null;

const state: LocalState = {
  ready: false, adapter: null, info: null, version: 0, bfSums: null, bfQuery: null, methods: [], shape: null, errors: [], limitBytes: 0,
  load: (req: LoadRequest) => load(req, true),
  chunkOffsets: () => (acq ? Array.from(acq.parts[0].table.offsets) : []),
  corruptCheck,
  decodeReplicated,
  open: openFiles,
  decodeFrames,
  bf,
  ring,
  com,
  renderCheck,
  renderSynthetic,
  idpc,
  ssb,
  admit,
};
(window as unknown as { qgpuLocal: LocalState }).qgpuLocal = state;

function report(e: unknown): void {
  const msg = e instanceof Error ? e.message : String(e);
  state.errors.push(msg);
  $<HTMLElement>('message').textContent = msg;
}

async function initGpu(): Promise<void> {
  if (!navigator.gpu) {
    $<HTMLElement>('gpu-status').textContent = 'WebGPU unavailable in this browser: files open, frames are not decoded';
    return;
  }
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) {
    $<HTMLElement>('gpu-status').textContent = 'no WebGPU adapter';
    return;
  }
  const ai = adapter.info;
  const fallback = Boolean((ai as unknown as { isFallbackAdapter?: boolean }).isFallbackAdapter) || /swiftshader/i.test(`${ai.vendor} ${ai.architecture} ${ai.description}`);
  state.adapter = { adapter: [ai.vendor, ai.architecture, ai.device, ai.description].filter(Boolean).join(' / ') || 'unnamed adapter', fallback };
  device = await adapter.requestDevice({
    requiredLimits: { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize, maxBufferSize: adapter.limits.maxBufferSize },
  });
  // Decoded frames live in one storage buffer: 80% of what one binding may hold, at most 2 GiB.
  state.limitBytes = Math.min(0.8 * Math.min(device.limits.maxStorageBufferBindingSize, device.limits.maxBufferSize), 2 ** 31);
  decoder = await BitshuffleDecoderGpu.create(device);
  detector = await VirtualDetectorGpu.create(device);
  binner = await FrameBinnerGpu.create(device);
  comGpu = await ComGpu.create(device);
  displayGpu = await DisplayGpu.create(device);
  idpcGpu = await IdpcGpu.create(device);
  ssbGpu = await SsbGpu.create(device);
  $<HTMLElement>('gpu-status').textContent = `WebGPU: ${state.adapter.adapter}${fallback ? ' (software/fallback adapter)' : ''}`;
}

async function openFiles(files: File[]): Promise<void> {
  try {
    state.errors = [];
    state.info = null;
    state.methods = [];
    state.bfSums = null;
    $<HTMLElement>('message').textContent = '';
    resident = null;
    residentBuffer = null;
    acq = await openAcquisition(FileSet.fromFiles(files));
    state.info = acq.info;
    state.methods = acq.parts.map((p) => p.table.method);
    const i = acq.info;
    $<HTMLElement>('info').textContent = JSON.stringify(i, null, 1);
    await load({}, false);
  } catch (e) {
    report(e);
  } finally {
    state.version++;
  }
}

// Loads the request's frames resident on the GPU (crop / exact detector bin; refused with the options when too
// large) and draws a bright-field image.
async function load(req: LoadRequest, bump: boolean): Promise<void> {
  try {
    if (!acq) throw new Error('no file open');
    if (!device || !decoder || !detector || !binner) return;
    residentBuffer = null;
    resident = null;
    state.shape = null;
    const r = await loadResident(device, decoder, binner, acq, req, state.limitBytes);
    detector.attach(r.buffer, r.frames, r.framePixels);
    resident = r;
    residentBuffer = r.buffer;
    state.shape = r.shape;
    const [, , dr, dc] = r.shape;
    const bin = req.binDetector ?? 1;
    const radius = acq.info.calibration.disk_radius_px !== undefined ? acq.info.calibration.disk_radius_px / bin : Math.min(dr, dc) / 8;
    await bf((dr - 1) / 2, (dc - 1) / 2, Math.max(1, radius));
  } catch (e) {
    report(e);
  } finally {
    if (bump) state.version++;
  }
}

async function decodeFrames(first: number, count: number, on: 'gpu' | 'cpu') {
  if (!acq) throw new Error('no file open');
  if (on === 'cpu') {
    const v = await decodeFramesCpu(acq, first, count);
    return { values: Array.from(v), status: new Array(count).fill(0), messages: new Array(count).fill('') };
  }
  if (!device || !decoder) throw new Error('no WebGPU device');
  const g = await decodeFramesGpu(device, decoder, acq, first, count, state.limitBytes);
  const v = await readBuffer(device, g.buffer, count * g.framePixels * 4);
  g.buffer.destroy();
  return { values: Array.from(v), status: Array.from(g.status), messages: g.messages };
}

// Exact annulus sums (inner <= d <= outer), with the detector plan (total-minus-complement for large masks).
async function ring(cr: number, cc: number, inner: number, outer: number): Promise<{ sums: string[]; plan: string }> {
  if (!acq || !resident || !detector) throw new Error('no decoded frames on the GPU');
  const [, , dr, dc] = resident.shape;
  const sums = await detector.planned(ringMask(dr, dc, cr, cc, inner, outer));
  return { sums: Array.from(sums, String), plan: detector.lastPlan };
}

// Centre of mass (exact sums on the GPU) and centred DPC of every scan position.
async function com() {
  if (!acq || !resident || !residentBuffer || !comGpu) throw new Error('no decoded frames on the GPU');
  const [, , dr, dc] = resident.shape;
  const c = await comGpu.com(residentBuffer, resident.frames, dr, dc);
  const d = centredDpc(c);
  return { row: Array.from(c.row), col: Array.from(c.col), dpcRow: Array.from(d.row), dpcCol: Array.from(d.col), ref: [d.refRow, d.refCol] as [number, number] };
}

// Renders float values on the GPU and on the CPU reference and counts the pixels differing from a PNG made by
// display::render (qgpu image); also compares the two 256-bin histograms.
async function renderCheck(values: number[], o: DisplayOptions, png: number[]) {
  if (!displayGpu) throw new Error('no WebGPU device');
  const v = new Float32Array(values);
  const gpu = await displayGpu.render(v, o);
  const cpu = renderCpu(v, o);
  const bitmap = await createImageBitmap(new Blob([new Uint8Array(png)], { type: 'image/png' }), { premultiplyAlpha: 'none', colorSpaceConversion: 'none' });
  const c = document.createElement('canvas');
  c.width = bitmap.width;
  c.height = bitmap.height;
  const ctx = c.getContext('2d')!;
  ctx.drawImage(bitmap, 0, 0);
  const want = ctx.getImageData(0, 0, c.width, c.height).data;
  const diff = (got: Uint8ClampedArray) => {
    if (got.length !== want.length) return -1;
    let n = 0;
    for (let i = 0; i < got.length; i += 4) if (got[i] !== want[i] || got[i + 1] !== want[i + 1] || got[i + 2] !== want[i + 2] || got[i + 3] !== want[i + 3]) ++n;
    return n;
  };
  return { gpuVsPng: diff(gpu.rgba), cpuVsPng: diff(cpu.rgba), histogramsEqual: gpu.histogram.every((x, i) => x === cpu.histogram[i]),
    flagged: gpu.flagged, histogram: Array.from(gpu.histogram) };
}

// n pseudo-random values over many decades, signs, exact zeros, NaN and +-inf: WGSL display vs CPU reference.
async function renderSynthetic(n: number, o: DisplayOptions) {
  if (!displayGpu) throw new Error('no WebGPU device');
  const v = new Float32Array(n);
  let x = 12345;
  for (let i = 0; i < n; ++i) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    const u = x / 2 ** 32;
    v[i] = i % 97 === 0 ? NaN : i % 101 === 0 ? (i % 2 ? Infinity : -Infinity) : i % 13 === 0 ? 0 : (u - 0.3) * 10 ** ((i % 9) - 3);
  }
  const gpu = await displayGpu.render(v, o);
  const cpu = renderCpu(v, o);
  return { rgbaEqual: gpu.rgba.every((b, i) => b === cpu.rgba[i]), histogramsEqual: gpu.histogram.every((h, i) => h === cpu.histogram[i]),
    flagged: gpu.flagged, counted: gpu.histogram.reduce((a, b) => a + b, 0) };
}

// iDPC of the centred DPC rotated by a fixed angle (mirror padding, unit steps), on the GPU.
async function idpc(angleDeg: number, transpose: boolean): Promise<number[]> {
  if (!acq || !resident || !residentBuffer || !comGpu || !idpcGpu) throw new Error('no decoded frames on the GPU');
  const [rows, cols, dr, dc] = resident.shape;
  const d = centredDpc(await comGpu.com(residentBuffer, resident.frames, dr, dc));
  const [gr, gc] = rotateField(d.row, d.col, angleDeg, transpose);
  return Array.from(await idpcGpu.integrate(gr, gc, rows, cols));
}

// SSB phase at given aberrations on a binned detector, on the GPU.
async function ssb(p: SsbParams): Promise<number[]> {
  if (!acq || !resident || !residentBuffer || !ssbGpu) throw new Error('no decoded frames on the GPU');
  const [rows, cols, dr, dc] = resident.shape;
  return Array.from(await ssbGpu.phase(residentBuffer, rows, cols, dr, dc, p));
}

// Frame 0's chunk decoded `copies` times in one dispatch (more blocks than one dispatch dimension holds when
// copies * blocks per chunk > 65535): every copy must equal the reference decode.
async function decodeReplicated(copies: number) {
  if (!acq || !device || !decoder) throw new Error('no file open or no WebGPU device');
  const { chunks } = await readFrameChunks(acq, 0, 1);
  const n = framePixels(acq), bs = acq.info.bitshuffle_block_elems;
  const ref = decodeChunkRef(chunks[0], acq.elemSize, n, bs);
  const r = await decoder.decode(new Array(copies).fill(chunks[0]), acq.elemSize, n, bs);
  const v = await readBuffer(device, r.output, copies * n * 4);
  r.output.destroy();
  let mismatches = 0;
  for (let c = 0; c < copies; ++c) for (let i = 0; i < n; ++i) if (v[c * n + i] !== ref[i]) ++mismatches;
  return { blocks: r.blocks, mismatches, badStatus: r.status.filter((x) => x !== 0).length };
}

// Frames 0..3 of the open file with chunk 1's LZ4 data scrambled and chunk 2 cut short, decoded on the GPU.
async function corruptCheck() {
  if (!acq || !device || !decoder) throw new Error('no file open or no WebGPU device');
  const { chunks } = await readFrameChunks(acq, 0, 4);
  const n = framePixels(acq);
  const bs = acq.info.bitshuffle_block_elems;
  const bad = chunks.map((c) => c.slice());
  bad[1].fill(0xf0, 16);
  bad[2] = bad[2].subarray(0, 20);
  const r = await decoder.decode(bad, acq.elemSize, n, bs);
  const v = await readBuffer(device, r.output, 4 * n * 4);
  r.output.destroy();
  const ref = [0, 3].map((i) => decodeChunkRef(chunks[i], acq!.elemSize, n, bs));
  const intactEqual = [0, 3].every((i, k) => ref[k].every((x, j) => x === v[i * n + j]));
  return { status: Array.from(r.status), messages: r.messages, intactEqual };
}

// Exact bright-field sums (disk of radius r around (cr, cc), as detector/mask.cpp) of every scan position; draws them.
async function bf(cr: number, cc: number, r: number): Promise<string[]> {
  if (!acq || !resident || !detector) throw new Error('no decoded frames on the GPU');
  const [rows, cols, dr, dc] = resident.shape;
  const sums = await detector.maskedSum(ringMask(dr, dc, cr, cc, 0, r));
  const values = new Float32Array(sums.length);
  let lo = Infinity, hi = -Infinity;
  sums.forEach((s, k) => {
    values[k] = Number(s);
    lo = Math.min(lo, values[k]);
    hi = Math.max(hi, values[k]);
  });
  const canvas = $<HTMLCanvasElement>('real');
  canvas.width = cols;
  canvas.height = rows;
  canvas.getContext('2d')!.putImageData(new ImageData(colorizeCpu(values, lo, hi) as Uint8ClampedArray<ArrayBuffer>, cols, rows), 0, 0);
  state.bfSums = Array.from(sums, String);
  state.bfQuery = { cr, cc, r };
  $<HTMLElement>('real-text').textContent = `disk centre (${cr.toFixed(2)}, ${cc.toFixed(2)}), radius ${r.toFixed(2)} px; counts ${lo}..${hi}`;
  return state.bfSums;
}

// Draws the chosen product with the WGSL display (colormap, scale, 0.5-99.5 percentiles).
async function show(): Promise<void> {
  try {
    if (!acq || !resident || !displayGpu) throw new Error('no frames loaded');
    const [rows, cols, dr, dc] = resident.shape;
    const bin = resident.request.binDetector ?? 1;
    const cal = acq.info.calibration;
    const disk = cal.disk_radius_px !== undefined ? cal.disk_radius_px / bin : Math.min(dr, dc) / 8;
    const product = $<HTMLSelectElement>('product').value;
    const rotation = Number($<HTMLInputElement>('rotation').value);
    let values: Float32Array;
    if (product === 'bf') values = Float32Array.from(await bf((dr - 1) / 2, (dc - 1) / 2, Math.max(1, disk)), Number);
    else if (product === 'adf') values = Float32Array.from((await ring((dr - 1) / 2, (dc - 1) / 2, 1.2 * disk, Math.min(3 * disk, dr / 2))).sums, Number);
    else if (product === 'idpc') values = Float32Array.from(await idpc(rotation, false));
    else if (product === 'ssb') {
      for (const k of ['energy_kev', 'semiangle_mrad', 'scan_step_angstrom'])
        if (cal[k] === undefined) throw new Error(`SSB needs /entry/calibration ${k} in the file`);
      values = Float32Array.from(await ssb({
        energyKev: cal.energy_kev, semiangleMrad: cal.semiangle_mrad, scanStepAngstrom: cal.scan_step_angstrom,
        detectorMradPerPixel: (cal.detector_mrad_per_pixel ?? cal.semiangle_mrad / (cal.disk_radius_px ?? disk)) * bin,
        diskCenter: [(dr - 1) / 2, (dc - 1) / 2], rotationDeg: rotation, detectorBin: 1,
        aberrations: { C1: Number($<HTMLInputElement>('defocus').value) },
      }));
    } else {
      const c = await com();
      values = Float32Array.from({ com_row: c.row, com_col: c.col, dpc_row: c.dpcRow, dpc_col: c.dpcCol }[product] ?? c.row);
    }
    const pic = await displayGpu.render(values, { colormap: $<HTMLSelectElement>('colormap').value,
      scale: $<HTMLSelectElement>('scale').value as 'linear' | 'log' | 'signed_log', lowerPercentile: 0.5, upperPercentile: 99.5 });
    const canvas = $<HTMLCanvasElement>('real');
    canvas.width = cols;
    canvas.height = rows;
    canvas.getContext('2d')!.putImageData(new ImageData(pic.rgba, cols, rows), 0, 0);
    $<HTMLElement>('real-text').textContent = `${product}: display range ${pic.lo.toPrecision(4)}..${pic.hi.toPrecision(4)}`;
  } catch (e) {
    report(e);
  }
}
$<HTMLButtonElement>('show').addEventListener('click', () => void show());

$<HTMLButtonElement>('load').addEventListener('click', () => {
  const num = (id: string) => Number($<HTMLInputElement>(id).value);
  const info = state.info;
  if (!info) return;
  const rows = num('rows') || info.shape[0] - num('r0'), cols = num('cols') || info.shape[1] - num('c0');
  void load({ scanRegion: [num('r0'), num('c0'), rows, cols], binDetector: Number($<HTMLSelectElement>('bin').value) }, true);
});

const input = $<HTMLInputElement>('files');
input.addEventListener('change', () => void openFiles([...(input.files ?? [])]));
document.addEventListener('dragover', (e) => e.preventDefault());
document.addEventListener('drop', (e) => {
  e.preventDefault();
  void openFiles([...(e.dataTransfer?.files ?? [])]);
});
document.getElementById('no-script')?.remove();  // the page's notice for when this script does not run
initGpu().catch(report).finally(() => (state.ready = true));
