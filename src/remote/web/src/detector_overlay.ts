// The virtual detector drawn over the mean pattern (SVG in detector pixel coordinates, pixel centres at
// integers). Drag inside moves the centre, drag on a ring resizes it, the wheel changes the outer radius
// (with Shift: the inner one).
import type { Detector } from './api';

const SVG = 'http://www.w3.org/2000/svg';
const round2 = (x: number) => Math.round(x * 100) / 100;

type Grab = 'move' | 'outer' | 'inner';

export class DetectorOverlay {
  detector: Detector;
  private grab: { mode: Grab; row: number; col: number; start: Detector } | null = null;
  private outerCircle: SVGCircleElement;
  private innerCircle: SVGCircleElement;
  private centre: SVGCircleElement;

  constructor(
    private svg: SVGSVGElement,
    private rows: number,
    private cols: number,
    initial: Detector,
    private onChange: (d: Detector) => void,
  ) {
    svg.setAttribute('viewBox', `-0.5 -0.5 ${cols} ${rows}`);
    svg.setAttribute('preserveAspectRatio', 'none');
    svg.replaceChildren();
    this.outerCircle = this.circle('ring outer');
    this.innerCircle = this.circle('ring inner');
    this.centre = this.circle('centre');
    this.detector = { ...initial };
    svg.addEventListener('pointerdown', (e) => this.down(e));
    svg.addEventListener('pointermove', (e) => this.move(e));
    svg.addEventListener('pointerup', (e) => this.up(e));
    svg.addEventListener('pointercancel', (e) => this.up(e));
    svg.addEventListener('wheel', (e) => this.wheel(e), { passive: false });
    this.draw();
  }

  set(d: Detector, notify = true): void {
    const maxR = Math.hypot(this.rows, this.cols);
    const outer = Math.min(Math.max(d.outer, 1), maxR);
    this.detector = {
      kind: d.kind,
      cr: round2(Math.min(Math.max(d.cr, 0), this.rows - 1)),
      cc: round2(Math.min(Math.max(d.cc, 0), this.cols - 1)),
      r: round2(Math.min(Math.max(d.r, 0.5), maxR)),
      outer: round2(outer),
      inner: round2(Math.min(Math.max(d.inner, 0), outer - 0.5)),
    };
    this.draw();
    if (notify) this.onChange(this.detector);
  }

  private circle(cls: string): SVGCircleElement {
    const c = document.createElementNS(SVG, 'circle');
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
    place(this.outerCircle, d.kind === 'disk' ? d.r : d.outer, true);
    place(this.innerCircle, d.inner, d.kind === 'annulus');
    place(this.centre, Math.max(this.rows, this.cols) / 120, true);
  }

  // Pointer position in detector pixels (row, col).
  private at(e: PointerEvent | WheelEvent): [number, number] {
    const m = this.svg.getScreenCTM();
    if (!m) return [0, 0];
    const p = new DOMPoint(e.clientX, e.clientY).matrixTransform(m.inverse());
    return [p.y, p.x];
  }

  private down(e: PointerEvent): void {
    const [row, col] = this.at(e);
    const d = this.detector;
    const dist = Math.hypot(row - d.cr, col - d.cc);
    const tol = Math.max(1, this.cols / 40);
    const outer = d.kind === 'disk' ? d.r : d.outer;
    let mode: Grab = 'move';
    if (Math.abs(dist - outer) < tol) mode = 'outer';
    else if (d.kind === 'annulus' && Math.abs(dist - d.inner) < tol) mode = 'inner';
    this.grab = { mode, row, col, start: { ...d } };
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
    e.preventDefault();
    const delta = e.deltaY || e.deltaX;  // Shift+wheel scrolls sideways in some browsers
    const step = delta < 0 ? 0.5 : -0.5;
    const d = { ...this.detector };
    if (e.shiftKey && d.kind === 'annulus') d.inner += step;
    else if (d.kind === 'disk') d.r += step;
    else d.outer += step;
    this.set(d);
  }
}
