// The browser's WebGPU kernels (src/*/webgpu, the same modules the viewer and the local-file page bundle) on the
// adapter Dawn's Node binding (npm `webgpu`) gives, outside Chromium: a `qgpu sample` HDF5 file read by the
// TypeScript HDF5 reader, its chunks decoded by the WGSL bitshuffle+LZ4 decoder, then BF/ADF virtual detectors,
// CoM and centred DPC, iDPC, the colormapped display and an SSB phase. Every product is checked against an
// independent reference: the TypeScript CPU references (decode, masked sums, CoM sums, display) and the qgpu CLI's
// CPU backend on the same file (.npy/.png; exact for integer sums, the modules' stated tolerances for floats).
// Prints the adapter and the median time of each operation after a warm-up; exits 1 on a mismatch, 2 when the
// adapter is missing or (with --require-hardware) a software one.
//   node harness.mjs FILE --qgpu BUILD/qgpu [--runs 5] [--out DIR] [--require-hardware] [--max-check-frames N]
//                    [--scan-region R0,C0,ROWS,COLS] [--bin-detector N]   (the load request; the CLI gets the same)
// QGPU_DAWN_FLAGS: comma-separated flags for Dawn's create() (e.g. backend=vulkan,adapter=NVIDIA).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, openAsBlob, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { PNG } from 'pngjs';
import { openAcquisition } from '../../src/io/hdf5/webgpu/acquisition';
import { BitshuffleDecoderGpu, readBuffer } from '../../src/io/hdf5/webgpu/bitshuffle_gpu';
import { decodeChunkRef } from '../../src/io/hdf5/webgpu/bitshuffle_ref';
import { FileSet } from '../../src/io/hdf5/webgpu/h5file';
import { FrameBinnerGpu, framePixels, loadResident, readChunksOf, readFrameChunks } from '../../src/io/hdf5/webgpu/local_dataset';
import { VirtualDetectorGpu, maskedSumCpu, ringMask } from '../../src/detector/webgpu/virtual_detector';
import { ComGpu, centredDpc, comFromSums, comSumsCpu } from '../../src/dpc/webgpu/com';
import { IDPC_TOLERANCE_RELATIVE_L2, IdpcGpu, rotateField } from '../../src/dpc/webgpu/idpc';
import { DisplayGpu, DisplayOptions, renderCpu } from '../../src/display/webgpu/display';
import { SSB_PHASE_TOLERANCE_RAD, SsbGpu, SsbParams } from '../../src/ssb/webgpu/ssb';

const { values: opt, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    qgpu: { type: 'string' }, runs: { type: 'string', default: '5' }, out: { type: 'string' },
    'require-hardware': { type: 'boolean', default: false }, 'max-check-frames': { type: 'string', default: '1000000' },
    'scan-region': { type: 'string' }, 'bin-detector': { type: 'string', default: '1' },
  },
});
if (positionals.length < 1 || !opt.qgpu)
  throw new Error('usage: harness.mjs FILE [DATA_FILES...] --qgpu PATH [--runs N] [--out DIR] [--require-hardware]');
const region = opt['scan-region'] ? opt['scan-region'].split(',').map(Number) as [number, number, number, number] : undefined;
if (region && (region.length !== 4 || !region.every((x) => Number.isInteger(x) && x >= 0))) throw new Error('--scan-region takes R0,C0,ROWS,COLS');
const binDet = Number(opt['bin-detector']);
if (!Number.isInteger(binDet) || binDet < 1) throw new Error('--bin-detector takes an integer >= 1');
const files = positionals.map((f) => resolve(f));
const qgpu = resolve(opt.qgpu);
const runs = Math.max(1, Number(opt.runs));
const maxCheck = Number(opt['max-check-frames']);
const out = opt.out ? resolve(opt.out) : mkdtempSync(join(tmpdir(), 'qgpu-webgpu-node-'));
mkdirSync(out, { recursive: true });

const trace = (what: string) => { if (process.env.QGPU_TRACE) console.error(`[trace ${performance.now().toFixed(0)} ms] ${what}`); };
let failures = 0;
const results: string[] = [];
function check(name: string, ok: boolean, detail: string): void {
  results.push(`${ok ? 'PASS' : 'FAIL'} ${name}: ${detail}`);
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}: ${detail}`);
  if (!ok) ++failures;
}

// One timed operation: a warm-up call, then `runs` calls; each call ends with its GPU work awaited (mapAsync of its
// results, or onSubmittedWorkDone). Wall time of the whole call (host planning, uploads, dispatch, read-back).
const timings: Array<{ name: string; median: number; min: number; max: number; note: string }> = [];
async function timed<T>(name: string, note: string, f: () => Promise<T>, after?: () => Promise<void>): Promise<T> {
  let r = await f();
  if (after) await after();
  const ms: number[] = [];
  for (let i = 0; i < runs; ++i) {
    const t0 = performance.now();
    r = await f();
    if (after) await after();
    ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  timings.push({ name, median: ms[Math.floor(ms.length / 2)], min: ms[0], max: ms[ms.length - 1], note });
  return r;
}

function cli(args: string[]): void {
  execFileSync(qgpu, args, { stdio: 'pipe', timeout: 600000 });
}

// .npy readers (little-endian uint64 / float32, C order).
function npy(path: string, dtype: '<u8' | '<f4'): Buffer {
  const b = readFileSync(path);
  if (b.subarray(0, 6).toString('latin1') !== '\x93NUMPY') throw new Error(`${path}: not a .npy file`);
  const v = b[6];
  const hlen = v === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const start = (v === 1 ? 10 : 12) + hlen;
  const header = b.subarray(v === 1 ? 10 : 12, start).toString('latin1');
  if (!header.includes(`'${dtype}'`) || header.includes("'fortran_order': True")) throw new Error(`${path}: header ${header}, ${dtype} C order expected`);
  return b.subarray(start);
}
const npyU64 = (p: string) => { const b = npy(p, '<u8'); return Array.from({ length: b.length / 8 }, (_, i) => b.readBigUInt64LE(8 * i)); };
const npyF32 = (p: string) => { const b = npy(p, '<f4'); return Float32Array.from({ length: b.length / 4 }, (_, i) => b.readFloatLE(4 * i)); };
const maxAbsDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => { let m = 0; for (let i = 0; i < a.length; ++i) m = Math.max(m, Math.abs(a[i] - b[i])); return m; };
// Entries of a differing from b (a length difference counts as all of them).
const diffBig = (a: ArrayLike<bigint>, b: ArrayLike<bigint>) => {
  if (a.length !== b.length) return Math.max(a.length, b.length);
  let k = 0;
  for (let i = 0; i < a.length; ++i) if (a[i] !== b[i]) ++k;
  return k;
};

// ---- adapter -------------------------------------------------------------------------------------------
const { create, globals } = await import('webgpu');
Object.assign(globalThis, globals);
const flags = (process.env.QGPU_DAWN_FLAGS ?? '').split(',').filter(Boolean);
const gpu = create(flags) as GPU;
const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
// dawn.node frees its instance and adapter when their JS objects are collected, even while a device made from them
// lives (crashes and hangs seen on SwiftShader): hold them until exit.
(globalThis as unknown as { qgpuKeepAlive: unknown[] }).qgpuKeepAlive = [gpu, adapter];
if (!adapter) {
  console.log('adapter: none (Dawn found no WebGPU adapter; is a Vulkan driver installed and VK_ICD_FILENAMES / VK_DRIVER_FILES right?)');
  process.exit(2);
}
const ai = adapter.info as GPUAdapterInfo & { isFallbackAdapter?: boolean; driver?: string };
// Dawn's description names the driver (Vulkan: driver name and version, e.g. SwiftShader's "SwiftShader driver 5.0.0").
const adapterText = `vendor '${ai.vendor}', architecture '${ai.architecture}', device '${ai.device}', description (driver) '${ai.description}'`;
const software = Boolean(ai.isFallbackAdapter) || /swiftshader|llvmpipe|lavapipe|software/i.test(`${ai.vendor} ${ai.architecture} ${ai.device} ${ai.description}`);
console.log(`adapter: ${adapterText}${software ? ' (a software adapter)' : ''}`);
console.log(`node ${process.version}, Dawn flags [${flags.join(',')}], limits: maxStorageBufferBindingSize ${adapter.limits.maxStorageBufferBindingSize}, maxBufferSize ${adapter.limits.maxBufferSize}`);
if (software && opt['require-hardware']) {
  console.log('FAIL adapter: a software adapter was found where a hardware one is required (--require-hardware): the Vulkan loader did not find the GPU driver');
  process.exit(2);
}
const device = await adapter.requestDevice({
  requiredLimits: { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize, maxBufferSize: adapter.limits.maxBufferSize },
});
device.addEventListener('uncapturederror', (e) => {
  console.log(`FAIL WebGPU error: ${(e as GPUUncapturedErrorEvent).error.message}`);
  ++failures;
});
const idle = () => device.queue.onSubmittedWorkDone();
const limitBytes = Math.min(0.8 * Math.min(device.limits.maxStorageBufferBindingSize, device.limits.maxBufferSize), 2 ** 31);

// ---- file ----------------------------------------------------------------------------------------------
const blobs = new Map<string, Blob>();
for (const f of files) blobs.set(basename(f), await openAsBlob(f));
const acq = await openAcquisition(new FileSet(blobs), basename(files[0]));
const [fileRows, fileCols, fileDr, fileDc] = acq.info.shape;
const n = framePixels(acq);
const req = { ...(region ? { scanRegion: region } : {}), ...(binDet > 1 ? { binDetector: binDet } : {}) };
const cliReq = [...(region ? ['--scan-region', ...region.map(String)] : []), ...(binDet > 1 ? ['--bin-detector', String(binDet)] : [])];
console.log(`file: ${files[0]}: scan ${fileRows}x${fileCols}, detector ${fileDr}x${fileDc} ${acq.info.dtype}, filters ${acq.info.filters.map((f) => f.name || f.id).join('+') || 'none'}` +
  `${region ? `; scan region ${region.join(' ')}` : ''}${binDet > 1 ? `; detector bin ${binDet}` : ''}`);
if (acq.info.pixel_mask.bad_pixels > 0) console.log(`note: ${acq.info.pixel_mask.bad_pixels} bad pixels in the mask: the browser path does not mask them, the CLI does`);

const decoder = await BitshuffleDecoderGpu.create(device);
const binner = await FrameBinnerGpu.create(device);
const detector = await VirtualDetectorGpu.create(device);
const comGpu = await ComGpu.create(device);
const idpcGpu = await IdpcGpu.create(device);
const displayGpu = await DisplayGpu.create(device);
const ssbGpu = await SsbGpu.create(device);

// ---- decode: one batch of chunks (<= 64 MiB decoded) on the GPU vs the TypeScript reference decoder ----------
const batch = Math.max(1, Math.min(fileRows * fileCols, Math.floor((64 << 20) / (4 * n))));
const { chunks } = await readFrameChunks(acq, 0, batch);
const storedBytes = chunks.reduce((s, c) => s + c.length, 0);
const bs = acq.info.bitshuffle_block_elems;
let prevDecode: Awaited<ReturnType<BitshuffleDecoderGpu['decode']>> | null = null;
const dec = await timed('decode', `${batch} frames (${(storedBytes / 2 ** 20).toFixed(1)} MiB stored -> ${(batch * n * 4 / 2 ** 20).toFixed(1)} MiB u32), chunks already in memory`,
  async () => {
    prevDecode?.output.destroy();
    prevDecode = await decoder.decode(chunks, acq.elemSize, n, bs);
    return prevDecode;
  });
{
  const v = await readBuffer(device, dec.output, batch * n * 4);
  let bad = 0;
  for (let f = 0; f < batch; ++f) {
    const ref = decodeChunkRef(chunks[f], acq.elemSize, n, bs);
    for (let i = 0; i < n; ++i) if (v[f * n + i] !== ref[i]) ++bad;
  }
  dec.output.destroy();
  check('decode', bad === 0 && dec.status.every((s) => s === 0), `${batch} frames of ${n} pixels: ${bad} pixels differ from bitshuffle_ref.ts, ${dec.status.filter((s) => s !== 0).length} bad statuses`);
}

// ---- load: every frame resident on the GPU (file reads + decode + copy) ------------------------------------
trace('load warm-up');
let resident = await loadResident(device, decoder, binner, acq, req, limitBytes);
resident.buffer.destroy();
const loadMs: number[] = [];
for (let i = 0; i < Math.min(runs, 3); ++i) {
  trace(`load ${i}`);
  const t0 = performance.now();
  resident = await loadResident(device, decoder, binner, acq, req, limitBytes);
  await idle();
  loadMs.push(performance.now() - t0);
  if (i + 1 < Math.min(runs, 3)) resident.buffer.destroy();
}
loadMs.sort((a, b) => a - b);
timings.push({ name: 'load', median: loadMs[Math.floor(loadMs.length / 2)], min: loadMs[0], max: loadMs[loadMs.length - 1],
  note: `${resident.frames} frames from the file (page cache), decoded in 64 MiB batches${binDet > 1 ? `, binned ${binDet}x${binDet}` : ''}, resident as u32` });
const buf = resident.buffer;
const [rows, cols, dr, dc] = resident.shape;
const frames = rows * cols, fp = dr * dc;
detector.attach(buf, frames, fp);

// The CPU reference frames: every resident frame (or the first --max-check-frames) decoded by bitshuffle_ref.ts,
// cropped and binned on the host.
trace('reference decode');
const checkFrames = Math.min(frames, maxCheck);
const host = new Uint32Array(checkFrames * fp);
{
  const gpuFrames = await readBuffer(device, buf, checkFrames * fp * 4);
  const [r0, c0] = region ?? [0, 0];
  const list = Array.from({ length: checkFrames }, (_, i) => (r0 + Math.floor(i / cols)) * fileCols + c0 + (i % cols));
  let bad = 0;
  for (let f0 = 0; f0 < checkFrames; f0 += 256) {
    const c = await readChunksOf(acq, list.slice(f0, f0 + 256));
    c.chunks.forEach((ch, j) => {
      const full = decodeChunkRef(ch, acq.elemSize, n, bs), base = (f0 + j) * fp;
      for (let r = 0; r < fileDr; ++r) for (let q = 0; q < fileDc; ++q) host[base + Math.floor(r / binDet) * dc + Math.floor(q / binDet)] += full[r * fileDc + q];
    });
  }
  for (let i = 0; i < host.length; ++i) if (gpuFrames[i] !== host[i]) ++bad;
  check('load', bad === 0, `${checkFrames} of ${frames} resident frames compared with bitshuffle_ref.ts: ${bad} pixels differ`);
}
const block = { frames: checkFrames, framePixels: fp, counts: host };
const partial = (a: ArrayLike<bigint>) => Array.prototype.slice.call(a, 0, checkFrames) as bigint[];

// ---- BF / ADF: exact uint64 sums vs qgpu image --backend cpu and maskedSumCpu ----------------------------------
const cal = acq.info.calibration;
const cr = (dr - 1) / 2, cc = (dc - 1) / 2;
const disk = Math.max(1, cal.disk_radius_px !== undefined ? cal.disk_radius_px / binDet : Math.min(dr, dc) / 8);
const adfIn = 1.2 * disk, adfOut = Math.min(3 * disk, Math.min(dr, dc) / 2);
const cliDir = join(out, 'cli');
cli(['image', files[0], '--bf', String(disk), '--adf', String(adfIn), String(adfOut), '--center', String(cr), String(cc),
  '--com', '--idpc', '--rotation', '-37.5', '1', ...cliReq, '--backend', 'cpu', '-o', cliDir]);
const bfMask = ringMask(dr, dc, cr, cc, 0, disk), adfMask = ringMask(dr, dc, cr, cc, adfIn, adfOut);
const bf = await timed('bf', `disk radius ${disk} px (${bfMask.reduce((a, b) => a + b, 0)} pixels), ${frames} positions`, () => detector.maskedSum(bfMask));
{
  const want = npyU64(join(cliDir, 'bf.npy'));
  const dCli = diffBig(bf, want), dRef = diffBig(partial(bf), maskedSumCpu(block, bfMask));
  check('bf', dCli === 0 && dRef === 0, `${dCli} of ${want.length} sums differ from qgpu image --bf (cpu), ${dRef} from maskedSumCpu (exact); max ${want.reduce((m, v) => (v > m ? v : m), 0n)}`);
}
const adf = await timed('adf', `annulus ${adfIn}..${adfOut} px, plan total-minus-complement when it covers most of the detector`, () => detector.planned(adfMask));
{
  const want = npyU64(join(cliDir, 'adf.npy'));
  const dCli = diffBig(adf, want), dRef = diffBig(partial(adf), maskedSumCpu(block, adfMask));
  check('adf', dCli === 0 && dRef === 0, `${dCli} of ${want.length} sums differ from qgpu image --adf (cpu), ${dRef} from maskedSumCpu (exact, plan ${detector.lastPlan})`);
}

// ---- CoM and centred DPC ----------------------------------------------------------------------------------
const sums = await timed('com', 'exact (S, Sr, Sc) per frame on the GPU, CoM on the host', () => comGpu.sums(buf, frames, dr, dc));
const com = comFromSums(sums, dr, dc);
{
  const row = npyF32(join(cliDir, 'com_row.npy')), col = npyF32(join(cliDir, 'com_col.npy'));
  const d = Math.max(maxAbsDiff(com.row, row), maxAbsDiff(com.col, col));
  const dRef = diffBig(sums.slice(0, 3 * checkFrames), comSumsCpu(host, checkFrames, dr, dc));
  check('com sums', dRef === 0, `${dRef} of ${3 * checkFrames} exact (S, Sr, Sc) sums differ from comSumsCpu`);
  check('com', row.length === frames && d <= 1e-5, `max |diff| ${d.toExponential(2)} px against qgpu image --com (cpu), tolerance 1e-5`);
}
const dpc = centredDpc(com);
{
  const row = npyF32(join(cliDir, 'com_row.npy')), col = npyF32(join(cliDir, 'com_col.npy'));
  const mean = (a: Float32Array) => a.reduce((x, y) => x + y, 0) / a.length;
  const mr = mean(row), mc = mean(col);
  const d = Math.max(maxAbsDiff(dpc.row, row.map((v) => Math.fround(v - mr))), maxAbsDiff(dpc.col, col.map((v) => Math.fround(v - mc))));
  check('dpc', d <= 1e-5, `centred DPC max |diff| ${d.toExponential(2)} px against the CLI's CoM minus its mean, tolerance 1e-5`);
}

// ---- iDPC (rotation -37.5 degrees, transposed) ----------------------------------------------------------------
const [gr, gc] = rotateField(dpc.row, dpc.col, -37.5, true);
const phi = await timed('idpc', `${rows}x${cols} padded to ${2 * rows}x${2 * cols}, direct DFT per axis (f32), incl. upload and read-back`, () => idpcGpu.integrate(gr, gc, rows, cols));
{
  const want = npyF32(join(cliDir, 'idpc.npy'));
  let num = 0, den = 0;
  want.forEach((w, i) => { num += (phi[i] - w) ** 2; den += w * w; });
  const rel = Math.sqrt(num / den);
  check('idpc', phi.length === want.length && rel <= IDPC_TOLERANCE_RELATIVE_L2, `relative L2 ${rel.toExponential(2)} against qgpu image --idpc (cpu, FFTW double), tolerance ${IDPC_TOLERANCE_RELATIVE_L2}`);
}

// ---- display: the CLI's DPC values rendered, against its PNG and the CPU reference --------------------------------
for (const [cmap, scale] of [['viridis', 'linear'], ['inferno', 'signed_log']] as const) {
  const d = join(out, `display_${cmap}`);
  cli(['image', files[0], '--dpc', '--rotation', '0', '--colormap', cmap, '--scale', scale, '--percentiles', '2', '97', ...cliReq, '--backend', 'cpu', '-o', d]);
  const values = npyF32(join(d, 'dpc_col.npy'));
  const o: DisplayOptions = { colormap: cmap, scale, lowerPercentile: 2, upperPercentile: 97 };
  const pic = await timed(`display ${scale}`, `${cmap}, ${values.length} values, percentiles 2..97 (range resolved on the host)`, () => displayGpu.render(values, o));
  const png = PNG.sync.read(readFileSync(join(d, 'dpc_col.png')));
  const cpu = renderCpu(values, o);
  let vsPng = 0, vsCpu = 0;
  for (let i = 0; i < pic.rgba.length; i += 4)
    for (let k = 0; k < 4; ++k) {
      if (pic.rgba[i + k] !== png.data[i + k]) { ++vsPng; break; }
    }
  for (let i = 0; i < pic.rgba.length; ++i) if (pic.rgba[i] !== cpu.rgba[i]) ++vsCpu;
  const hist = pic.histogram.every((h, i) => h === cpu.histogram[i]);
  check(`display ${cmap}/${scale}`, png.width === cols && png.height === rows && vsPng === 0 && vsCpu === 0 && hist,
    `${vsPng} pixels differ from qgpu's PNG, ${vsCpu} bytes from renderCpu, histogram ${hist ? 'equal' : 'differs'} (${pic.flagged} pixels resolved on the host)`);
}

// ---- SSB at a defocus on a 2x-binned detector --------------------------------------------------------------------
// Not after a binned load: qgpu ssb --bin-detector keeps the file's unbinned detector_mrad_per_pixel (a BF disk of
// 8 px on a 24x24 binned detector whose fitted radius is 3.95 px), so its phase is no reference for the binned frames.
if (binDet > 1) console.log(`SKIP ssb: after --bin-detector ${binDet} qgpu ssb scales the detector with the unbinned pixel size; no reference`);
else {
  const d = join(out, 'ssb');
  cli(['ssb', files[0], '--defocus', '50', '--preview', '2', '--weighting', 'amplitude', '--rotation', '30', ...cliReq, '--backend', 'cpu', '-o', d]);
  const want = npyF32(join(d, 'ssb_preview_phase.npy'));
  const pr = JSON.parse(readFileSync(join(d, 'ssb_preview_phase.json'), 'utf8')).result.parameters;
  const p: SsbParams = { energyKev: pr.energy_kev, semiangleMrad: pr.semiangle_mrad, scanStepAngstrom: pr.scan_step_angstrom,
    detectorMradPerPixel: pr.detector_mrad_per_pixel, diskCenter: pr.disk_center, rotationDeg: pr.rotation_deg,
    transpose: pr.transpose, detectorBin: pr.detector_bin, aberrations: pr.aberrations };
  const got = await timed('ssb', `C1 50 A, detector bin ${pr.detector_bin} (${pr.k_groups} K groups), gather + direct DFTs + sums in f32`, () => ssbGpu.phase(buf, rows, cols, dr, dc, p));
  const diff = maxAbsDiff(got, want);
  check('ssb', got.length === want.length && diff <= SSB_PHASE_TOLERANCE_RAD, `max |phase diff| ${diff.toExponential(2)} rad against qgpu ssb --preview (cpu), tolerance ${SSB_PHASE_TOLERANCE_RAD}`);
}

// ---- report ---------------------------------------------------------------------------------------------------
console.log(`\ntimes on ${software ? 'a SOFTWARE adapter (SwiftShader/llvmpipe: not GPU figures)' : 'the adapter above'}: median of ${runs} after a warm-up, ms`);
console.log(`| operation | median ms | min | max | what |`);
for (const t of timings) console.log(`| ${t.name} | ${t.median.toFixed(3)} | ${t.min.toFixed(3)} | ${t.max.toFixed(3)} | ${t.note} |`);
console.log(`\nwebgpu_node: ${results.filter((r) => r.startsWith('PASS')).length} passed, ${failures} failed on ${adapterText}`);
detector.destroy();
device.destroy();
if (!opt.out) rmSync(out, { recursive: true, force: true });
process.exit(failures ? 1 : 0);
