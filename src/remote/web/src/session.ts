// One dataset's controller: everything that depends on the dataset (its geometry, the detector overlay, every
// fetch) lives here and ends with close(). Listeners it adds use its AbortSignal, so a dataset switch leaves no
// listener of the previous dataset behind; each channel (product, frame, pattern, ...) keeps only its newest
// request: a new one aborts the older, whose answer is never drawn.
import {
  ApiError, DatasetInfo, Detector, LiveStatus, calibrationOf, datasetPath, getBytes, getJson, getRaw, isAbort,
  isProductCache, missingOf, sumValues, virtualQuery,
  basisCentre,
} from './api';
import { DetectorOverlay, outerRadius } from './detector_overlay';
import { pointMask, quadrantMask, rectangleMask, segmentedDpc } from './detector_masks';
import type { BrowserCompute } from './gpu_compute';
import { drawPng } from './images';
import type { Panel } from './panel';
import { colourWheel, fftLogMagnitude, render } from './render';
import { ScanBinChoice, binMask, blockCentre, chooseScanBin } from './scan_bin';
import { ViewerState } from './state';

export interface Panels {
  pattern: Panel;
  real: Panel;
  real2: Panel;
  real3: Panel;
  fft: Panel;
  frame: Panel;
}

interface Shown {  // values of a real-space panel, kept to re-render on display changes
  panel: Panel;
  values: Float32Array;
  rows: number;  // the picture's shape: rows / bin x cols / bin of the scan
  cols: number;
  bin: number;   // scan positions per picture pixel side (scan_bin of the request; 1: full resolution)
  unit: string;
  title: string;
  wheel?: { row: Float32Array; col: Float32Array };
}

// GET disk_fit: the fitted bright-field disk and the default ADF ring of it (detector::default_adf_radii, the
// CLI's; absent when the disk leaves no ring on the detector).
export type Disk = { center_row: number; center_col: number; radius: number; adf_inner?: number; adf_outer?: number };

export class Session {
  readonly life = new AbortController();
  private channels = new Map<string, AbortController>();
  private inflight = new Map<string, number>();
  overlay: DetectorOverlay | null = null;
  frameOverlay: DetectorOverlay | null = null;
  fit: Disk | null = null;
  shown: Shown[] = [];
  browser: BrowserCompute | null = null;
  // A live dataset while its scan runs: the positions received (1), the others drawn empty (not as zero counts).
  received: Uint8Array | null = null;
  // Positions without a frame that the dataset names (missing_positions of its metadata): drawn hatched, left out
  // of the display range, "missing" in the readout.
  missing: { mask: Uint8Array | null; count: number };
  // The display scan bin of virtual images, the CoM, DPC, iDPC and the SSB slider (pickScanBin).
  scanBin = 1;
  scanBinNote = '';
  private binnedMasks = new WeakMap<Uint8Array, Map<number, Uint8Array>>();
  private pendingOf = new WeakMap<Uint8Array, Uint8Array>();

  constructor(
    readonly ds: DatasetInfo,
    private state: ViewerState,
    private panels: Panels,
    private report: (e: unknown) => void,
    private onDetector: (d: Detector) => void,
  ) {
    this.missing = missingOf(ds);
  }

  get rows() { return this.ds.shape[0]; }
  get cols() { return this.ds.shape[1]; }
  get closed() { return this.life.signal.aborted; }

  // The display scan bin (scan_bin.ts) of this dataset, `override` (the URL's scanbin=N) when it divides the scan.
  // A product cache answers full-resolution images only: never binned.
  pickScanBin(override: number | null): ScanBinChoice {
    const c = isProductCache(this.ds)
      ? { bin: 1, note: override !== null ? `scanbin=${override} ignored: a product cache answers full-resolution images` : '' }
      : chooseScanBin(this.rows, this.cols, override);
    this.scanBin = c.bin;
    this.scanBinNote = c.note;
    return c;
  }

  // Scan positions per pixel side of what `panel` shows (1 when it shows nothing binned).
  binOf(panel: Panel): number {
    return this.shown.find((x) => x.panel === panel)?.bin ?? 1;
  }

  // The full-scan position that pixel (row, col) of `panel` picks: the centre of its block on a binned picture.
  scanPositionAt(panel: Panel, row: number, col: number): [number, number] {
    return blockCentre(row, col, this.binOf(panel));
  }

  // The positions not received yet (1) of a received mask (1 = in), kept per mask.
  private notReceived(received: Uint8Array): Uint8Array {
    let m = this.pendingOf.get(received);
    if (!m) this.pendingOf.set(received, (m = received.map((v) => (v ? 0 : 1))));
    return m;
  }

  // A full-resolution position mask (missing, not received) binned as a picture of bin b shows it (kept per mask).
  private maskFor(mask: Uint8Array, b: number): Uint8Array {
    if (b === 1) return mask;
    let m = this.binnedMasks.get(mask);
    if (!m) this.binnedMasks.set(mask, (m = new Map()));
    let out = m.get(b);
    if (!out) m.set(b, (out = binMask(mask, this.rows, this.cols, b)));
    return out;
  }

  close(): void {
    this.life.abort();
    this.browser?.destroy();
    this.browser = null;
    for (const p of Object.values(this.panels)) p.setBusy(false);
    this.state.loading = [];
    this.showLoading();
  }

  listen<K extends keyof HTMLElementEventMap>(target: HTMLElement | Window, type: K, fn: (e: HTMLElementEventMap[K]) => void): void {
    target.addEventListener(type, fn as EventListener, { signal: this.life.signal });
  }

  // A signal for the newest request of `channel` (aborting the previous one) that also ends with the session.
  private newest(channel: string): AbortSignal {
    this.channels.get(channel)?.abort();
    const c = new AbortController();
    this.channels.set(channel, c);
    return AbortSignal.any([this.life.signal, c.signal]);
  }

  // Runs `work` as the newest of `channel`, showing it as loading (header and panels) while it runs. Aborted
  // work (a newer request, a dataset switch) is dropped silently; a 503 (busy) is retried once after 300 ms.
  private async run(channel: string, label: string, panels: Panel[], work: (signal: AbortSignal) => Promise<void>): Promise<boolean> {
    const signal = this.newest(channel);
    this.inflight.set(channel, (this.inflight.get(channel) ?? 0) + 1);
    const entry = `${label}…`;
    this.state.loading.push(entry);
    this.showLoading();
    panels.forEach((p) => p.setBusy(true));
    try {
      try {
        await work(signal);
      } catch (e) {
        if (!(e instanceof ApiError && e.status === 503) || signal.aborted) throw e;
        await new Promise((r) => setTimeout(r, 300));
        if (signal.aborted) return false;
        await work(signal);
      }
      return !signal.aborted;
    } catch (e) {
      if (!isAbort(e) && !signal.aborted) this.report(e);
      return false;
    } finally {
      this.inflight.set(channel, this.inflight.get(channel)! - 1);
      const i = this.state.loading.indexOf(entry);
      if (i >= 0) this.state.loading.splice(i, 1);
      if (!signal.aborted || this.closed) panels.forEach((p) => p.setBusy(false));
      this.showLoading();
    }
  }

  private showLoading(): void {
    const l = this.state.loading;
    document.getElementById('loading')!.textContent = l.length ? `loading: ${l.join(', ')}` : '';
  }

  // Mean pattern (the dark-field halo view) with its values for the readout, the disk fit, the overlays.
  async open(initial: Partial<Detector> | undefined, kind: Detector['kind']): Promise<void> {
    const { pattern, frame } = this.panels;
    const [, , dr, dc] = this.ds.shape;
    const cal = calibrationOf(this.ds);
    pattern.setAspect(dr, dc);
    frame.setAspect(dr, dc);
    await this.drawPattern();
    if (this.closed) return;
    await this.run('fit', 'disk fit', [], async (signal) => {
      this.fit = await getJson<Disk>(datasetPath(this.ds.id, 'disk_fit'), signal);
    });
    if (this.closed) return;
    const r = Math.max(1, this.fit?.radius ?? Math.min(dr, dc) / 8);
    // A product cache answers its cached detectors only: start with the bright-field disk it always holds.
    if (isProductCache(this.ds) && !initial) kind = 'disk';
    // The ring is the service's default ADF ring; without one (no fit, or no room), from the disk edge outwards.
    const start: Detector = {
      kind, cr: this.fit?.center_row ?? (dr - 1) / 2, cc: this.fit?.center_col ?? (dc - 1) / 2, r,
      inner: this.fit?.adf_inner ?? r, outer: this.fit?.adf_outer ?? Math.max(r + 1, Math.min(dr, dc) / 2), h: r, w: r, ...initial,
    };
    const mrad = cal.detector_mrad_per_pixel ?? 0;
    pattern.setAxes(mrad, 'mrad', start.cr, start.cc, dr, dc);
    frame.setAxes(mrad, 'mrad', start.cr, start.cc, dr, dc);
    this.frameOverlay = new DetectorOverlay(document.getElementById('frame-overlay') as unknown as SVGSVGElement, dr, dc,
      start, () => {}, this.life.signal, false);
    this.overlay = new DetectorOverlay(pattern.overlay!, dr, dc, start, (d) => {
      this.frameOverlay?.set(d, false);
      this.onDetector(d);
    }, this.life.signal);
    // With a radial basis, a detector near its centre starts on it (snapped: integer radii, the basis' centre).
    this.overlay.snapTo = basisCentre(this.ds);
    this.overlay.set(start);
  }

  // The detector-space picture: the mean pattern (the dark-field halo view) or the max pattern (log), with values.
  async drawPattern(): Promise<void> {
    const { pattern } = this.panels;
    const [, , dr, dc] = this.ds.shape;
    const kind = this.state.pattern;
    const route = kind === 'max' ? 'max_pattern' : 'mean_pattern';
    await this.run('pattern', `${kind} pattern`, [pattern], async (signal) => {
      const [png, raw] = await Promise.all([
        getBytes(datasetPath(this.ds.id, `${route}?format=png`), signal),
        getRaw(datasetPath(this.ds.id, `${route}?format=f32`), signal),
      ]);
      if (signal.aborted) return;
      await drawPng(pattern.canvas, png.bytes);
      pattern.data = { values: new Float32Array(raw.data), rows: dr, cols: dc, unit: 'counts' };
      pattern.setTitle(kind === 'max' ? 'Max diffraction pattern (log)' : 'Mean diffraction pattern (dark-field halo view)');
      pattern.version++;
      this.state.meanVersion++;
    });
  }

  // A live acquisition: polls its state and redraws the pattern and the product while frames arrive (the images
  // fill as the scan runs; the detector can be moved meanwhile). `onSeries` is told when a new series replaces this
  // one (its shape may differ: the dataset is opened again).
  async followLive(onSeries: () => void, periodMs = 500): Promise<void> {
    if (!this.ds.live) return;
    const el = document.getElementById('live-status');
    let drawn = this.ds.live.frames_received, series = this.ds.live.series_id;
    while (!this.closed) {
      await new Promise((r) => setTimeout(r, periodMs));
      if (this.closed) return;
      let st: LiveStatus;
      try {
        st = await getJson<LiveStatus>(datasetPath(this.ds.id, 'live'), this.life.signal);
      } catch (e) {
        if (!isAbort(e)) this.report(e);
        return;
      }
      if (el) {
        const fps = Math.round(st.stats.frames_per_second).toLocaleString('en-US');
        el.textContent = `live ${st.url}: series ${st.series_id}, ${st.frames_received} / ${st.frames} frames` +
          (st.finished ? ' (finished)' : `, ${fps} frames/s`) + (st.stats.dropped ? `, ${st.stats.dropped} dropped` : '');
      }
      if (st.series_id !== series) {
        series = st.series_id;
        onSeries();
        return;
      }
      if (st.frames_received !== drawn) {
        drawn = st.frames_received;
        try {
          const raw = await getRaw(datasetPath(this.ds.id, 'live/received'), this.life.signal);
          this.received = st.frames_received === st.frames ? null : new Uint8Array(raw.data);
        } catch (e) {
          if (!isAbort(e)) this.report(e);
          return;
        }
        const f = this.state.frame;
        await Promise.all([this.drawPattern(), this.drawProduct(), f.row >= 0 ? this.showFrame(f.row, f.col) : null]);
        this.state.liveFrames = drawn;
      }
      if (!st.receiving && st.finished) {
        await this.refreshMissing();
        return;
      }
    }
  }

  // The finished series' report names the frames that never came (missing_positions): drawn from then on.
  private async refreshMissing(): Promise<void> {
    try {
      const list = await getJson<{ datasets: DatasetInfo[] }>('/api/datasets', this.life.signal);
      const ds = list.datasets.find((d) => d.id === this.ds.id);
      if (!ds || this.closed || ds.shape[0] !== this.rows || ds.shape[1] !== this.cols) return;
      this.missing = missingOf(ds);
      this.received = null;
      this.renderShown();
    } catch (e) {
      if (!isAbort(e)) this.report(e);
    }
  }

  snapToDisk(): void {
    if (!this.overlay || !this.fit) return;
    const d = { ...this.overlay.detector, cr: this.fit.center_row, cc: this.fit.center_col };
    if (d.kind === 'disk') d.r = this.fit.radius;
    this.overlay.set(d);
  }

  // The real-space product the state asks for, drawn on real (+ real2, real3), newest wins.
  async drawProduct(): Promise<void> {
    const s = this.state, ds = this.ds, id = ds.id;
    const { real, real2, real3 } = this.panels;
    const d = s.detector;
    const product = s.product;
    const label = product === 'virtual' ? `${d?.kind ?? ''} image` : product;
    s.busy = true;
    await this.run('product', label, [real, real2, real3], async (signal) => {
      const f32 = async (path: string) => {
        const raw = await getRaw(datasetPath(id, path), signal);
        return { values: new Float32Array(raw.data), ms: raw.computeMs };
      };
      let shown: Shown[] = [];
      let query = '', ms = NaN, source: 'server' | 'browser' = 'server';
      // virtual images, the CoM and the SSB slider of a large scan come binned (the browser's WebGPU sums are full
      // resolution)
      const b = (product === 'virtual' && !this.browser) || ['com', 'dpc', 'idpc', 'ssb'].includes(product) ? this.scanBin : 1;
      const sb = b > 1 ? `&scan_bin=${b}` : '';
      const shape = { rows: this.rows / b, cols: this.cols / b, bin: b }, full = { rows: this.rows, cols: this.cols, bin: 1 };
      const checkShape = (got: number[], what: string) => {
        if (got.length && (got[0] !== shape.rows || got[1] !== shape.cols))
          throw new Error(`${what}: the server answered ${got.join(' x ')}, not ${shape.rows} x ${shape.cols}`);
      };
      const t0 = performance.now();
      if (product === 'virtual') {
        if (!d) return;
        if (d.kind === 'quadrants') {
          const segs = await Promise.all([0, 1, 2, 3].map((q) => this.postMask(quadrantMask(ds.shape[2], ds.shape[3], d, q), signal, b)));
          segs.forEach((x) => checkShape(x.shape, 'quadrant sums'));
          const { row, col } = segmentedDpc(segs.map((x) => x.values));
          ms = segs.reduce((a, x) => a + x.ms, 0);
          query = `quadrants cr=${d.cr} cc=${d.cc} inner=${d.inner} outer=${d.outer}`;
          shown = this.vectorPanels(row, col, 'segmented DPC', '', shape);
        } else if (d.kind === 'rectangle' || d.kind === 'point') {
          const mask = d.kind === 'rectangle' ? rectangleMask(ds.shape[2], ds.shape[3], d) : pointMask(ds.shape[2], ds.shape[3], d);
          const r = await this.postMask(mask, signal, b);
          checkShape(r.shape, `${d.kind} detector`);
          ms = r.ms;
          query = d.kind === 'rectangle' ? `rectangle cr=${d.cr} cc=${d.cc} h=${d.h} w=${d.w}` : `point r=${Math.round(d.cr)} c=${Math.round(d.cc)}`;
          shown = [{ panel: real, values: Float32Array.from(r.values), unit: 'counts', title: `${d.kind} detector`, ...shape }];
        } else if (this.browser) {
          const sums = await this.browser.sums(d);
          query = virtualQuery(d);
          source = 'browser';
          shown = [{ panel: real, values: Float32Array.from(sums, (v) => Number(v)), unit: 'counts', title: `${d.kind} detector`, ...full }];
        } else {
          // A product cache answers only its cached detectors: match them within the overlay's 0.01 px rounding.
          const tolerance = isProductCache(ds) ? '&tolerance=0.01' : '';
          query = virtualQuery(d);
          const raw = await getRaw(datasetPath(id, `virtual?${query}&format=u64${tolerance}${sb}`), signal);
          checkShape(raw.shape, `${d.kind} detector`);
          ms = raw.computeMs;
          s.cachedProduct = raw.headers.get('X-Cached-Product') ?? '';
          shown = [{ panel: real, values: Float32Array.from(sumValues(raw)), unit: 'counts', title: `${d.kind} detector`, ...shape }];
        }
      } else if (product === 'com' || product === 'dpc') {
        const at = shape;
        query = `${product}?format=f32${sb}`;
        const r = await f32(query);
        ms = r.ms;
        const n = at.rows * at.cols;
        if (r.values.length !== 2 * n) throw new Error(`${product}: ${r.values.length} values, not 2 x ${at.rows} x ${at.cols}`);
        const row = r.values.subarray(0, n), col = r.values.subarray(n, 2 * n);
        shown = product === 'dpc' ? this.vectorPanels(row, col, 'centred DPC', 'px', shape)
          : [{ panel: real, values: row, unit: 'px', title: 'CoM row', ...at }, { panel: real2, values: col, unit: 'px', title: 'CoM col', ...at }];
      } else if (product === 'idpc') {
        query = `idpc?format=f32${sb}`;
        const r = await f32(query);
        ms = r.ms;
        if (r.values.length !== shape.rows * shape.cols) throw new Error(`idpc: ${r.values.length} values, not ${shape.rows} x ${shape.cols}`);
        shown = [{ panel: real, values: r.values, unit: '', title: 'iDPC', ...shape }];
      } else if (product === 'ssb') {
        query = `ssb?format=f32&bin=${s.ssbBin}&defocus=${s.defocus}${sb}`;
        const r = await f32(query);
        ms = r.ms;
        if (r.values.length !== shape.rows * shape.cols) throw new Error(`ssb: ${r.values.length} values, not ${shape.rows} x ${shape.cols}`);
        shown = [{ panel: real, values: r.values, unit: 'rad', title: `SSB phase, C1 ${s.defocus} Å`, ...shape }];
      }
      if (signal.aborted) return;
      this.shown = shown;
      this.renderShown();
      s.virtualQuery = query;
      s.virtualSource = source;
      const where = source === 'browser'
        ? `browser WebGPU, detector bin ${this.browser!.bin}${this.browser!.bin > 1 ? ' (approximate geometry)' : ' (exact)'}`
        : `server (${isProductCache(ds) ? 'product cache' : ds.backend}): compute ${ms.toFixed(1)} ms`;
      // a binned answer is a coarse one: said on the panel (and why an asked-for bin was not taken)
      const binned = shown.some((x) => x.bin > 1)
        ? `; binned ${b}×${b} scan positions (${product === 'com' ? 'the CoM of each block'
          : product === 'dpc' || product === 'idpc' ? 'from the CoM of each block'
          : product === 'ssb' ? 'low-pass: the spectrum below the binned grid\'s Nyquist' : 'exact sums'}): ` +
          `${shape.rows}×${shape.cols} of ${this.rows}×${this.cols}` : '';
      const note = this.scanBinNote ? `; ${this.scanBinNote}` : '';
      real.text.textContent = `${where}, round trip ${(performance.now() - t0).toFixed(1)} ms${binned}${note}`;
      real.text.dataset.scanBin = String(b);
      s.virtualVersion++;
    });
    if (!this.inflight.get('product') || this.closed) s.busy = false;
  }

  private vectorPanels(row: Float32Array, col: Float32Array, title: string, unit: string,
    shape: { rows: number; cols: number; bin: number }): Shown[] {
    const mag = row.map((v, i) => Math.hypot(v, col[i]));
    return [
      { panel: this.panels.real, values: mag, unit, title: `${title} (colour wheel: hue = direction, value = magnitude)`, wheel: { row, col }, ...shape },
      { panel: this.panels.real2, values: row, unit, title: `${title} row`, ...shape },
      { panel: this.panels.real3, values: col, unit, title: `${title} col`, ...shape },
    ];
  }

  // The sums of a POSTed mask (scan_bin b: of b x b blocks of positions).
  private async postMask(mask: Uint8Array, signal: AbortSignal, b: number): Promise<{ values: Float64Array; ms: number; shape: number[] }> {
    const raw = await getRaw(datasetPath(this.ds.id, `virtual?format=u64&dtype=uint8${b > 1 ? `&scan_bin=${b}` : ''}`), signal, {
      method: 'POST', body: mask as BlobPart, headers: { 'Content-Type': 'application/octet-stream' },
    });
    return { values: sumValues(raw), ms: raw.computeMs, shape: raw.shape };
  }

  // Re-renders the kept values with the current look (no request).
  renderShown(): void {
    const { real, real2, real3, fft } = this.panels;
    const look = this.state.look;
    const used = new Set(this.shown.map((x) => x.panel));
    for (const p of [real2, real3]) p.show(used.has(p));
    const cal = calibrationOf(this.ds);
    const miss = this.missing;
    for (const p of [real, real2, real3]) p.setMissing(miss.mask, this.rows, this.cols, miss.count);
    for (const x of this.shown) {
      const data = { values: x.values, rows: x.rows, cols: x.cols, unit: x.unit };
      x.panel.setTitle(x.bin > 1 ? `${x.title} (binned ${x.bin}×${x.bin})` : x.title);
      x.panel.setScaleBar((cal.scan_step_angstrom ?? 0) * x.bin, 'Å', x.cols);
      // positions without a frame / not received yet, binned as the picture: a block holding one is drawn so
      const gone = miss.mask ? this.maskFor(miss.mask, x.bin) : null;
      const notIn = this.received && this.received.length === this.rows * this.cols ? this.maskFor(this.notReceived(this.received), x.bin) : null;
      x.panel.setMissing(gone, x.rows, x.cols, miss.count);
      if (x.wheel) {
        const w = colourWheel(x.wheel.row, x.wheel.col);
        x.panel.drawRgba(w.rgba, data);
        x.panel.drawWheelLegend(`${w.scale.toPrecision(3)}${x.unit ? ' ' + x.unit : ''} (99th percentile)`);
        continue;
      }
      // positions not received yet are drawn empty and left out of the display range
      // and so are the positions without a frame
      const hole = gone && gone.length === x.values.length ? gone : null;
      const values = notIn || hole ? x.values.map((v, i) => (notIn?.[i] || hole?.[i] ? NaN : v)) : x.values;
      const r = render(values, look);
      x.panel.drawRgba(r.rgba, data);
      x.panel.drawScale(r, look.colormap, (v) => formatScaled(v, look.scale));
    }
    fft.show(this.state.fft);
    if (this.state.fft && this.shown.length) {
      const main = this.shown[0];
      const values = fftLogMagnitude(main.values, main.rows, main.cols);
      const r = render(values, { ...look, scale: 'linear' });
      fft.drawRgba(r.rgba, { values, rows: main.rows, cols: main.cols, unit: 'log(1+|F|)' });
      fft.setTitle(`FFT of ${main.title.replace(/ \(colour wheel.*\)/, ' magnitude')}${main.bin > 1 ? ` (binned ${main.bin}×${main.bin})` : ''}`);
      fft.drawScale(r, look.colormap, (v) => v.toPrecision(3));
      const step = (cal.scan_step_angstrom ?? 0) * main.bin;
      fft.setScaleBar(step > 0 ? 1 / (step * main.cols) : 0, 'Å⁻¹', main.cols);
    }
    this.placeCursor();
  }

  // The diffraction frame of a scan position (newest wins), the cursor on the real-space panels.
  async showFrame(row: number, col: number): Promise<void> {
    if (isProductCache(this.ds)) return;
    row = Math.min(Math.max(row, 0), this.rows - 1);
    col = Math.min(Math.max(col, 0), this.cols - 1);
    const { frame } = this.panels;
    this.state.frame = { ...this.state.frame, row, col };
    this.placeCursor();
    await this.run('frame', 'frame', [frame], async (signal) => {
      const { bytes, computeMs } = await getBytes(datasetPath(this.ds.id, `frame?row=${row}&col=${col}&format=png`), signal);
      if (signal.aborted) return;
      await drawPng(frame.canvas, bytes);
      frame.data = { values: null, rows: this.ds.shape[2], cols: this.ds.shape[3], unit: '' };
      frame.version++;
      this.state.frame = { row, col, version: this.state.frame.version + 1, bytes };
      const gone = this.missing.mask?.[row * this.cols + col] ? ': missing, no frame at this position (drawn empty)' : '';
      frame.text.textContent = `scan (${row}, ${col})${gone}, ${computeMs.toFixed(1)} ms`;
    });
  }

  placeCursor(): void {
    const { row, col } = this.state.frame;
    for (const p of [this.panels.real, this.panels.real2, this.panels.real3, this.panels.fft]) {
      let c = p.stack.querySelector<HTMLElement>('.cursor');
      if (!c) {
        c = document.createElement('div');
        c.className = 'cursor';
        p.stack.append(c);
      }
      const show = row >= 0 && p !== this.panels.fft;
      c.style.display = show ? 'block' : 'none';
      // on a binned picture: the centre of the block holding the position
      const b = this.binOf(p);
      c.style.left = `${((Math.floor(col / b) + 0.5) / (this.cols / b)) * 100}%`;
      c.style.top = `${((Math.floor(row / b) + 0.5) / (this.rows / b)) * 100}%`;
    }
  }

  describeDetector(d: Detector): string {
    const mrad = calibrationOf(this.ds).detector_mrad_per_pixel;
    const m = (...px: number[]) => (mrad ? ` (${px.map((p) => (p * mrad).toFixed(1)).join('..')} mrad)` : '');
    const c = `centre (${d.cr.toFixed(2)}, ${d.cc.toFixed(2)})`;
    switch (d.kind) {
      case 'disk': return `disk ${c}, r ${d.r.toFixed(2)} px${m(d.r)}`;
      case 'annulus': return `annulus ${c}, ${d.inner.toFixed(2)}..${d.outer.toFixed(2)} px${m(d.inner, outerRadius(d))}`;
      case 'rectangle': return `rectangle ${c}, half height ${d.h.toFixed(2)}, half width ${d.w.toFixed(2)} px`;
      case 'point': return `point (${Math.round(d.cr)}, ${Math.round(d.cc)})`;
      case 'quadrants': return `4 quadrants ${c}, ${d.inner.toFixed(2)}..${d.outer.toFixed(2)} px${m(d.inner, d.outer)}`;
    }
  }

  // Readout extra of a detector pixel: its scattering angle from the detector centre.
  detectorAngle(row: number, col: number): string {
    const mrad = calibrationOf(this.ds).detector_mrad_per_pixel;
    const d = this.overlay?.detector;
    if (!mrad || !d) return '';
    const kr = (row - d.cr) * mrad, kc = (col - d.cc) * mrad;
    return `k = (${kr.toFixed(1)}, ${kc.toFixed(1)}) mrad, |k| ${Math.hypot(kr, kc).toFixed(1)} mrad`;
  }

  // Readout extra of pixel (row, col) of a real-space panel: its scan positions when binned, the distance.
  scanPosition(row: number, col: number, panel?: Panel): string {
    const b = panel ? this.binOf(panel) : 1;
    const block = b > 1 ? `scan rows ${row * b}..${row * b + b - 1}, cols ${col * b}..${col * b + b - 1}` : '';
    const step = calibrationOf(this.ds).scan_step_angstrom;
    if (!step) return block;
    const f = (v: number) => (v * step >= 10 ? `${((v * step) / 10).toFixed(2)} nm` : `${(v * step).toFixed(2)} Å`);
    const [r, c] = b > 1 ? [row * b + (b - 1) / 2, col * b + (b - 1) / 2] : [row, col];
    return `${block ? block + ', ' : ''}at (${f(r)}, ${f(c)})`;
  }
}

function formatScaled(v: number, scale: string): string {
  const shown = scale === 'log' ? Math.expm1(v) : scale === 'signed_log' ? Math.sign(v) * Math.expm1(Math.abs(v)) : v;
  const a = Math.abs(shown);
  return a !== 0 && (a < 1e-3 || a >= 1e5) ? shown.toExponential(2) : Number(shown.toPrecision(4)).toString();
}
