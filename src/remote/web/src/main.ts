// qgpu viewer: mean pattern with a draggable virtual detector, the real-space image it gives (from the server,
// or computed in the browser with WebGPU), and the diffraction frame of a clicked scan position.
// State for tests and scripting is on window.qgpuViewer (see ViewerState).
import { DatasetInfo, Detector, datasetPath, getBytes, getJson, isProductCache, virtualQuery } from './api';
import { DetectorOverlay } from './detector_overlay';
import { BrowserCompute, GpuStatus, openDevice } from './gpu_compute';
import { drawPng, drawRgba } from './images';
import { gpuCheck, wgslLimbCheck } from './self_check';

export interface ViewerState {
  ready: boolean;
  dataset: DatasetInfo | null;
  detector: Detector | null;
  meanVersion: number;
  virtualVersion: number;   // bumps each time a real-space image is drawn
  virtualQuery: string;     // the detector query of the image shown
  virtualSource: 'server' | 'browser' | '';
  virtualBytes: Uint8Array | null;  // server PNG bytes of the image shown (server mode)
  busy: boolean;
  frame: { row: number; col: number; version: number; bytes: Uint8Array | null };
  gpu: GpuStatus | null;
  errors: string[];
  gpuCheck: (d?: Detector) => Promise<unknown>;
  wgslLimbCheck: () => Promise<unknown>;
}

const $ = <T extends Element>(id: string) => document.getElementById(id) as unknown as T;
const state: ViewerState = {
  ready: false, dataset: null, detector: null, meanVersion: 0, virtualVersion: 0, virtualQuery: '', virtualSource: '',
  virtualBytes: null, busy: false, frame: { row: -1, col: -1, version: 0, bytes: null }, gpu: null, errors: [],
  gpuCheck: (d?: Detector) => gpuCheck(state, d),
  wgslLimbCheck,
};
(window as unknown as { qgpuViewer: ViewerState }).qgpuViewer = state;

let overlay: DetectorOverlay | null = null;
let browser: BrowserCompute | null = null;
let wanted: Detector | null = null;  // newest detector not yet drawn
let running = false;

function report(e: unknown): void {
  const msg = e instanceof Error ? e.message : String(e);
  state.errors.push(msg);
  $<HTMLElement>('message').textContent = msg;
}

function describeDetector(d: Detector): string {
  const c = `centre (${d.cr.toFixed(2)}, ${d.cc.toFixed(2)})`;
  return d.kind === 'disk' ? `disk ${c}, r ${d.r.toFixed(2)}` : `annulus ${c}, ${d.inner.toFixed(2)}..${d.outer.toFixed(2)}`;
}

// Draws the newest wanted detector; requests never pile up (one in flight, the latest wins).
async function refreshVirtual(): Promise<void> {
  if (running) return;
  running = true;
  state.busy = true;
  try {
    while (wanted) {
      const d = wanted;
      wanted = null;
      const ds = state.dataset!;
      const query = virtualQuery(d);
      const t0 = performance.now();
      if (browser) {
        const sums = await browser.sums(d);
        const pic = await browser.picture(sums);
        drawRgba($('real'), pic.rgba, ds.shape[0], ds.shape[1]);
        state.virtualBytes = null;
        state.virtualSource = 'browser';
        $<HTMLElement>('real-text').textContent =
          `browser WebGPU, detector bin ${browser.bin}${browser.bin > 1 ? ' (approximate geometry)' : ' (exact)'}, ` +
          `${(performance.now() - t0).toFixed(1)} ms`;
      } else {
        // A product cache answers only its cached detectors: match them within the overlay's 0.01 px rounding.
        const tolerance = isProductCache(ds) ? '&tolerance=0.01' : '';
        const { bytes, computeMs } = await getBytes(datasetPath(ds.id, `virtual?${query}&format=png${tolerance}`));
        await drawPng($('real'), bytes);
        state.virtualBytes = bytes;
        state.virtualSource = 'server';
        $<HTMLElement>('real-text').textContent =
          `server (${isProductCache(ds) ? 'product cache' : ds.backend}): compute ${computeMs.toFixed(1)} ms, round trip ${(performance.now() - t0).toFixed(1)} ms`;
      }
      state.virtualQuery = query;
      state.virtualVersion++;
    }
  } catch (e) {
    report(e);
  } finally {
    running = false;
    state.busy = wanted !== null;
    if (wanted) void refreshVirtual();
  }
}

function detectorChanged(d: Detector): void {
  state.detector = d;
  $<HTMLElement>('detector-text').textContent = describeDetector(d);
  wanted = d;
  state.busy = true;
  void refreshVirtual();
}

async function showFrame(row: number, col: number): Promise<void> {
  const ds = state.dataset!;
  try {
    const { bytes, computeMs } = await getBytes(datasetPath(ds.id, `frame?row=${row}&col=${col}&format=png`));
    await drawPng($('frame'), bytes);
    state.frame = { row, col, version: state.frame.version + 1, bytes };
    $<HTMLElement>('frame-text').textContent = `scan (${row}, ${col}), ${computeMs.toFixed(1)} ms`;
    const cursor = $<HTMLElement>('cursor');
    cursor.style.display = 'block';
    cursor.style.left = `${((col + 0.5) / ds.shape[1]) * 100}%`;
    cursor.style.top = `${((row + 0.5) / ds.shape[0]) * 100}%`;
  } catch (e) {
    report(e);
  }
}

async function setBrowserCompute(on: boolean): Promise<void> {
  const box = $<HTMLInputElement>('browser-compute');
  browser?.destroy();
  browser = null;
  if (on) {
    const { device, status } = await openDevice();
    state.gpu = status;
    $<HTMLElement>('gpu-status').textContent = status.available ? `WebGPU: ${status.adapter}` : `no WebGPU: ${status.adapter}`;
    if (!device) {
      box.checked = false;
      return;
    }
    const bc = await BrowserCompute.create(device, state.dataset!);
    const bin = await bc.loadBest(128 << 20);
    if (bin === null) {
      report('the whole scan does not fit a 128 MiB window at any exact detector bin: staying with the server');
      box.checked = false;
      return;
    }
    browser = bc;
  }
  if (state.detector) detectorChanged(state.detector);
}

async function openDataset(ds: DatasetInfo): Promise<void> {
  state.dataset = ds;
  state.ready = false;
  const [sr, sc, dr, dc] = ds.shape;
  $<HTMLElement>('pattern-box').style.aspectRatio = `${dc} / ${dr}`;
  $<HTMLElement>('real-box').style.aspectRatio = `${sc} / ${sr}`;
  $<HTMLElement>('frame-box').style.aspectRatio = `${dc} / ${dr}`;
  const { bytes } = await getBytes(datasetPath(ds.id, 'mean_pattern?format=png'));
  await drawPng($('pattern'), bytes);
  state.meanVersion++;
  const fit = await getJson<{ center_row: number; center_col: number; radius: number }>(datasetPath(ds.id, 'disk_fit'));
  const r = Math.max(1, fit.radius);
  const initial: Detector = { kind: 'disk', cr: fit.center_row, cc: fit.center_col, r, inner: r * 1.5, outer: r * 3 };
  overlay = new DetectorOverlay($('overlay'), dr, dc, initial, detectorChanged);
  overlay.set({ ...initial, kind: $<HTMLSelectElement>('kind').value as Detector['kind'] });
  const browserBox = $<HTMLInputElement>('browser-compute');
  browserBox.disabled = isProductCache(ds);  // no frames in a cache: nothing to compute on in the browser
  if (isProductCache(ds)) {
    browserBox.checked = false;
    $<HTMLElement>('frame-text').textContent =
      'frames need the raw data: this dataset is served from a product cache (cached detectors: bf, abf, adf, ...)';
  } else {
    await showFrame(Math.floor(ds.shape[0] / 2), Math.floor(ds.shape[1] / 2));
  }
  if (browserBox.checked) await setBrowserCompute(true);
  state.ready = true;
}

async function start(): Promise<void> {
  const { datasets } = await getJson<{ datasets: DatasetInfo[] }>('/api/datasets');
  const select = $<HTMLSelectElement>('dataset');
  for (const ds of datasets) select.add(new Option(`${ds.id} (${ds.shape.join('×')} ${ds.dtype}, ${ds.backend})`, ds.id));
  select.addEventListener('change', () => openDataset(datasets.find((d) => d.id === select.value)!).catch(report));
  $<HTMLSelectElement>('kind').addEventListener('change', (e) => {
    if (overlay) overlay.set({ ...overlay.detector, kind: (e.target as HTMLSelectElement).value as Detector['kind'] });
  });
  $<HTMLInputElement>('browser-compute').addEventListener('change', (e) =>
    setBrowserCompute((e.target as HTMLInputElement).checked).catch(report));
  $<HTMLCanvasElement>('real').addEventListener('click', (e) => {
    const ds = state.dataset;
    if (!ds || isProductCache(ds)) return;
    const box = (e.target as HTMLCanvasElement).getBoundingClientRect();
    const row = Math.min(ds.shape[0] - 1, Math.floor(((e.clientY - box.top) / box.height) * ds.shape[0]));
    const col = Math.min(ds.shape[1] - 1, Math.floor(((e.clientX - box.left) / box.width) * ds.shape[1]));
    void showFrame(row, col);
  });
  if (!datasets.length) throw new Error('the server holds no dataset');
  await openDataset(datasets[0]);
}

start().catch(report);
