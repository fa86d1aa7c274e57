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
}

export const isProductCache = (ds: DatasetInfo) => ds.representation === 'product cache';

export interface Detector {
  kind: 'disk' | 'annulus';
  cr: number;
  cc: number;
  r: number;      // disk radius
  inner: number;  // annulus radii
  outer: number;
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

export async function request(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (token) headers.set('Authorization', 'Bearer ' + token);
  const res = await fetch(path, { ...init, headers });
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

export async function getJson<T>(path: string): Promise<T> {
  return (await request(path)).json() as Promise<T>;
}

export interface RawArray {
  data: ArrayBuffer;
  shape: number[];
  computeMs: number;
}

export async function getRaw(path: string): Promise<RawArray> {
  const res = await request(path);
  const shape = (res.headers.get('X-Shape') ?? '').split(',').filter((s) => s).map(Number);
  return { data: await res.arrayBuffer(), shape, computeMs: Number(res.headers.get('X-Compute-Ms') ?? 'NaN') };
}

export async function getBytes(path: string): Promise<{ bytes: Uint8Array; computeMs: number }> {
  const res = await request(path);
  return { bytes: new Uint8Array(await res.arrayBuffer()), computeMs: Number(res.headers.get('X-Compute-Ms') ?? 'NaN') };
}

export const datasetPath = (id: string, rest: string) => `/api/datasets/${encodeURIComponent(id)}/${rest}`;

// Query of GET /virtual for a detector (values as they are held: already rounded by the viewer).
export function virtualQuery(d: Detector): string {
  const q = new URLSearchParams({ kind: d.kind, cr: String(d.cr), cc: String(d.cc) });
  if (d.kind === 'disk') q.set('r', String(d.r));
  else {
    q.set('inner', String(d.inner));
    q.set('outer', String(d.outer));
  }
  return q.toString();
}
