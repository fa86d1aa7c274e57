// qgpu viewer: mean pattern with a draggable virtual detector, the real-space product it gives (virtual image,
// CoM, centred DPC, iDPC, SSB; from the server, or a virtual image computed in the browser with WebGPU), and the
// diffraction frame of a scan position. Page-wide controls are wired once here; everything that depends on the
// dataset lives in a Session (session.ts), closed on a dataset switch. State: window.qgpuViewer (state.ts).
import { DatasetInfo, Detector, DetectorKind, connection, getJson, isProductCache } from './api';
import { BrowserCompute, openDevice } from './gpu_compute';
import { Panel } from './panel';
import { COLORMAPS, ColormapName, SCALES, Scale, isColormap } from './render';
import { gpuCheck, wgslLimbCheck } from './self_check';
import { Panels, Session } from './session';
import { fromHash, pythonCode, toHash, UrlState } from './share';
import { PRODUCTS, ProductId, state } from './state';

const $ = <T extends Element = HTMLInputElement>(id: string) => document.getElementById(id) as unknown as T;
state.gpuCheck = (d?: Detector) => gpuCheck(state, d);
state.wgslLimbCheck = wgslLimbCheck;

let session: Session | null = null;
let datasets: DatasetInfo[] = [];
let pending: UrlState = fromHash(location.hash);  // URL state applied when its dataset opens

function report(e: unknown): void {
  const msg = e instanceof Error ? e.message : String(e);
  state.errors.push(msg);
  $<HTMLElement>('message').textContent = msg;
}

// Request log for tests (fetch is wrapped once; the log is what the page asked for, in order).
const realFetch = window.fetch.bind(window);
window.fetch = (input: RequestInfo | URL, init?: RequestInit) => {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  if (url.startsWith('/api/')) state.requests.push(`${init?.method ?? 'GET'} ${url}`);
  return realFetch(input, init);
};

const panelsHost = $<HTMLElement>('panels');
const panels: Panels = {
  pattern: new Panel(panelsHost, 'pattern', {
    title: 'Mean diffraction pattern', hint: 'drag the detector (its ring to resize), wheel resizes (Shift: inner), Ctrl+wheel zooms',
    overlayId: 'overlay', describe: (r, c) => session?.detectorAngle(r, c) ?? '',
  }),
  real: new Panel(panelsHost, 'real', {
    title: 'Real space', hint: 'click or arrow keys (Shift: ×8): scan position; wheel zooms, Alt+drag pans', colorbar: true, wheelZoom: true,
    describe: (r, c) => session?.scanPosition(r, c, panels.real) ?? '',
  }),
  real2: new Panel(panelsHost, 'real2', { title: '', colorbar: true, wheelZoom: true, describe: (r, c) => session?.scanPosition(r, c, panels.real2) ?? '' }),
  real3: new Panel(panelsHost, 'real3', { title: '', colorbar: true, wheelZoom: true, describe: (r, c) => session?.scanPosition(r, c, panels.real3) ?? '' }),
  fft: new Panel(panelsHost, 'fft', { title: 'FFT', colorbar: true, wheelZoom: true }),
  frame: new Panel(panelsHost, 'frame', {
    title: 'Diffraction frame (log)', overlayId: 'frame-overlay', wheelZoom: true,
    describe: (r, c) => session?.detectorAngle(r, c) ?? '',
  }),
};
(window as unknown as { qgpuPanels: Panels }).qgpuPanels = panels;  // for tests: values, versions, exports
panels.real2.show(false);
panels.real3.show(false);
panels.fft.show(false);

function updateUrl(): void {
  if (!state.ready) return;
  state.python = pythonCode(state);
  $<HTMLElement>('python').textContent = '';
  history.replaceState(null, '', toHash(state));
}

function showDetectorInputs(d: Detector): void {
  const set = (id: string, v: number) => {
    const input = $(id);
    if (document.activeElement !== input) input.value = String(v);
  };
  set('det-cr', d.cr);
  set('det-cc', d.cc);
  set('det-r', d.r);
  set('det-inner', d.inner);
  set('det-outer', d.outer);
  set('det-h', d.h);
  set('det-w', d.w);
  $<HTMLSelectElement>('kind').value = d.kind;
  const show = (cls: string, on: boolean) =>
    document.querySelectorAll<HTMLElement>(`.${cls}`).forEach((e) => (e.style.display = on ? '' : 'none'));
  show('det-disk', d.kind === 'disk');
  show('det-ring', d.kind === 'annulus' || d.kind === 'quadrants');
  show('det-rect', d.kind === 'rectangle');
}

function detectorChanged(s: Session, d: Detector): void {
  if (s !== session) return;
  state.detector = d;
  panels.pattern.text.textContent = s.describeDetector(d);
  showDetectorInputs(d);
  if (state.product === 'virtual') void s.drawProduct();
  updateUrl();
}

function productChanged(): void {
  const p = state.product;
  $<HTMLElement>('ssb-controls').hidden = p !== 'ssb';
  $<HTMLSelectElement>('product').value = p;
  if (session) void session.drawProduct();
  updateUrl();
}

async function openDataset(ds: DatasetInfo): Promise<void> {
  session?.close();
  const s = new Session(ds, state, panels, report, (d) => detectorChanged(s, d));
  session = s;
  state.sessions++;
  state.dataset = ds;
  state.ready = false;
  state.detector = null;
  state.frame = { row: -1, col: -1, version: state.frame.version, bytes: null };
  const frameCanvas = panels.frame.canvas;
  frameCanvas.getContext('2d')!.clearRect(0, 0, frameCanvas.width, frameCanvas.height);  // no frame of another dataset
  panels.frame.text.textContent = '';
  $<HTMLSelectElement>('dataset').value = ds.id;
  const url = pending.ds === ds.id || (!pending.ds && state.sessions === 1) ? pending : {};
  pending = {};
  if (url.product) state.product = url.product;
  if (url.look) setLook(url.look, false);
  if (url.fft !== undefined) state.fft = url.fft;
  // The display scan bin of a large scan (scan_bin.ts); an override that does not fit the scan is dropped, with a note.
  const bin = s.pickScanBin(url.scanBin ?? null);
  state.scanBin = bin.bin;
  state.scanBinNote = bin.note;
  state.scanBinOverride = url.scanBin !== undefined && bin.bin === url.scanBin ? url.scanBin : null;
  $('fft').checked = state.fft;
  const cal = ds.metadata?.calibration;
  state.defocus = url.defocus ?? cal?.defocus_angstrom ?? 0;
  $('defocus').value = $('defocus-value').value = String(state.defocus);
  $<HTMLElement>('ssb-controls').hidden = state.product !== 'ssb';
  $<HTMLSelectElement>('product').value = state.product;
  const browserBox = $('browser-compute');
  const cache = isProductCache(ds);  // no frames in a cache: nothing to compute on
  // The WebGPU virtual detectors sum unsigned counts: signed and float data are summed by the server.
  browserBox.disabled = cache || !['uint8', 'uint16', 'uint32'].includes(ds.dtype);
  browserBox.title = browserBox.disabled
    ? (cache ? 'a product cache holds no frames' : `the browser sums unsigned counts; this dataset holds ${ds.dtype}`) : '';
  if (browserBox.disabled) browserBox.checked = false;
  // Products that need the raw data are not offered for a cache.
  for (const o of Array.from($<HTMLSelectElement>('product').options)) o.disabled = cache && o.value === 'ssb';
  const patternKind = $<HTMLSelectElement>('pattern-kind');
  patternKind.options[1].disabled = cache;  // the max pattern needs the frames
  if (cache) state.pattern = 'mean';
  patternKind.value = state.pattern;
  await s.open(url.det, (url.det?.kind ?? $<HTMLSelectElement>('kind').value) as DetectorKind);
  if (s.closed) return;
  if (cache) {
    panels.frame.text.textContent =
      'frames need the raw data: this dataset is served from a product cache (cached detectors: bf, abf, adf, ...)';
  } else {
    const [row, col] = url.pos ?? [Math.floor(ds.shape[0] / 2), Math.floor(ds.shape[1] / 2)];
    await s.showFrame(row, col);
  }
  if (s.closed) return;
  if (browserBox.checked) await setBrowserCompute(true);
  if (state.product !== 'virtual') await s.drawProduct();
  state.ready = true;
  updateUrl();
  // A live acquisition: redraw while frames arrive; a new series (maybe of another shape) opens the dataset again.
  if (ds.live) void s.followLive(() => void reopen(ds.id));
}

// The dataset `id` described again (a live dataset's new series) and opened.
async function reopen(id: string): Promise<void> {
  const list = await getJson<DatasetInfo[]>('/api/datasets');
  const ds = list.find((d) => d.id === id);
  if (ds) await openDataset(ds);
}

async function setBrowserCompute(on: boolean): Promise<void> {
  const s = session;
  if (!s) return;
  const box = $('browser-compute');
  s.browser?.destroy();
  s.browser = null;
  if (on) {
    const { device, status } = await openDevice();
    state.gpu = status;
    $<HTMLElement>('gpu-status').textContent = status.available ? `WebGPU: ${status.adapter}` : `no WebGPU: ${status.adapter}`;
    if (!device) {
      box.checked = false;
      return;
    }
    const bc = await BrowserCompute.create(device, s.ds);
    const entry = 'frame window for WebGPU…';
    state.loading.push(entry);
    $<HTMLElement>('loading').textContent = `loading: ${state.loading.join(', ')}`;
    let bin: number | null;
    try {
      bin = await bc.loadBest(128 << 20);
    } finally {
      state.loading = state.loading.filter((x) => x !== entry);
      $<HTMLElement>('loading').textContent = state.loading.length ? `loading: ${state.loading.join(', ')}` : '';
    }
    if (s.closed) {
      bc.destroy();
      return;
    }
    if (bin === null) {
      bc.destroy();
      report('the whole scan does not fit a 128 MiB window at any exact detector bin: staying with the server');
      box.checked = false;
      return;
    }
    s.browser = bc;
  }
  if (state.detector) void s.drawProduct();
}

function setLook(look: typeof state.look, redraw = true): void {
  state.look = { ...look };
  $<HTMLSelectElement>('colormap').value = look.colormap;
  $<HTMLSelectElement>('scale').value = look.scale;
  $('plo').value = String(look.plo);
  $('phi').value = String(look.phi);
  $('gamma').value = String(look.gamma);
  $<HTMLElement>('gamma-value').textContent = String(look.gamma);
  if (redraw) {
    session?.renderShown();
    updateUrl();
  }
}

function lookFromControls(): void {
  let plo = Number($('plo').value), phi = Number($('phi').value);
  if (!(plo >= 0 && plo < 100)) plo = 0;
  if (!(phi > plo && phi <= 100)) phi = 100;
  setLook({
    colormap: $<HTMLSelectElement>('colormap').value as ColormapName,
    scale: $<HTMLSelectElement>('scale').value as Scale,
    plo, phi, gamma: Number($('gamma').value) || 1,
  });
}

// Arrow keys step the scan position (Shift: 8 at a time), unless typing in a field.
function keyStep(e: KeyboardEvent): void {
  const s = session;
  if (!s || (e.target as HTMLElement).closest?.('input, select, textarea')) return;
  const step = (e.shiftKey ? 8 : 1) * s.binOf(panels.real);  // binned: a picture pixel (block) at a time
  const moves: Record<string, [number, number]> = { ArrowUp: [-step, 0], ArrowDown: [step, 0], ArrowLeft: [0, -step], ArrowRight: [0, step] };
  const m = moves[e.key];
  if (!m || state.frame.row < 0) return;
  e.preventDefault();
  void s.showFrame(state.frame.row + m[0], state.frame.col + m[1]).then(updateUrl);
}

// While the server is unreachable: a banner, stale panels, and a retry every 2 s; back online: redraw.
let retry: number | undefined;
connection.listeners.push((online) => {
  state.online = online;
  $<HTMLElement>('offline').hidden = online;
  for (const p of Object.values(panels)) p.markStale(!online);
  if (!online && retry === undefined) {
    retry = window.setInterval(() => getJson('/api/datasets').catch(() => {}), 2000);
  } else if (online) {
    window.clearInterval(retry);
    retry = undefined;
    $<HTMLElement>('message').textContent = '';
    if (session && state.detector) void session.drawProduct();
  }
});

function wireControls(): void {
  const select = $<HTMLSelectElement>('dataset');
  for (const ds of datasets) select.add(new Option(`${ds.id} (${ds.shape.join('×')} ${ds.dtype}, ${ds.backend})`, ds.id));
  select.addEventListener('change', () => openDataset(datasets.find((d) => d.id === select.value)!).catch(report));
  const product = $<HTMLSelectElement>('product');
  for (const p of PRODUCTS) product.add(new Option(p.label, p.id));
  product.addEventListener('change', () => {
    state.product = product.value as ProductId;
    productChanged();
  });
  $<HTMLSelectElement>('kind').addEventListener('change', (e) => {
    const o = session?.overlay;
    if (o) o.set({ ...o.detector, kind: (e.target as HTMLSelectElement).value as DetectorKind });
  });
  for (const f of ['cr', 'cc', 'r', 'inner', 'outer', 'h', 'w'] as const)
    $(`det-${f}`).addEventListener('change', (e) => {
      const o = session?.overlay, v = Number((e.target as HTMLInputElement).value);
      if (o && Number.isFinite(v)) o.set({ ...o.detector, [f]: v });
    });
  $('snap').addEventListener('click', () => session?.snapToDisk());
  $<HTMLSelectElement>('pattern-kind').addEventListener('change', (e) => {
    state.pattern = (e.target as HTMLSelectElement).value as 'mean' | 'max';
    void session?.drawPattern();
  });
  $('browser-compute').addEventListener('change', (e) => setBrowserCompute((e.target as HTMLInputElement).checked).catch(report));
  const cm = $<HTMLSelectElement>('colormap'), sc = $<HTMLSelectElement>('scale');
  for (const c of COLORMAPS) cm.add(new Option(c, c));
  for (const s of SCALES) sc.add(new Option(s.replace('_', '-'), s));
  for (const id of ['colormap', 'scale', 'plo', 'phi']) $(id).addEventListener('change', lookFromControls);
  $('gamma').addEventListener('input', lookFromControls);
  $('fft').addEventListener('change', (e) => {
    state.fft = (e.target as HTMLInputElement).checked;
    session?.renderShown();
    updateUrl();
  });
  const defocus = (v: number) => {
    state.defocus = v;
    $('defocus').value = $('defocus-value').value = String(v);
    if (state.product === 'ssb') void session?.drawProduct();
    updateUrl();
  };
  $('defocus').addEventListener('input', (e) => defocus(Number((e.target as HTMLInputElement).value)));
  $('defocus-value').addEventListener('change', (e) => {
    const v = Number((e.target as HTMLInputElement).value);
    if (Number.isFinite(v)) defocus(v);
  });
  $<HTMLSelectElement>('ssb-bin').addEventListener('change', (e) => {
    state.ssbBin = Number((e.target as HTMLSelectElement).value);
    if (state.product === 'ssb') void session?.drawProduct();
    updateUrl();
  });
  $('ssb-fit').addEventListener('click', async () => {
    const s = session;
    if (!s) return;
    const button = $<HTMLButtonElement>('ssb-fit');
    const label = button.textContent;
    button.disabled = true;
    button.textContent = 'fitting…';
    try {
      const f = await getJson<{ defocus_angstrom: number }>(`/api/datasets/${encodeURIComponent(s.ds.id)}/ssb_fit?bin=${state.ssbBin}`,
        s.life.signal);
      if (s === session) defocus(Math.round(f.defocus_angstrom));
    } catch (e) {
      if (!s.closed) report(e);
    } finally {
      button.disabled = false;
      button.textContent = label;
    }
  });
  $('copy-python').addEventListener('click', () => {
    state.python = pythonCode(state);
    $<HTMLElement>('python').textContent = state.python;
    navigator.clipboard?.writeText(state.python).catch(() => {});
  });
  $('copy-link').addEventListener('click', () => {
    updateUrl();
    navigator.clipboard?.writeText(location.href).catch(() => {});
  });
  for (const p of [panels.real, panels.real2, panels.real3])
    p.canvas.addEventListener('click', (e) => {
      const at = p.pixelAt(e);
      // a binned picture's pixel picks the centre position of its block; the frame is the full-resolution one
      if (at && session) void session.showFrame(...session.scanPositionAt(p, at[0], at[1])).then(updateUrl);
    });
  window.addEventListener('keydown', keyStep);
}

async function start(): Promise<void> {
  const list = await getJson<{ datasets: DatasetInfo[]; defaults?: { colormap?: string } }>('/api/datasets');
  datasets = list.datasets;
  wireControls();
  // The service's default colormap (display/defaults.hpp, the CLI's too), unless the URL holds a look.
  if (isColormap(list.defaults?.colormap)) setLook({ ...state.look, colormap: list.defaults.colormap }, false);
  if (!datasets.length) throw new Error('the server holds no dataset');
  await openDataset(datasets.find((d) => d.id === pending.ds) ?? datasets[0]);
}

start().catch(report);
