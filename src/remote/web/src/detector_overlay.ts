// The virtual detector drawn over a detector-space panel (SVG in detector pixel coordinates, pixel centres at
// integers). Drag inside moves the centre, drag on a ring (or rectangle edge) resizes it, the wheel changes the
// outer radius (with Shift: the inner one). A ring beyond the detector is grabbed at the detector's edge.
// Listeners live until `signal` aborts (one overlay per dataset session). interactive = false: drawing only.
import type { Detector } from './api';

const SVG = 'http://www.w3.org/2000/svg';
const round2 = (x: number) => Math.round(x * 100) / 100;

type Grab = 'move' | 'outer' | 'inner' | 'rect';

export const outerRadius = (d: Detector) => (d.kind === 'disk' ? d.r : d.kind === 'quadrants' ? d.outer : d.outer);

export class DetectorOverlay {
  detector: Detector;
  // The dataset's radial basis centre (api.ts basisCentre): a disk or ring whose centre is dragged within 1 px of it
  // snaps to it exactly and its radii to integers (the basis' shell boundaries), so that drags hit the basis.
  snapTo: { cr: number; cc: number } | null = null;
  private grab: { mode: Grab; row: number; col: number; start: Detector } | null = null;
  private outerCircle: SVGCircleElement;
  private innerCircle: SVGCircleElement;
  private centre: SVGCircleElement;
  private rect: SVGRectElement;
  private cross: SVGPathElement;

  constructor(
    private svg: SVGSVGElement,
    private rows: number,
    private cols: number,
    initial: Detector,
    private onChange: (d: Detector) => void,
    signal: AbortSignal,
    interactive = true,
  ) {
    svg.setAttribute('viewBox', `-0.5 -0.5 ${cols} ${rows}`);
    svg.setAttribute('preserveAspectRatio', 'none');
    svg.replaceChildren();
    this.outerCircle = this.shape('circle', 'ring outer') as SVGCircleElement;
    this.innerCircle = this.shape('circle', 'ring inner') as SVGCircleElement;
    this.rect = this.shape('rect', 'ring rect') as SVGRectElement;
    this.cross = this.shape('path', 'ring cross') as SVGPathElement;
    this.centre = this.shape('circle', 'centre') as SVGCircleElement;
    this.detector = { ...initial };
    if (interactive) {
      const opts = { signal };
      svg.addEventListener('pointerdown', (e) => this.down(e), opts);
      svg.addEventListener('pointermove', (e) => this.move(e), opts);
      svg.addEventListener('pointerup', (e) => this.up(e), opts);
      svg.addEventListener('pointercancel', (e) => this.up(e), opts);
      svg.addEventListener('wheel', (e) => this.wheel(e), { passive: false, signal });
    }
    signal.addEventListener('abort', () => svg.replaceChildren());
    this.draw();
  }

  set(d: Detector, notify = true): void {
    const maxR = Math.hypot(this.rows, this.cols);
    const b = this.snapTo;
    const snap = b !== null && (d.kind === 'disk' || d.kind === 'annulus') && Math.hypot(d.cr - b.cr, d.cc - b.cc) < 1;
    const radius = (v: number) => (snap ? Math.max(1, Math.round(v)) : round2(v));
    const outer = radius(Math.min(Math.max(d.outer, 1), maxR));
    this.detector = {
      kind: d.kind,
      cr: snap ? b.cr : round2(Math.min(Math.max(d.cr, 0), this.rows - 1)),
      cc: snap ? b.cc : round2(Math.min(Math.max(d.cc, 0), this.cols - 1)),
      r: radius(Math.min(Math.max(d.r, 0.5), maxR)),
      outer,
      inner: snap ? Math.min(Math.max(Math.round(d.inner), 0), outer - 1) : round2(Math.min(Math.max(d.inner, 0), outer - 0.5)),
      h: round2(Math.min(Math.max(d.h, 0.5), this.rows)),
      w: round2(Math.min(Math.max(d.w, 0.5), this.cols)),
    };
    this.draw();
    if (notify) this.onChange(this.detector);
  }

  private shape(tag: string, cls: string): SVGElement {
    const c = document.createElementNS(SVG, tag) as SVGElement;
    c.setAttribute('class', cls);
    c.setAttribute('vector-effect', 'non-scaling-stroke');
    this.svg.appendChild(c);
    return c;
  }

  private draw(): void {
    const d = this.detector;
    const place = (c: SVGCircleElement, r: number, show: boolean) => {
      c.setAttribute('cx', String(d.cc));
      c.setAttribute('cy', String(d.cr));
      c.setAttribute('r', String(Math.max(r, 0)));
      c.style.display = show ? '' : 'none';
    };
    const round = d.kind === 'disk' || d.kind === 'annulus' || d.kind === 'quadrants';
    place(this.outerCircle, outerRadius(d), round);
    place(this.innerCircle, d.inner, (d.kind === 'annulus' || d.kind === 'quadrants') && d.inner > 0);
    place(this.centre, Math.max(this.rows, this.cols) / 120, true);
    this.rect.style.display = d.kind === 'rectangle' ? '' : 'none';
    this.rect.setAttribute('x', String(d.cc - d.w));
    this.rect.setAttribute('y', String(d.cr - d.h));
    this.rect.setAttribute('width', String(2 * d.w));
    this.rect.setAttribute('height', String(2 * d.h));
    const o = outerRadius(d), p = Math.max(this.rows, this.cols) / 20;
    if (d.kind === 'quadrants')
      this.cross.setAttribute('d', `M${d.cc - o} ${d.cr}H${d.cc + o}M${d.cc} ${d.cr - o}V${d.cr + o}`);
    else if (d.kind === 'point')
      this.cross.setAttribute('d', `M${d.cc - p} ${d.cr}H${d.cc + p}M${d.cc} ${d.cr - p}V${d.cr + p}`);
    this.cross.style.display = d.kind === 'quadrants' || d.kind === 'point' ? '' : 'none';
  }

  // Pointer position in detector pixels (row, col).
  private at(e: PointerEvent | WheelEvent): [number, number] {
    const m = this.svg.getScreenCTM();
    if (!m) return [0, 0];
    const p = new DOMPoint(e.clientX, e.clientY).matrixTransform(m.inverse());
    return [p.y, p.x];
  }

  // What a press at (row, col) grabs; tol in detector pixels.
  grabAt(row: number, col: number): Grab {
    const d = this.detector;
    const tol = Math.max(1, this.cols / 40);
    if (d.kind === 'point') return 'move';
    if (d.kind === 'rectangle') {
      const nearEdge = (Math.abs(Math.abs(row - d.cr) - d.h) < tol && Math.abs(col - d.cc) <= d.w + tol) ||
        (Math.abs(Math.abs(col - d.cc) - d.w) < tol && Math.abs(row - d.cr) <= d.h + tol);
      return nearEdge ? 'rect' : 'move';
    }
    const dist = Math.hypot(row - d.cr, col - d.cc);
    const outer = outerRadius(d);
    if (Math.abs(dist - outer) < tol) return 'outer';
    if ((d.kind === 'annulus' || d.kind === 'quadrants') && d.inner > 0 && Math.abs(dist - d.inner) < tol) return 'inner';
    // The outer ring runs beyond the detector: the band along the detector's edge, outside the inner ring, grabs it.
    const edge = Math.min(row + 0.5, col + 0.5, this.rows - 0.5 - row, this.cols - 0.5 - col);
    if (edge < tol && dist < outer && dist > d.inner + tol) return 'outer';
    return 'move';
  }

  private down(e: PointerEvent): void {
    const [row, col] = this.at(e);
    this.grab = { mode: this.grabAt(row, col), row, col, start: { ...this.detector } };
    this.svg.setPointerCapture(e.pointerId);
    e.preventDefault();
  }

  private move(e: PointerEvent): void {
    if (!this.grab) return;
    const [row, col] = this.at(e);
    const { mode, start } = this.grab;
    const next = { ...start };
    if (mode === 'move') {
      next.cr = start.cr + (row - this.grab.row);
      next.cc = start.cc + (col - this.grab.col);
    } else if (mode === 'rect') {
      next.h = Math.abs(row - start.cr);
      next.w = Math.abs(col - start.cc);
    } else {
      const dist = Math.hypot(row - start.cr, col - start.cc);
      if (mode === 'inner') next.inner = dist;
      else if (start.kind === 'disk') next.r = dist;
      else next.outer = dist;
    }
    this.set(next);
  }

  private up(e: PointerEvent): void {
    if (this.grab && this.svg.hasPointerCapture(e.pointerId)) this.svg.releasePointerCapture(e.pointerId);
    this.grab = null;
  }

  private wheel(e: WheelEvent): void {
    if (e.ctrlKey) return;  // Ctrl+wheel zooms the panel (panel.ts)
    e.preventDefault();
    e.stopPropagation();
    const delta = e.deltaY || e.deltaX;  // Shift+wheel scrolls sideways in some browsers
    const step = delta < 0 ? 0.5 : -0.5;
    const d = { ...this.detector };
    if (e.shiftKey && (d.kind === 'annulus' || d.kind === 'quadrants')) d.inner += step;
    else if (d.kind === 'disk') d.r += step;
    else if (d.kind === 'rectangle') {
      d.h += step;
      d.w += step;
    } else d.outer += step;
    this.set(d);
  }
}
