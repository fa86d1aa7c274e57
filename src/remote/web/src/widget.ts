// The notebook widget qgpu.widget.Show4D (python/quantem/gpu/widget.py): anywidget's contract, an ES module whose
// default export has render({ model, el }). It is built from the viewer's own panels (Panel: colourbar, hover values,
// zoom, PNG / figure / .npy export; DetectorOverlay: the draggable detector; render: colormaps and scales), inside
// a shadow root so that the viewer's style sheet stays out of the notebook's page.
// Protocol (everything over the kernel's comm, so a remote kernel needs no port):
//   Python -> here: custom message {type: "image", panel: "pattern" | "real" | "frame", rows, cols, title,
//                   pixel: [value, "angstrom" | "mrad"] | null, scan_bin (the real panel of a large scan: b x b positions
//                   a pixel, clicks pick the block centre)} with one buffer of rows x cols float32 values;
//                   {type: "error", message}.
//   trait missing: {count, positions} of the dataset's scan positions without a frame (hatched on the real panel).
//   here -> Python: {type: "ready"} when a view opens (Python answers with every image); traits detector (debounced
//                   while dragging), position, product, c1 set with model.set + save_changes.
import type { Detector, DetectorKind } from './api';
import { DetectorOverlay } from './detector_overlay';
import { Panel, formatValue } from './panel';
import { COLORMAPS, ColormapName, DEFAULT_LOOK, Look, SCALES, Scale, isColormap, render as renderValues } from './render';
import { blockCentre } from './scan_bin';
import css from '../style.css';

export interface WidgetModel {
  get(name: string): any;  // eslint-disable-line @typescript-eslint/no-explicit-any
  set(name: string, value: unknown): void;
  save_changes(): void;
  on(event: string, callback: (...args: any[]) => void): void;  // eslint-disable-line @typescript-eslint/no-explicit-any
  off?(event?: string | null, callback?: ((...args: any[]) => void) | null): void;  // eslint-disable-line @typescript-eslint/no-explicit-any
  send(content: unknown, callbacks?: unknown, buffers?: ArrayBuffer[]): void;
}

interface ImageMessage {
  type: 'image';
  panel: 'pattern' | 'real' | 'frame';
  rows: number;
  cols: number;
  title: string;
  pixel: [number, string] | null;
  scan_bin?: number;  // the real panel's: b x b scan positions a pixel (a large scan's virtual image)
}

export const DEBOUNCE_MS = 40;  // drags: at most one update per this many ms, and the last position always sent

const WIDGET_CSS = `
:host { display: block; }
.qgpu-widget { font: 13px system-ui, sans-serif; background: #111; color: #ddd; padding: 0.4em; border-radius: 4px; }
.qgpu-widget .bar { display: flex; gap: 1em; align-items: center; flex-wrap: wrap; padding: 0.2em 0.4em 0.6em; }
.qgpu-widget .status { color: #aaa; font-size: 12px; min-height: 1.2em; padding: 0 0.4em; }
.qgpu-widget .status.error { color: #f88; }
.qgpu-widget main { padding: 0; }
`;

function floats(buffer: unknown): Float32Array {
  if (buffer instanceof DataView) return new Float32Array(buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength));
  if (ArrayBuffer.isView(buffer)) return new Float32Array(buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength));
  if (buffer instanceof ArrayBuffer) return new Float32Array(buffer.slice(0));
  throw new Error('qgpu widget: an image message without its float32 buffer');
}

// Calls fn at most once per `ms` while calls keep coming, and always with the last arguments.
export function debounce<A extends unknown[]>(fn: (...a: A) => void, ms: number): (...a: A) => void {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let last = 0;
  let pending: A | null = null;
  const fire = () => {
    timer = null;
    last = Date.now();
    const a = pending!;
    pending = null;
    fn(...a);
  };
  return (...a: A) => {
    pending = a;
    if (timer) return;
    timer = setTimeout(fire, Math.max(0, ms - (Date.now() - last)));
  };
}

function select(label: string, options: readonly string[], value: string, onChange: (v: string) => void): HTMLLabelElement {
  const l = document.createElement('label');
  l.textContent = `${label} `;
  const s = document.createElement('select');
  s.className = label;
  for (const o of options) s.append(new Option(o, o, o === value, o === value));
  s.addEventListener('change', () => onChange(s.value));
  l.append(s);
  return l;
}

function render({ model, el }: { model: WidgetModel; el: HTMLElement }): () => void {
  const root = el.attachShadow ? el.attachShadow({ mode: 'open' }) : el;
  const style = document.createElement('style');
  style.textContent = css + WIDGET_CSS;
  const box = document.createElement('div');
  box.className = 'qgpu-widget';
  root.append(style, box);
  const abort = new AbortController();

  const look: Look = { ...DEFAULT_LOOK, colormap: isColormap(model.get('colormap')) ? model.get('colormap') : 'inferno' };
  const bar = document.createElement('div');
  bar.className = 'bar';
  const status = document.createElement('div');
  status.className = 'status';
  const main = document.createElement('main');
  box.append(bar, main, status);

  const [, , dr, dc] = model.get('shape') as number[];
  const cal = (model.get('calibration') ?? {}) as { scan?: [number, string] | null; detector?: [number, string] | null };
  const isCache = model.get('source') === 'cache';
  const mrad = (r: number, c: number) => {
    const d = overlay?.detector;
    if (!cal.detector || !d) return '';
    return `${(Math.hypot(r - d.cr, c - d.cc) * cal.detector[0]).toFixed(1)} mrad from the centre`;
  };
  const panels = {
    pattern: new Panel(main, 'pattern', { title: 'Mean diffraction pattern', overlayId: 'overlay', colorbar: true, describe: mrad,
      hint: isCache ? 'the cache\'s mean pattern' : 'drag the detector (its ring to resize), wheel resizes (Shift: inner)' }),
    real: new Panel(main, 'real', { title: 'Real space', colorbar: true, wheelZoom: true,
      hint: isCache ? '' : 'click: the frame of that scan position', describe: () => '' }),
    frame: new Panel(main, 'frame', { title: 'Diffraction frame', overlayId: 'frame-overlay', colorbar: true, wheelZoom: true, describe: mrad }),
  };
  if (isCache) panels.frame.show(false);
  const missingTrait = (model.get('missing') ?? {}) as { count?: number; positions?: number[] };
  const missing = { count: Number(missingTrait.count ?? 0), mask: null as Uint8Array | null };
  if (missing.count) {
    missing.mask = new Uint8Array((model.get('shape') as number[])[0] * (model.get('shape') as number[])[1]);
    for (const q of missingTrait.positions ?? []) if (Number.isInteger(q) && q >= 0 && q < missing.mask.length) missing.mask[q] = 1;
  }
  const values: Partial<Record<keyof typeof panels, { v: Float32Array; m: ImageMessage }>> = {};

  const draw = (name: keyof typeof panels) => {
    const x = values[name];
    if (!x) return;
    const p = panels[name];
    const l: Look = name === 'real' ? look : { ...look, scale: 'log' as Scale, phi: 99.9 };
    // positions without a frame (the real-space panel): hatched, out of the display range, "missing" on hover
    const gone = name === 'real' && missing.mask && missing.mask.length === x.v.length ? missing.mask : null;
    const r = renderValues(gone ? x.v.map((v, i) => (gone[i] ? NaN : v)) : x.v, l);
    if (name === 'real') p.setMissing(gone, x.m.rows, x.m.cols, missing.count);
    p.setTitle(x.m.title);
    p.drawRgba(r.rgba, { values: x.v, rows: x.m.rows, cols: x.m.cols, unit: '' });
    p.drawScale(r, l.colormap, (v) => formatValue(l.scale === 'log' ? Math.expm1(v) : v));
    const px = x.m.pixel;
    p.setScaleBar(px ? px[0] : 0, px ? (px[1] === 'angstrom' ? 'Å' : px[1]) : '', x.m.cols);
    (p.section.dataset as DOMStringMap).version = String(p.version);
  };

  // The detector: dragged on the pattern, drawn on the frame; sent to Python debounced.
  const sendDetector = debounce((d: Detector) => {
    model.set('detector', { ...d });
    model.save_changes();
  }, DEBOUNCE_MS);
  let frameOverlay: DetectorOverlay | null = null;
  const overlay: DetectorOverlay | null = new DetectorOverlay(panels.pattern.overlay!, dr, dc, model.get('detector') as Detector,
    (d) => {
      frameOverlay?.set(d, false);
      if (model.get('product') !== 'virtual') return;
      sendDetector(d);
    }, abort.signal, !isCache);
  frameOverlay = new DetectorOverlay(panels.frame.overlay!, dr, dc, model.get('detector') as Detector, () => {}, abort.signal, false);

  // Controls.
  bar.append(select('product', model.get('products') as string[], model.get('product'), (v) => {
    model.set('product', v);
    model.save_changes();
  }));
  if (!isCache) {
    bar.append(select('detector', ['disk', 'annulus', 'rectangle', 'point'], (model.get('detector') as Detector).kind, (v) => {
      const d = { ...overlay!.detector, kind: v as DetectorKind };
      overlay!.set(d, false);
      frameOverlay!.set(d, false);
      model.set('detector', d);
      model.set('product', 'virtual');
      model.save_changes();
    }));
    const c1 = document.createElement('label');
    c1.textContent = 'SSB C1 (Å) ';
    const input = document.createElement('input');
    input.type = 'number';
    input.className = 'c1';
    input.step = '10';
    input.value = String(model.get('c1'));
    input.addEventListener('change', () => {
      model.set('c1', Number(input.value));
      model.set('product', 'ssb');
      model.save_changes();
    });
    c1.append(input);
    bar.append(c1);
  }
  bar.append(select('colormap', COLORMAPS, look.colormap, (v) => {
    look.colormap = v as ColormapName;
    (Object.keys(panels) as (keyof typeof panels)[]).forEach(draw);
  }));
  bar.append(select('scale', SCALES, look.scale, (v) => {
    look.scale = v as Scale;
    draw('real');
  }));

  // A click on the real-space image picks the scan position of the frame (a binned picture: its block's centre).
  panels.real.viewport.addEventListener('click', (e) => {
    if (isCache || e.altKey) return;
    const at = panels.real.pixelAt(e);
    if (!at) return;
    const b = values.real?.m.scan_bin ?? 1, shape = model.get('shape') as number[];
    model.set('position', b > 1 ? blockCentre(at[0], at[1], b).map((v, k) => Math.min(v, shape[k] - 1)) : at);
    model.save_changes();
  }, { signal: abort.signal });

  const onMessage = (msg: { type: string; message?: string }, buffers: unknown[]) => {
    if (msg.type === 'image') {
      const m = msg as unknown as ImageMessage;
      const v = floats(buffers?.[0]);
      if (v.length !== m.rows * m.cols) throw new Error(`qgpu widget: ${m.panel} has ${v.length} values, not ${m.rows} x ${m.cols}`);
      values[m.panel] = { v, m };
      draw(m.panel);
      status.classList.remove('error');
    } else if (msg.type === 'error') {
      status.textContent = msg.message ?? 'error';
      status.classList.add('error');
    }
  };
  const onStatus = () => {
    if (!status.classList.contains('error')) status.textContent = model.get('status') ?? '';
  };
  const onDetector = () => {
    const d = model.get('detector') as Detector;
    overlay?.set(d, false);
    frameOverlay?.set(d, false);
    const kind = bar.querySelector<HTMLSelectElement>('select.detector');
    if (kind) kind.value = d.kind;
  };
  const onProduct = () => {
    bar.querySelector<HTMLSelectElement>('select.product')!.value = model.get('product');
  };
  model.on('msg:custom', onMessage);
  model.on('change:status', onStatus);
  model.on('change:detector', onDetector);
  model.on('change:product', onProduct);
  abort.signal.addEventListener('abort', () => {
    model.off?.('msg:custom', onMessage);
    model.off?.('change:status', onStatus);
    model.off?.('change:detector', onDetector);
    model.off?.('change:product', onProduct);
  });
  model.send({ type: 'ready' });
  return () => abort.abort();
}

export default { render };
