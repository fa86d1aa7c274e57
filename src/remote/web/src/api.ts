// Client of the qgpu serve JSON/binary API. A ?token=T in the page URL is sent as a bearer token.
const token = new URLSearchParams(location.search).get('token');

export interface DatasetInfo {
  id: string;
  shape: [number, number, number, number];  // scan rows, scan cols, det rows, det cols
  dtype: string;
  backend: string;
  residency: string;
  device: number;
  file: string;
  representation?: string;  // 'product cache': served from `qgpu cache` products alone (no frames)
  metadata?: { calibration?: Calibration } & MissingPositions & { live?: { report?: MissingPositions } };
  live?: LiveStatus;        // a live acquisition (qgpu serve --live): frames still arriving
  // Built during an encoded load (resident/basis/radial_basis.hpp): disks and rings centred on `center` with
  // integer radii are answered from its prefix images (docs/design.md "Radial basis").
  radial_basis?: { built: boolean; center: [number, number]; boundaries: number; reason?: string };
}

// The basis centre when the dataset has a usable radial basis, else null.
export const basisCentre = (ds: DatasetInfo): { cr: number; cc: number } | null =>
  ds.radial_basis?.built ? { cr: ds.radial_basis.center[0], cc: ds.radial_basis.center[1] } : null;

// Scan positions without a frame, as the load (a sparse file, a DE csv scan) or a live series' report (dropped
// frames) names them in the dataset's metadata: their count and flat indices (row * cols + col), or
// "more than 10000" when there are too many to list.
export interface MissingPositions {
  missing?: number;
  missing_positions?: number[] | string;
}

// The positions without a frame of a dataset (rows x cols of its scan): a mask (1 = missing; null when none is
// listed) and their count.
export function missingOf(ds: DatasetInfo): { mask: Uint8Array | null; count: number } {
  const md = ds.metadata;
  const m: MissingPositions | undefined = md?.missing_positions !== undefined ? md : md?.live?.report;
  const list = Array.isArray(m?.missing_positions) ? m!.missing_positions : [];
  const n = ds.shape[0] * ds.shape[1];
  const count = Math.max(Number(m?.missing ?? 0) || 0, list.length);
  if (!list.length) return { mask: null, count };
  const mask = new Uint8Array(n);
  for (const p of list) if (Number.isInteger(p) && p >= 0 && p < n) mask[p] = 1;
  return { mask, count };
}

// GET /api/datasets/{id}/live (remote/live_source.hpp).
export interface LiveStatus {
  url: string;
  backend: string;
  series_id: string;
  finished: boolean;
  frames_received: number;
  frames: number;
  receiving: boolean;
  stats: { frames_per_second: number; dropped: number; corrupt: number; max_latency_ms: number };
  problems: string[];
}

// The file's /entry/calibration attributes as the loader copies them (all optional).
export interface Calibration {
  energy_kev?: number;
  semiangle_mrad?: number;
  scan_step_angstrom?: number;
  detector_mrad_per_pixel?: number;
  defocus_angstrom?: number;
  disk_radius_px?: number;
}

export const calibrationOf = (ds: DatasetInfo): Calibration => ds.metadata?.calibration ?? {};

export const isProductCache = (ds: DatasetInfo) => ds.representation === 'product cache';

// disk / annulus: GET /virtual; rectangle, point, quadrants: a mask POSTed to /virtual (detector_masks.ts).
export type DetectorKind = 'disk' | 'annulus' | 'rectangle' | 'point' | 'quadrants';
export const DETECTOR_KINDS: DetectorKind[] = ['disk', 'annulus', 'rectangle', 'point', 'quadrants'];

export interface Detector {
  kind: DetectorKind;
  cr: number;
  cc: number;
  r: number;      // disk radius; quadrants: outer radius
  inner: number;  // annulus radii (quadrants: inner radius)
  outer: number;
  h: number;      // rectangle half height / half width (pixels)
  w: number;
}

export interface BrowsePlan {
  detector_bins: number[];
  window_limit_bytes: number;
  frame_bytes_by_detector_bin: Record<string, number>;
}

export class ApiError extends Error {
  constructor(public status: number, message: string) {
    super(message);
  }
}

// Every answer or failure of the service updates this (the page shows "server offline" while it is false).
export const connection = { online: true, listeners: [] as ((online: boolean) => void)[] };
function setOnline(online: boolean): void {
  if (connection.online === online) return;
  connection.online = online;
  for (const f of connection.listeners) f(online);
}

export const isAbort = (e: unknown) => e instanceof DOMException && e.name === 'AbortError';

export async function request(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (token) headers.set('Authorization', 'Bearer ' + token);
  let res: Response;
  try {
    res = await fetch(path, { ...init, headers });
  } catch (e) {
    if (!isAbort(e)) setOnline(false);  // network failure: the server went away
    throw e;
  }
  setOnline(true);
  if (!res.ok) {
    let message = res.statusText;
    try {
      message = (await res.json()).error ?? message;
    } catch {
      /* not JSON */
    }
    throw new ApiError(res.status, `${res.status}: ${message}`);
  }
  return res;
}

export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  return (await request(path, { signal })).json() as Promise<T>;
}

export interface RawArray {
  data: ArrayBuffer;
  shape: number[];
  computeMs: number;
  headers: Headers;
}

export async function getRaw(path: string, signal?: AbortSignal, init: RequestInit = {}): Promise<RawArray> {
  const res = await request(path, { ...init, signal });
  const shape = (res.headers.get('X-Shape') ?? '').split(',').filter((s) => s).map(Number);
  return { data: await res.arrayBuffer(), shape, computeMs: Number(res.headers.get('X-Compute-Ms') ?? 'NaN'), headers: res.headers };
}

// The raw sums of /virtual?format=u64 in their dtype (X-DType): uint64 counts, int64 signed data, float64 floats.
export function sumValues(raw: RawArray): Float64Array {
  const t = raw.headers.get('X-DType') ?? 'uint64';
  if (t === 'float64') return new Float64Array(raw.data);
  const ints = t === 'int64' ? new BigInt64Array(raw.data) : new BigUint64Array(raw.data);
  return Float64Array.from(ints, (v) => Number(v));
}

export async function getBytes(path: string, signal?: AbortSignal): Promise<{ bytes: Uint8Array; computeMs: number }> {
  const res = await request(path, { signal });
  return { bytes: new Uint8Array(await res.arrayBuffer()), computeMs: Number(res.headers.get('X-Compute-Ms') ?? 'NaN') };
}

export const datasetPath = (id: string, rest: string) => `/api/datasets/${encodeURIComponent(id)}/${rest}`;

// Query of GET /virtual for a detector (values as they are held: already rounded by the viewer).
export function virtualQuery(d: Pick<Detector, 'kind' | 'cr' | 'cc' | 'r' | 'inner' | 'outer'>): string {
  const q = new URLSearchParams({ kind: d.kind, cr: String(d.cr), cc: String(d.cc) });
  if (d.kind === 'disk') q.set('r', String(d.r));
  else {
    q.set('inner', String(d.inner));
    q.set('outer', String(d.outer));
  }
  return q.toString();
}
