// One image panel of the viewer: canvas (+ optional SVG overlay) with zoom (Ctrl+wheel, or the wheel where no
// overlay takes it; double-click resets) and pan (drag with Alt or the middle button), a value readout on hover,
// colourbar with values, histogram with the contrast limits, a scale bar, a loading/stale state, and export of
// the picture (PNG) and of the values (.npy). Panels are created once; what they show changes per dataset.
// Scan positions without a frame (setMissing) are drawn hatched over the picture, with a legend line and "missing"
// in the readout: they are not zero counts.
import { hsv, npyBytes, Rendered, tableOf, ColormapName } from './render';

export interface PanelData {
  values: ArrayLike<number> | null;  // what the readout and .npy export give (null: picture only)
  rows: number;
  cols: number;
  unit: string;
}

export interface PanelOptions {
  title: string;
  hint?: string;
  overlayId?: string;  // an SVG overlay with this id over the canvas
  colorbar?: boolean;
  wheelZoom?: boolean;  // plain wheel zooms (else Ctrl+wheel only)
  describe?: (row: number, col: number) => string;  // extra readout text (e.g. mrad)
}

const el = <K extends keyof HTMLElementTagNameMap>(tag: K, cls = '', text = '') => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text) e.textContent = text;
  return e;
};

export class Panel {
  readonly section: HTMLElement;
  readonly canvas: HTMLCanvasElement;
  readonly overlay: SVGSVGElement | null = null;
  readonly stack: HTMLElement;
  readonly viewport: HTMLElement;
  readonly text: HTMLElement;
  readonly readout: HTMLElement;
  readonly titleEl: HTMLElement;
  private colorbar: HTMLCanvasElement | null = null;
  private colorbarBox: HTMLElement | null = null;
  private colorbarLabels: HTMLElement | null = null;
  private histogram: HTMLCanvasElement | null = null;
  private scalebar: HTMLElement;
  private bar: { pixels: number; label: string } | null = null;  // the scale bar: length in image pixels, label
  private missing: Uint8Array | null = null;  // 1 at the positions without a frame (rows x cols of the picture)
  private missingLayer: HTMLCanvasElement | null = null;
  readonly missingLegend: HTMLElement;
  data: PanelData = { values: null, rows: 0, cols: 0, unit: '' };
  zoom = 1;
  pan = [0, 0];
  version = 0;

  constructor(parent: HTMLElement, readonly id: string, private opts: PanelOptions) {
    this.section = el('section', 'panel');
    this.section.id = `${id}-panel`;
    const head = el('h2');
    this.titleEl = el('span', '', opts.title);
    head.append(this.titleEl);
    if (opts.hint) head.title = opts.hint;
    const tools = el('span', 'tools');
    const button = (label: string, title: string, fn: () => void) => {
      const b = el('button', '', label);
      b.title = title;
      b.id = `${id}-${label.replace(/[^a-z]/gi, '').toLowerCase()}`;
      b.addEventListener('click', fn);
      tools.append(b);
    };
    button('PNG', 'save the picture as PNG (native size)', () => this.savePng());
    button('figure', 'save an annotated PNG: the picture upscaled (nearest), its scale bar and colourbar',
      () => void this.saveFigure());
    button('.npy', 'save the values as a NumPy .npy file', () => this.saveNpy());
    button('1:1', 'reset zoom and pan', () => this.setView(1, [0, 0]));
    head.append(tools);
    this.viewport = el('div', 'viewport');
    this.stack = el('div', 'stack');
    this.canvas = el('canvas');
    this.canvas.id = id;
    this.stack.append(this.canvas);
    if (opts.overlayId) {
      this.overlay = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
      this.overlay.id = opts.overlayId;
      this.stack.append(this.overlay);
    }
    this.scalebar = el('div', 'scalebar');
    this.stack.append(this.scalebar, el('div', 'busy', 'computing…'));
    this.viewport.append(this.stack);
    this.readout = el('div', 'readout muted', opts.hint ?? '\u00a0');
    this.readout.id = `${id}-readout`;
    this.text = el('div', 'muted');
    this.text.id = `${id}-text`;
    this.missingLegend = el('div', 'missing-legend');
    this.missingLegend.id = `${id}-missing`;
    this.missingLegend.hidden = true;
    this.section.append(head, this.viewport, this.readout, this.missingLegend);
    if (opts.colorbar) {
      const bar = el('div', 'colorbar');
      this.colorbarBox = bar;
      this.colorbar = el('canvas');
      this.colorbar.width = 256;
      this.colorbar.height = 1;
      this.colorbarLabels = el('div', 'colorbar-labels');
      this.colorbarLabels.id = `${id}-colorbar`;
      this.histogram = el('canvas', 'histogram');
      this.histogram.width = 256;
      this.histogram.height = 40;
      bar.append(this.colorbar, this.colorbarLabels, this.histogram);
      this.section.append(bar);
    }
    this.section.append(this.text);
    parent.append(this.section);
    this.viewport.addEventListener('wheel', (e) => this.wheel(e), { passive: false });
    this.viewport.addEventListener('pointerdown', (e) => this.panStart(e));
    this.viewport.addEventListener('dblclick', () => this.setView(1, [0, 0]));
    this.viewport.addEventListener('pointermove', (e) => this.hover(e));
    this.viewport.addEventListener('pointerleave', () => (this.readout.textContent = opts.hint ?? '\u00a0'));
  }

  show(visible: boolean): void {
    this.section.hidden = !visible;
  }

  setTitle(t: string): void {
    this.titleEl.textContent = t;
  }

  setAspect(rows: number, cols: number): void {
    this.stack.style.aspectRatio = `${cols} / ${rows}`;
  }

  setBusy(busy: boolean): void {
    this.section.classList.toggle('loading', busy);
  }

  // Shows RGBA pixels (rows x cols) and keeps the values for readout and export.
  drawRgba(rgba: Uint8ClampedArray, data: PanelData): void {
    this.canvas.width = data.cols;
    this.canvas.height = data.rows;
    this.canvas.getContext('2d')!.putImageData(new ImageData(new Uint8ClampedArray(rgba), data.cols, data.rows), 0, 0);
    this.setAspect(data.rows, data.cols);
    this.data = data;
    this.section.classList.remove('stale');
    this.version++;
  }

  // Positions without a frame (mask: 1 = missing, rows x cols of the picture; null: none), `count` of them in all
  // (more than the mask holds when the dataset names only the first 10000): a hatched layer over those pixels, the
  // legend line "N positions missing", the readout "missing" there.
  setMissing(mask: Uint8Array | null, rows: number, cols: number, count = 0): void {
    const n = mask ? mask.reduce((a, v) => a + (v ? 1 : 0), 0) : 0;
    this.missing = n && mask!.length === rows * cols ? mask : null;
    const total = Math.max(count, this.missing ? n : 0);
    this.section.classList.toggle('has-missing', total > 0);
    this.missingLegend.hidden = total === 0;
    this.missingLegend.textContent = total === 0 ? '' : `${total.toLocaleString('en-US')} position${total === 1 ? '' : 's'} ` +
      `missing (no frame): drawn hatched, not as zero counts${this.missing ? '' : ' (not listed by the dataset)'}`;
    this.missingLegend.dataset.count = String(total);
    if (!this.missing) {
      this.missingLayer?.remove();
      this.missingLayer = null;
      return;
    }
    // Hatching needs a few screen pixels per position: the layer is drawn k times the picture's size.
    const k = Math.max(1, Math.min(8, Math.floor(1024 / Math.max(rows, cols))));
    if (!this.missingLayer) {
      this.missingLayer = el('canvas', 'missing-layer');
      this.missingLayer.id = `${this.id}-missing-layer`;
      this.canvas.after(this.missingLayer);
    }
    const c = this.missingLayer;
    c.width = cols * k;
    c.height = rows * k;
    const img = new ImageData(c.width, c.height);
    for (let r = 0; r < rows; ++r)
      for (let q = 0; q < cols; ++q) {
        if (!this.missing[r * cols + q]) continue;
        for (let y = 0; y < k; ++y)
          for (let x = 0; x < k; ++x) {
            // white diagonal stripes on grey (k = 1: alternate positions light and dark, a checker)
            const light = k === 1 ? (r + q) % 2 === 0 : (x + y) % 4 < 2;
            const o = 4 * ((r * k + y) * c.width + q * k + x);
            img.data.set(light ? [235, 235, 235, 255] : [110, 110, 110, 255], o);
          }
      }
    c.getContext('2d')!.putImageData(img, 0, 0);
  }

  isMissing(row: number, col: number): boolean {
    return !!this.missing && this.missing[row * this.data.cols + col] === 1;
  }

  // Colourbar (colormap from lo to hi, labelled in the values' units) and histogram with the limits marked.
  drawScale(r: Rendered, colormap: ColormapName, label: (v: number) => string): void {
    if (!this.colorbar || !this.histogram || !this.colorbarLabels) return;
    this.colorbarBox!.classList.remove('wheel');
    const t = tableOf(colormap);
    const px = new Uint8ClampedArray(256 * 4);
    for (let i = 0; i < 256; ++i) px.set([t[3 * i], t[3 * i + 1], t[3 * i + 2], 255], 4 * i);
    this.colorbar.getContext('2d')!.putImageData(new ImageData(px, 256, 1), 0, 0);
    const mid = (r.lo + r.hi) / 2;
    this.colorbarLabels.replaceChildren(...[r.lo, mid, r.hi].map((v) => el('span', '', label(v))));
    const h = this.histogram.getContext('2d')!;
    h.clearRect(0, 0, 256, 40);
    const most = Math.max(1, ...r.histogram);
    h.fillStyle = '#888';
    r.histogram.forEach((n, i) => {
      const bar = Math.log1p(n) / Math.log1p(most) * 38;
      h.fillRect(i * 4, 40 - bar, 3, bar);
    });
    h.fillStyle = '#ff5050';
    const x = (v: number) => (r.max > r.min ? ((v - r.min) / (r.max - r.min)) * 255 : 0);
    h.fillRect(Math.min(255, Math.max(0, x(r.lo))), 0, 1, 40);
    h.fillRect(Math.min(255, Math.max(0, x(r.hi))), 0, 1, 40);
  }

  // Legend of a colour-wheel picture (hue = direction, brightness = magnitude up to `scale`) instead of a colourbar.
  drawWheelLegend(scale: string): void {
    if (!this.colorbar || !this.histogram || !this.colorbarLabels) return;
    this.colorbarBox!.classList.add('wheel');
    const px = new Uint8ClampedArray(256 * 4);
    for (let i = 0; i < 256; ++i) px.set([...hsv(i / 256, 1, 1), 255], 4 * i);
    this.colorbar.getContext('2d')!.putImageData(new ImageData(px, 256, 1), 0, 0);
    this.colorbarLabels.replaceChildren(el('span', '', 'hue: direction (→ ↓ ← ↑)'), el('span', '', `full brightness at |v| ≥ ${scale}`));
  }

  // A scale bar of about a quarter of the width: `perPixel` units of `unit` per pixel (none when 0).
  setScaleBar(perPixel: number, unit: string, cols: number): void {
    if (!(perPixel > 0) || !cols) {
      this.scalebar.style.display = 'none';
      this.bar = null;
      return;
    }
    let value = perPixel * cols / 4, u = unit;
    if (unit === 'Å' && value >= 10) {
      value /= 10;
      perPixel /= 10;
      u = 'nm';
    }
    const nice = [1, 2, 5].map((m) => m * 10 ** Math.floor(Math.log10(value))).filter((v) => v <= value).pop() ?? value;
    this.scalebar.style.display = '';
    this.scalebar.style.width = `${(nice / perPixel / cols) * 100}%`;
    this.scalebar.textContent = `${nice} ${u}`;
    this.scalebar.dataset.length = `${nice} ${u}`;
    this.bar = { pixels: nice / perPixel, label: `${nice} ${u}` };
  }

  // Axis ticks in calibrated units (e.g. mrad) around a centre pixel: labels along the bottom and left edges.
  setAxes(perPixel: number, unit: string, centreRow: number, centreCol: number, rows: number, cols: number): void {
    let axes = this.stack.querySelector<HTMLElement>('.axes');
    if (!axes) {
      axes = el('div', 'axes');
      this.stack.append(axes);
    }
    axes.replaceChildren();
    if (!(perPixel > 0)) return;
    const span = perPixel * Math.max(rows, cols);
    const raw = span / 6;
    const step = [1, 2, 5, 10].map((m) => m * 10 ** Math.floor(Math.log10(raw))).find((v) => v >= raw) ?? raw;
    const tick = (cls: string, pos: number, text: string) => {
      const t = el('span', `tick ${cls}`, text);
      if (cls === 'x') t.style.left = `${pos * 100}%`;
      else t.style.top = `${pos * 100}%`;
      axes!.append(t);
    };
    for (let v = -Math.floor((centreCol * perPixel) / step) * step; v <= (cols - 1 - centreCol) * perPixel; v += step)
      tick('x', (centreCol + v / perPixel + 0.5) / cols, `${Number(v.toPrecision(3))}`);
    for (let v = -Math.floor((centreRow * perPixel) / step) * step; v <= (rows - 1 - centreRow) * perPixel; v += step)
      tick('y', (centreRow + v / perPixel + 0.5) / rows, `${Number(v.toPrecision(3))}`);
    tick('unit', 0, unit);
    axes.dataset.step = String(step);
  }

  markStale(stale: boolean): void {
    this.section.classList.toggle('stale', stale);
  }

  // Image pixel (row, col) under a pointer event, or null outside.
  pixelAt(e: { clientX: number; clientY: number }): [number, number] | null {
    const box = this.canvas.getBoundingClientRect();
    const { rows, cols } = this.data.rows ? this.data : { rows: this.canvas.height, cols: this.canvas.width };
    const row = Math.floor(((e.clientY - box.top) / box.height) * rows);
    const col = Math.floor(((e.clientX - box.left) / box.width) * cols);
    return row >= 0 && col >= 0 && row < rows && col < cols ? [row, col] : null;
  }

  private hover(e: PointerEvent): void {
    const at = this.pixelAt(e);
    if (!at) return;
    const [row, col] = at;
    const v = this.data.values ? this.data.values[row * this.data.cols + col] : undefined;
    const value = this.isMissing(row, col) ? ' missing (no frame at this position)'
      : v === undefined ? '' : ` = ${formatValue(Number(v))}${this.data.unit ? ' ' + this.data.unit : ''}`;
    const extra = this.opts.describe ? ` ${this.opts.describe(row, col)}` : '';
    this.readout.textContent = `(${row}, ${col})${value}${extra}`;
  }

  setView(zoom: number, pan: number[]): void {
    this.zoom = Math.min(Math.max(zoom, 1), 64);
    const limit = (this.zoom - 1) / 2;  // in units of the viewport
    this.pan = this.zoom === 1 ? [0, 0] : pan.map((p) => Math.min(Math.max(p, -limit), limit));
    this.stack.style.transform = `translate(${this.pan[0] * 100}%, ${this.pan[1] * 100}%) scale(${this.zoom})`;
  }

  private wheel(e: WheelEvent): void {
    if (!e.ctrlKey && !this.opts.wheelZoom) return;
    e.preventDefault();
    const box = this.viewport.getBoundingClientRect();
    // Keep the point under the pointer in place: p = (pointer - centre) / size.
    const p = [(e.clientX - box.left) / box.width - 0.5, (e.clientY - box.top) / box.height - 0.5];
    const factor = e.deltaY < 0 ? 1.25 : 0.8;
    const z = Math.min(Math.max(this.zoom * factor, 1), 64);
    const f = z / this.zoom;
    this.setView(z, this.pan.map((q, i) => p[i] - (p[i] - q) * f));
  }

  private panStart(e: PointerEvent): void {
    if (!(e.altKey || e.button === 1) || this.zoom === 1) return;
    e.preventDefault();
    e.stopPropagation();
    const box = this.viewport.getBoundingClientRect();
    const start = [e.clientX, e.clientY], from = [...this.pan];
    const move = (m: PointerEvent) =>
      this.setView(this.zoom, [from[0] + (m.clientX - start[0]) / box.width, from[1] + (m.clientY - start[1]) / box.height]);
    const up = () => {
      window.removeEventListener('pointermove', move);
      window.removeEventListener('pointerup', up);
    };
    window.addEventListener('pointermove', move);
    window.addEventListener('pointerup', up);
  }

  pngBlob(): Promise<Blob> {
    return new Promise((resolve, reject) =>
      this.canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('cannot encode the canvas'))), 'image/png'));
  }

  // The upscale of the annotated export: an integer (nearest neighbour) taking the long side to >= 512 px.
  figureScale(): number {
    return Math.min(64, Math.max(1, Math.ceil(512 / Math.max(1, this.canvas.width, this.canvas.height))));
  }

  // The annotated picture: the canvas upscaled by `scale` (nearest neighbour), the scale bar drawn on it as the
  // panel shows it (when calibrated), and below it the colourbar with the panel's labels (when it has one).
  figure(scale = this.figureScale()): HTMLCanvasElement {
    const w = this.canvas.width * scale, h = this.canvas.height * scale;
    const font = Math.max(12, Math.round(w / 40));
    const hasBar = !!this.colorbar && this.colorbarLabels!.childElementCount > 0;
    const strip = hasBar ? Math.round(font * 3) : 0;
    const out = document.createElement('canvas');
    out.width = w;
    out.height = h + strip;
    const g = out.getContext('2d')!;
    g.imageSmoothingEnabled = false;
    g.drawImage(this.canvas, 0, 0, w, h);
    if (this.missingLayer) g.drawImage(this.missingLayer, 0, 0, w, h);
    g.font = `${font}px system-ui, sans-serif`;
    g.textBaseline = 'alphabetic';
    if (this.bar && this.scalebar.style.display !== 'none') {
      const len = Math.round(this.bar.pixels * scale), x = Math.round(0.04 * w), thick = Math.max(3, Math.round(font / 4));
      const y = h - Math.round(0.04 * h) - thick;
      g.fillStyle = '#000';
      g.fillRect(x - 1, y - 1, len + 2, thick + 2);
      g.fillStyle = '#fff';
      g.fillRect(x, y, len, thick);
      g.textAlign = 'center';
      g.lineWidth = 3;
      g.strokeStyle = '#000';
      g.strokeText(this.bar.label, x + len / 2, y - 4);
      g.fillText(this.bar.label, x + len / 2, y - 4);
    }
    if (hasBar) {
      g.fillStyle = '#fff';
      g.fillRect(0, h, w, strip);
      const barH = Math.round(font * 0.9);
      g.drawImage(this.colorbar!, 0, 0, this.colorbar!.width, 1, 0, h + 2, w, barH);
      const labels = Array.from(this.colorbarLabels!.children, (e) => e.textContent ?? '');
      g.fillStyle = '#000';
      labels.forEach((t, i) => {
        g.textAlign = i === 0 ? 'left' : i === labels.length - 1 ? 'right' : 'center';
        const x = i === 0 ? 2 : i === labels.length - 1 ? w - 2 : w / 2;
        g.fillText(t, x, h + 2 + barH + font + 2, w / Math.max(1, labels.length));
      });
    }
    return out;
  }

  figureBlob(scale?: number): Promise<Blob> {
    const c = this.figure(scale);
    return new Promise((resolve, reject) =>
      c.toBlob((b) => (b ? resolve(b) : reject(new Error('cannot encode the figure'))), 'image/png'));
  }

  async saveFigure(): Promise<void> {
    download(await this.figureBlob(), `${this.fileStem()}_x${this.figureScale()}.png`);
  }

  npy(): Uint8Array | null {
    const d = this.data;
    return d.values ? npyBytes(d.values, [d.rows, d.cols]) : null;
  }

  async savePng(): Promise<void> {
    download(await this.pngBlob(), `${this.fileStem()}.png`);
  }

  saveNpy(): void {
    const bytes = this.npy();
    if (bytes) download(new Blob([bytes as BlobPart], { type: 'application/octet-stream' }), `${this.fileStem()}.npy`);
  }

  fileStem(): string {
    return `qgpu_${this.titleEl.textContent!.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_|_$/g, '')}`;
  }
}

export function formatValue(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e7) return String(v);
  const a = Math.abs(v);
  return a !== 0 && (a < 1e-3 || a >= 1e5) ? v.toExponential(3) : v.toPrecision(4);
}

function download(blob: Blob, name: string): void {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}
