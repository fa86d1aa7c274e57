// The viewer as a microscopist's tool (issue 12), in headless chromium against `qgpu serve`: one controller per
// dataset (no duplicate listeners or stale-geometry requests after switches), newest request wins, progress,
// offline state; the product selector (CoM, centred DPC, iDPC, SSB with the defocus slider and fit) against the
// service's values; calibrated display (scale bars, colourbar, readout, histogram, colormap/scale/gamma);
// detectors (typed-in, rectangle, point, 4 quadrants, snap, edge grab); navigation (keys, zoom, FFT); export
// (PNG, .npy, URL state, copy Python). Values are compared exactly with the service's; screenshots kept.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { assert } from './harness.mjs';

// Runs the page's "copy Python" code with the built quantem.gpu (BUILD/python) and returns img and rgba as
// float32 / uint8 arrays; null when the Python module or numpy is not there.
function runPython(qgpu, code) {
  const pythonPath = join(dirname(qgpu), 'python');
  const python = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
  if (!existsSync(join(pythonPath, 'quantem', 'gpu'))) return null;
  const dir = mkdtempSync(join(tmpdir(), 'qgpu-e2e-py-'));
  try {
    const script = `${code}\nimport sys\nnp.asarray(img, np.float32).tofile(sys.argv[1])\nnp.asarray(rgba, np.uint8).tofile(sys.argv[2])\n`;
    try {
      execFileSync(python, ['-c', script, join(dir, 'img'), join(dir, 'rgba')],
        { env: { ...process.env, PYTHONPATH: pythonPath, PYTHONWARNINGS: 'ignore' }, stdio: 'pipe', timeout: 120000 });
    } catch (e) {
      if (String(e.stderr).includes("No module named 'numpy'")) return null;
      throw new Error(`python failed: ${e.stderr}`);
    }
    const img = readFileSync(join(dir, 'img')), rgba = readFileSync(join(dir, 'rgba'));
    return { img: Array.from(new Float32Array(img.buffer, img.byteOffset, img.length / 4)), rgba: Array.from(rgba) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export const pageState = (page) => page.evaluate(() => {
  const s = window.qgpuViewer;
  return { ...s, frame: { ...s.frame, bytes: s.frame.bytes ? Array.from(s.frame.bytes) : null }, gpuCheck: undefined,
           wgslLimbCheck: undefined };
});

export const waitIdle = (page, after) => page.waitForFunction(
  (v) => window.qgpuViewer.virtualVersion > v && !window.qgpuViewer.busy, after, { timeout: 30000 });

// The values a panel shows (as float32 numbers, what it renders).
export const panelValues = (page, id) => page.evaluate((id) => {
  const v = window.qgpuPanels[id].data.values;
  return v ? Array.from(v, (x) => Math.fround(Number(x))) : null;
}, id);

// The service's values of `rest` (a JSON answer: data, or row/col), as float32 numbers.
export async function serverValues(base, id, rest, key = null) {
  const res = await fetch(`${base}api/datasets/${id}/${rest}`);
  if (!res.ok) throw new Error(`${rest}: HTTP ${res.status} ${await res.text()}`);
  const j = await res.json();
  const data = key ? j[key].data : j.data;
  return data.map((x) => Math.fround(Number(x)));
}

export async function serverF32(base, id, rest) {
  const res = await fetch(`${base}api/datasets/${id}/${rest}`);
  if (!res.ok) throw new Error(`${rest}: HTTP ${res.status} ${await res.text()}`);
  return Array.from(new Float32Array(await res.arrayBuffer()));
}

// Pixels of a canvas that differ from a service PNG (decoded in the page); -1 when the sizes differ.
export const pagePixelsVsServerPng = (page, canvasId, url) => page.evaluate(async ({ canvasId, url }) => {
  const png = await (await fetch(url)).blob();
  const bitmap = await createImageBitmap(png, { premultiplyAlpha: 'none', colorSpaceConversion: 'none' });
  const c = document.createElement('canvas');
  c.width = bitmap.width;
  c.height = bitmap.height;
  c.getContext('2d').drawImage(bitmap, 0, 0);
  const want = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  const real = document.getElementById(canvasId);
  const got = real.getContext('2d').getImageData(0, 0, real.width, real.height).data;
  if (got.length !== want.length) return -1;
  let n = 0;
  for (let i = 0; i < got.length; i += 4) if (got[i] !== want[i] || got[i + 1] !== want[i + 1] || got[i + 2] !== want[i + 2]) ++n;
  return n;
}, { canvasId, url });

const near = (a, b, tol) => a.length === b.length && a.every((x, i) => Math.abs(x - b[i]) <= tol * Math.max(1, Math.abs(b[i])));

// Sets a typed-in field and fires its change event.
const typeIn = (page, id, value) => page.evaluate(({ id, value }) => {
  const e = document.getElementById(id);
  e.value = String(value);
  e.dispatchEvent(new Event(e.type === 'range' ? 'input' : 'change', { bubbles: true }));
}, { id, value });

const apiRequests = (page) => page.evaluate(() => window.qgpuViewer.requests.slice());
const clearRequests = (page) => page.evaluate(() => (window.qgpuViewer.requests.length = 0));

export async function toolChecks({ run, page, base, opt, files, shot, restartServer, startAgain }) {
  const state = () => pageState(page);
  const idle = (v) => waitIdle(page, v);
  const selectDataset = async (id) => {
    const sessions = (await state()).sessions;
    await page.selectOption('#dataset', id);
    await page.waitForFunction((n) => window.qgpuViewer.sessions > n && window.qgpuViewer.ready && !window.qgpuViewer.busy,
      sessions, { timeout: 30000 });
  };
  const ds0 = 'e2e_sample', ds1 = 'e2e_other';

  // ---- 1. feedback / correctness ----
  await run.check('dataset switches leave one controller: a detector change sends one request, for the new dataset only', async () => {
    await selectDataset(ds1);
    await selectDataset(ds0);
    await selectDataset(ds1);
    let s = await state();
    const dims = await page.evaluate(() => [document.getElementById('real').width, document.getElementById('real').height,
      document.getElementById('pattern').width]);
    assert(JSON.stringify(dims) === '[20,12,24]', `canvases after the switch: ${dims}`);
    await clearRequests(page);
    await typeIn(page, 'det-cr', 10);
    await idle(s.virtualVersion);
    await page.waitForTimeout(300);  // any duplicate listener would have sent its request by now
    const reqs = await apiRequests(page);
    assert(reqs.length === 1 && reqs[0].includes(`/api/datasets/${ds1}/virtual?`) && reqs[0].includes('cr=10&'),
      `requests after one detector change: ${JSON.stringify(reqs)}`);
    s = await state();
    assert(s.detector.cr === 10 && s.virtualQuery.includes('cr=10&'), `shown ${s.virtualQuery}`);
    await shot('switched_dataset');
    return reqs[0];
  });

  await run.check('newest request wins: five quick detector changes draw the last one', async () => {
    const s0 = await state();
    await clearRequests(page);
    await page.evaluate(() => {
      const e = document.getElementById('det-cc');
      for (const v of [8, 9, 10, 11, 12.5]) {
        e.value = String(v);
        e.dispatchEvent(new Event('change'));
      }
    });
    await idle(s0.virtualVersion);
    const s = await state();
    assert(s.detector.cc === 12.5 && s.virtualQuery.includes('cc=12.5&'), `shown ${s.virtualQuery}`);
    const want = await serverValues(base, ds1, `virtual?${s.virtualQuery}&format=json`);
    const got = await panelValues(page, 'real');
    assert(JSON.stringify(got) === JSON.stringify(want), 'the values shown are not those of the newest detector');
    const reqs = await apiRequests(page);
    assert(reqs.length === 5, `requests: ${reqs.length}`);
    return `${reqs.length} requests, the last drawn`;
  });

  await run.check('progress: a slow product shows as loading in the header and on its panels, then clears', async () => {
    await page.route('**/idpc?*', async (route) => {
      await new Promise((r) => setTimeout(r, 800));
      await route.continue();
    });
    const s0 = await state();
    await page.selectOption('#product', 'idpc');
    await page.waitForFunction(() => document.getElementById('loading').textContent.includes('idpc'), null, { timeout: 5000 });
    const loadingPanel = await page.evaluate(() => document.getElementById('real-panel').classList.contains('loading'));
    assert(loadingPanel, 'the real-space panel is not marked loading');
    await shot('loading');
    await idle(s0.virtualVersion);
    await page.unroute('**/idpc?*');
    const after = await page.evaluate(() => [document.getElementById('loading').textContent,
      document.getElementById('real-panel').classList.contains('loading')]);
    assert(after[0] === '' && after[1] === false, `after loading: ${JSON.stringify(after)}`);
    const s1 = await state();
    await page.selectOption('#product', 'virtual');
    await idle(s1.virtualVersion);
  });

  // ---- 2. products ----
  await selectDataset(ds0);
  const product = async (id) => {
    const s0 = await state();
    await page.selectOption('#product', id);
    await idle(s0.virtualVersion);
    return state();
  };
  const n = 16 * 16;

  await run.check('product iDPC: the values are the service\'s idpc', async () => {
    const s = await product('idpc');
    assert(s.product === 'idpc' && s.virtualQuery === 'idpc?format=f32', `shown ${s.virtualQuery}`);
    const want = await serverF32(base, ds0, 'idpc?format=f32');
    assert(JSON.stringify(await panelValues(page, 'real')) === JSON.stringify(want), 'idpc values differ');
    await shot('product_idpc');
  });

  await run.check('product CoM: two panels, row and col, equal the service', async () => {
    await product('com');
    const want = await serverF32(base, ds0, 'com?format=f32');
    const [row, col] = [await panelValues(page, 'real'), await panelValues(page, 'real2')];
    assert(JSON.stringify(row) === JSON.stringify(want.slice(0, n)) && JSON.stringify(col) === JSON.stringify(want.slice(n)), 'com values differ');
    const visible = await page.evaluate(() => ['real2', 'real3'].map((id) => !document.getElementById(`${id}-panel`).hidden));
    assert(JSON.stringify(visible) === '[true,false]', `panels shown: ${visible}`);
    await shot('product_com');
  });

  await run.check('product centred DPC: colour wheel plus row and col panels equal the service', async () => {
    await product('dpc');
    const want = await serverF32(base, ds0, 'dpc?format=f32');
    const [row, col, mag] = [await panelValues(page, 'real2'), await panelValues(page, 'real3'), await panelValues(page, 'real')];
    assert(JSON.stringify(row) === JSON.stringify(want.slice(0, n)) && JSON.stringify(col) === JSON.stringify(want.slice(n)), 'dpc values differ');
    const wantMag = want.slice(0, n).map((r, i) => Math.fround(Math.hypot(r, want[n + i])));
    assert(near(mag, wantMag, 1e-6), 'the colour wheel magnitude is not |DPC|');
    // The wheel: hue follows the direction, so pixels of opposite directions differ in colour.
    const colours = await page.evaluate(() => {
      const c = document.getElementById('real');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      const set = new Set();
      for (let i = 0; i < d.length; i += 4) set.add(`${d[i]},${d[i + 1]},${d[i + 2]}`);
      return set.size;
    });
    assert(colours > 20, `only ${colours} colours in the colour wheel picture`);
    await shot('product_dpc');
  });

  await run.check('product SSB: phase at the slider defocus equals the service; the slider redraws; fit sets the defocus', async () => {
    let s = await product('ssb');
    assert(s.virtualQuery === `ssb?format=f32&bin=4&defocus=${s.defocus}`, `shown ${s.virtualQuery}`);
    let want = await serverF32(base, ds0, s.virtualQuery);
    assert(JSON.stringify(await panelValues(page, 'real')) === JSON.stringify(want), 'ssb values differ');
    await typeIn(page, 'defocus', 250);
    await idle(s.virtualVersion);
    s = await state();
    assert(s.defocus === 250 && s.virtualQuery === 'ssb?format=f32&bin=4&defocus=250', `after the slider: ${s.virtualQuery}`);
    want = await serverF32(base, ds0, s.virtualQuery);
    assert(JSON.stringify(await panelValues(page, 'real')) === JSON.stringify(want), 'ssb values at defocus 250 differ');
    const fit = await (await fetch(`${base}api/datasets/${ds0}/ssb_fit?bin=4`)).json();
    await page.click('#ssb-fit');
    await idle(s.virtualVersion);
    await page.waitForFunction((d) => window.qgpuViewer.defocus === d && !window.qgpuViewer.busy, Math.round(fit.defocus_angstrom), { timeout: 30000 });
    s = await state();
    await shot('product_ssb');
    return `fitted defocus ${fit.defocus_angstrom.toFixed(1)} A`;
  });

  // ---- 3. calibrated display ----
  await run.check('calibrated display: mrad scale bar on the pattern, A/nm on real space, readouts in mrad and A', async () => {
    await product('virtual');
    const s1 = await state();
    await page.evaluate(() => {  // a bright-field disk: an image with contrast (dark field is sparse at this dose)
      const k = document.getElementById('kind');
      k.value = 'disk';
      k.dispatchEvent(new Event('change'));
    });
    await idle(s1.virtualVersion);
    const bar = await page.textContent('#real-panel .scalebar');
    assert(bar === '1 Å', `real-space scale bar '${bar}'`);  // 0.328 A x 16 px / 4 = 1.31 -> 1 A
    // Detector axes in mrad around the fitted disk centre: 3.75 mrad/px x 32 px / 6 -> ticks every 20 mrad.
    const fit = await (await fetch(`${base}api/datasets/${ds0}/disk_fit`)).json();
    const ticks = await page.evaluate(() => Array.from(document.querySelectorAll('#pattern-panel .axes .tick.x'),
      (t) => [t.textContent, parseFloat(t.style.left)]));
    const zero = ticks.find((t) => t[0] === '0');
    assert(ticks.length >= 5 && zero && Math.abs(zero[1] - ((fit.center_col + 0.5) / 32) * 100) < 1e-6, `x ticks ${JSON.stringify(ticks)}`);
    assert(ticks.every((t, i) => i === 0 || Number(t[0]) - Number(ticks[i - 1][0]) === 20), `tick steps ${JSON.stringify(ticks)}`);
    const unit = await page.textContent('#pattern-panel .axes .tick.unit');
    assert(unit === 'mrad', `axis unit '${unit}'`);
    const box = await page.locator('#overlay').boundingBox();
    await page.mouse.move(box.x + box.width * (0.5 / 32), box.y + box.height * (16.5 / 32));
    const patternReadout = await page.textContent('#pattern-readout');
    assert(/^\(16, 0\) = [-+0-9.e]+ counts k = \(.* mrad, \|k\| [0-9.]+ mrad$/.test(patternReadout), `pattern readout '${patternReadout}'`);
    const rbox = await page.locator('#real').boundingBox();
    await page.mouse.move(rbox.x + rbox.width * (5.5 / 16), rbox.y + rbox.height * (2.5 / 16));
    const readout = await page.textContent('#real-readout');
    const values = await panelValues(page, 'real');
    const m = readout.match(/^\(2, 5\) = (\S+) counts at \(0\.66 Å, 1\.64 Å\)$/);
    assert(m && Number(m[1]) === values[2 * 16 + 5], `real readout '${readout}' (value ${values[2 * 16 + 5]})`);
    await shot('calibrated');
    return `${patternReadout} | ${readout}`;
  });

  await run.check('mean pattern shows the service\'s dark-field halo view; the max pattern holds the service max values', async () => {
    const differing = await pagePixelsVsServerPng(page, 'pattern', `/api/datasets/${ds0}/mean_pattern?format=png`);
    assert(differing === 0, `${differing} mean pattern pixels differ from the service halo view`);
    const mean = await serverF32(base, ds0, 'mean_pattern?format=f32');
    assert(JSON.stringify(await panelValues(page, 'pattern')) === JSON.stringify(mean), 'mean pattern values differ');
    const v = await page.evaluate(() => window.qgpuViewer.meanVersion);
    await page.selectOption('#pattern-kind', 'max');
    await page.waitForFunction((v) => window.qgpuViewer.meanVersion > v, v);
    const max = await serverF32(base, ds0, 'max_pattern?format=f32');
    assert(JSON.stringify(await panelValues(page, 'pattern')) === JSON.stringify(max), 'max pattern values differ');
    assert(max.every((m, i) => m >= mean[i]), 'max < mean somewhere');
    await shot('max_pattern');
    await page.selectOption('#pattern-kind', 'mean');
    await page.waitForFunction((v) => window.qgpuViewer.meanVersion > v + 1, v);
  });

  await run.check('colourbar labels the limits; percentiles, colormap, log scale and gamma change the picture as stated', async () => {
    const values = await panelValues(page, 'real');
    const labels = await page.locator('#real-colorbar span').allTextContents();
    const min = Math.min(...values), max = Math.max(...values);
    const close = (label, v) => Math.abs(Number(label) - v) <= 1e-3 * Math.abs(v);
    assert(close(labels[0], min) && close(labels[2], max), `colourbar ${labels} vs ${min}..${max}`);
    await page.selectOption('#colormap', 'gray');
    const pixel = (i) => page.evaluate((i) => Array.from(document.getElementById('real').getContext('2d').getImageData(i % 16, Math.floor(i / 16), 1, 1).data), i);
    const iMax = values.indexOf(max), iMin = values.indexOf(min);
    assert(JSON.stringify(await pixel(iMax)) === '[255,255,255,255]' && JSON.stringify(await pixel(iMin)) === '[0,0,0,255]', 'gray extremes');
    // Upper limit at the 80th percentile (numpy's linear interpolation): values above it saturate.
    const sorted = [...values].sort((a, b) => a - b);
    const x = 0.8 * (sorted.length - 1), k = Math.floor(x);
    const hi = sorted[k] * (1 - (x - k)) + sorted[k + 1] * (x - k);
    assert(hi > min, `the 80th percentile ${hi} is the minimum: a flat image`);
    await typeIn(page, 'phi', 80);
    const above = values.findIndex((v) => v > hi), below = values.findIndex((v) => v > min && v < hi);
    assert(JSON.stringify(await pixel(above)) === '[255,255,255,255]', 'values above the 80th percentile are not saturated');
    const tb = (values[below] - min) / (hi - min);
    assert(Math.abs((await pixel(below))[0] - Math.round(tb * 255)) <= 1, `a value below the limit: ${(await pixel(below))[0]} vs ${tb * 255}`);
    await typeIn(page, 'phi', 100);
    const mid = values.findIndex((v) => v > min + (max - min) * 0.3 && v < min + (max - min) * 0.7);
    const linear = (await pixel(mid))[0];
    await typeIn(page, 'gamma', 2);
    const gamma2 = (await pixel(mid))[0];
    const t = (values[mid] - min) / (max - min);
    assert(Math.abs(linear - Math.round(t * 255)) <= 1 && Math.abs(gamma2 - Math.floor(t * t * 255 + 0.5)) <= 1, `gamma: ${linear} -> ${gamma2} at t=${t}`);
    await typeIn(page, 'gamma', 1);
    await page.selectOption('#scale', 'log');
    const logged = (await pixel(mid))[0];
    const tl = (Math.log1p(values[mid]) - Math.log1p(min)) / (Math.log1p(max) - Math.log1p(min));
    assert(Math.abs(logged - Math.round(tl * 255)) <= 1, `log: ${logged} vs ${tl * 255}`);
    const hist = await page.evaluate(() => document.querySelector('#real-panel canvas.histogram').getContext('2d')
      .getImageData(0, 0, 256, 40).data.some((v, i) => i % 4 === 3 && v > 0));
    assert(hist, 'the histogram is empty');
    await shot('display_gray_log');
    await page.selectOption('#scale', 'linear');
    await page.selectOption('#colormap', 'inferno');  // the default
  });

  // ---- 4. detectors ----
  const detectorImage = async (kind, fields) => {
    const s0 = await state();
    await page.selectOption('#kind', kind);
    await idle(s0.virtualVersion);
    for (const [k, v] of Object.entries(fields)) {
      const s1 = await state();
      await typeIn(page, `det-${k}`, v);
      await idle(s1.virtualVersion);
    }
    return state();
  };
  const postMask = async (mask) => {
    const res = await fetch(`${base}api/datasets/${ds0}/virtual?format=json&dtype=uint8`, {
      method: 'POST', body: Buffer.from(mask), headers: { 'Content-Type': 'application/octet-stream' } });
    return (await res.json()).data.map((x) => Math.fround(Number(x)));
  };
  const maskOf = (f) => {
    const m = new Uint8Array(32 * 32);
    for (let r = 0; r < 32; ++r) for (let c = 0; c < 32; ++c) m[r * 32 + c] = f(r, c) ? 1 : 0;
    return m;
  };

  await run.check('typed-in disk centre and radius give the service disk image', async () => {
    const s = await detectorImage('disk', { cr: 15, cc: 16.5, r: 4.5 });
    assert(s.virtualQuery === 'kind=disk&cr=15&cc=16.5&r=4.5', `shown ${s.virtualQuery}`);
    const want = await serverValues(base, ds0, `virtual?${s.virtualQuery}&format=json`);
    assert(JSON.stringify(await panelValues(page, 'real')) === JSON.stringify(want), 'disk values differ');
  });

  await run.check('rectangle detector equals the service sum over the same rectangle mask', async () => {
    const s = await detectorImage('rectangle', { cr: 14, cc: 18, h: 3, w: 5 });
    const want = await postMask(maskOf((r, c) => Math.abs(r - 14) <= 3 && Math.abs(c - 18) <= 5));
    assert(JSON.stringify(await panelValues(page, 'real')) === JSON.stringify(want), `rectangle values differ (${s.virtualQuery})`);
    await shot('detector_rectangle');
  });

  await run.check('point detector equals the frames\' pixel values', async () => {
    await detectorImage('point', { cr: 16, cc: 17 });
    const got = await panelValues(page, 'real');
    const frame = await (await fetch(`${base}api/datasets/${ds0}/frame?row=3&col=11&format=json`)).json();
    assert(got[3 * 16 + 11] === Number(frame.data[16 * 32 + 17]), `point value ${got[3 * 16 + 11]} vs frame ${frame.data[16 * 32 + 17]}`);
  });

  await run.check('4-quadrant detector: segmented DPC row/col from the four segment sums', async () => {
    const s = await detectorImage('quadrants', { cr: 16, cc: 16, inner: 0, outer: 8 });
    const ring = (r, c) => (r - 16) ** 2 + (c - 16) ** 2 <= 64;
    const seg = await Promise.all([
      (r, c) => ring(r, c) && r < 16 && c >= 16, (r, c) => ring(r, c) && r < 16 && c < 16,
      (r, c) => ring(r, c) && r >= 16 && c < 16, (r, c) => ring(r, c) && r >= 16 && c >= 16,
    ].map((f) => postMask(maskOf(f))));
    const total = seg[0].map((_, i) => seg[0][i] + seg[1][i] + seg[2][i] + seg[3][i]);
    const row = total.map((t, i) => Math.fround(t > 0 ? (seg[2][i] + seg[3][i] - seg[0][i] - seg[1][i]) / t : 0));
    const col = total.map((t, i) => Math.fround(t > 0 ? (seg[0][i] + seg[3][i] - seg[1][i] - seg[2][i]) / t : 0));
    assert(near(await panelValues(page, 'real2'), row, 1e-6) && near(await panelValues(page, 'real3'), col, 1e-6), `quadrant DPC differs (${s.virtualQuery})`);
    await shot('detector_quadrants');
  });

  await run.check('snap to the fitted disk sets the centre and radius of the fit', async () => {
    await detectorImage('disk', { cr: 5, cc: 6 });
    const fit = await (await fetch(`${base}api/datasets/${ds0}/disk_fit`)).json();
    const s0 = await state();
    await page.click('#snap');
    await idle(s0.virtualVersion);
    const s = await state();
    const r2 = (x) => Math.round(x * 100) / 100;
    assert(s.detector.cr === r2(fit.center_row) && s.detector.cc === r2(fit.center_col) && s.detector.r === r2(fit.radius),
      `detector ${JSON.stringify(s.detector)} vs fit ${JSON.stringify(fit)}`);
  });

  await run.check('an outer ring beyond the detector is grabbed at the detector edge', async () => {
    const s0 = await detectorImage('annulus', { cr: 16, cc: 16, inner: 4, outer: 30 });
    assert(s0.detector.outer === 30, `outer ${s0.detector.outer}`);
    const box = await page.locator('#overlay').boundingBox();
    const at = (row, col) => [box.x + ((col + 0.5) / 32) * box.width, box.y + ((row + 0.5) / 32) * box.height];
    const [x, y] = at(16, 0);  // the left edge, 16 px from the centre, inside the ring
    await page.mouse.move(x, y);
    await page.mouse.down();
    const [x2, y2] = at(16, 4);
    await page.mouse.move(x2, y2, { steps: 4 });
    await page.mouse.up();
    await idle(s0.virtualVersion);
    const s = await state();
    assert(s.detector.cr === 16 && s.detector.cc === 16 && Math.abs(s.detector.outer - 12) < 0.6, `after the edge drag: ${JSON.stringify(s.detector)}`);
  });

  // ---- 5. navigation ----
  await run.check('arrow keys step the scan position (Shift: by 8), clamped to the scan', async () => {
    const s0 = await state();
    await page.locator('body').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('ArrowRight');
    await page.waitForFunction((v) => window.qgpuViewer.frame.version > v, s0.frame.version);
    let s = await state();
    assert(s.frame.row === s0.frame.row && s.frame.col === s0.frame.col + 1, `after →: ${s.frame.row}, ${s.frame.col}`);
    await page.keyboard.press('Shift+ArrowDown');
    await page.keyboard.press('Shift+ArrowDown');
    await page.waitForFunction(() => window.qgpuViewer.frame.row === 15 && window.qgpuViewer.frame.bytes !== null);
    s = await state();
    const want = await (await fetch(`${base}api/datasets/${ds0}/frame?row=15&col=${s.frame.col}&format=png`)).arrayBuffer();
    await page.waitForFunction(() => document.getElementById('loading').textContent === '');
    s = await state();
    assert(s.frame.row === 15 && Buffer.from(s.frame.bytes).equals(Buffer.from(want)), `frame (${s.frame.row}, ${s.frame.col})`);
  });

  await run.check('Ctrl+wheel zooms a panel, Alt+drag pans it, double-click resets', async () => {
    const box = await page.locator('#real').boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.keyboard.down('Control');
    await page.mouse.wheel(0, -100);
    await page.mouse.wheel(0, -100);
    await page.keyboard.up('Control');
    let z = await page.evaluate(() => [window.qgpuPanels.real.zoom, window.qgpuPanels.pattern.zoom]);
    assert(Math.abs(z[0] - 1.5625) < 1e-9 && z[1] === 1, `zoom ${z}`);
    const pan0 = await page.evaluate(() => window.qgpuPanels.real.pan);
    await page.keyboard.down('Alt');
    await page.mouse.down();
    await page.mouse.move(box.x + box.width / 2 + 40, box.y + box.height / 2, { steps: 3 });
    await page.mouse.up();
    await page.keyboard.up('Alt');
    const pan = await page.evaluate(() => window.qgpuPanels.real.pan);
    assert(pan[0] - pan0[0] > 0.05 && Math.abs(pan[1] - pan0[1]) < 1e-9, `pan ${pan0} -> ${pan}`);
    await shot('zoomed');
    await page.mouse.dblclick(box.x + box.width / 2, box.y + box.height / 2);
    z = await page.evaluate(() => window.qgpuPanels.real.zoom);
    assert(z === 1, `zoom after double-click ${z}`);
  });

  await run.check('FFT panel: log(1 + |F|) of the real-space image, DC at the centre', async () => {
    await page.check('#fft');
    const values = await panelValues(page, 'real');
    const fft = await panelValues(page, 'fft');
    assert(fft && fft.length === 256, 'no FFT values');
    const dc = Math.log1p(Math.abs(values.reduce((a, b) => a + b, 0)));
    assert(Math.abs(fft[8 * 16 + 8] - dc) < 1e-4 * dc, `DC ${fft[8 * 16 + 8]} vs ${dc}`);
    // One more frequency by direct DFT: (row 0, col 1) sits at (8, 9).
    let re = 0, im = 0;
    for (let r = 0; r < 16; ++r) for (let c = 0; c < 16; ++c) {
      re += values[r * 16 + c] * Math.cos(-2 * Math.PI * c / 16);
      im += values[r * 16 + c] * Math.sin(-2 * Math.PI * c / 16);
    }
    assert(Math.abs(fft[8 * 16 + 9] - Math.log1p(Math.hypot(re, im))) < 1e-3, `F(0,1) ${fft[8 * 16 + 9]} vs ${Math.log1p(Math.hypot(re, im))}`);
    await shot('fft');
    await page.uncheck('#fft');
  });

  // ---- 6. export ----
  await run.check('.npy export holds the panel values; PNG export holds the picture', async () => {
    const r = await page.evaluate(async () => {
      const p = window.qgpuPanels.real;
      const npy = p.npy();
      const blob = await p.pngBlob();
      const bitmap = await createImageBitmap(blob);
      const c = document.createElement('canvas');
      c.width = bitmap.width;
      c.height = bitmap.height;
      c.getContext('2d').drawImage(bitmap, 0, 0);
      const a = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      const b = p.canvas.getContext('2d').getImageData(0, 0, p.canvas.width, p.canvas.height).data;
      return { npy: Array.from(npy), pngSame: a.length === b.length && a.every((v, i) => v === b[i]) };
    });
    const bytes = Buffer.from(r.npy);
    assert(bytes.subarray(0, 8).equals(Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0])), 'npy magic');
    const hlen = bytes.readUInt16LE(8);
    const header = bytes.subarray(10, 10 + hlen).toString('latin1');
    assert(header.includes("'descr': '<f4'") && header.includes("'shape': (16, 16)") && (10 + hlen) % 64 === 0, `npy header ${header}`);
    const data = new Float32Array(bytes.buffer.slice(bytes.byteOffset + 10 + hlen, bytes.byteOffset + bytes.length));
    assert(JSON.stringify(Array.from(data)) === JSON.stringify(await panelValues(page, 'real')), 'npy values differ');
    assert(r.pngSame, 'the PNG export differs from the canvas');
  });

  await run.check('the URL holds the state: a new page opened at it shows the same view', async () => {
    await page.selectOption('#colormap', 'magma');
    const s = await state();
    const url = page.url();
    assert(url.includes('#') && url.includes('product=virtual') && url.includes('look=magma'), `url ${url}`);
    const other = await page.context().newPage();
    try {
      await other.goto(url);
      await other.waitForFunction(() => window.qgpuViewer?.ready && !window.qgpuViewer.busy && window.qgpuViewer.virtualVersion > 0, null, { timeout: 30000 });
      const t = await pageState(other);
      assert(t.dataset.id === s.dataset.id && JSON.stringify(t.detector) === JSON.stringify(s.detector) &&
        JSON.stringify(t.look) === JSON.stringify(s.look) && t.frame.row === s.frame.row && t.frame.col === s.frame.col &&
        t.virtualQuery === s.virtualQuery, `reopened: ${JSON.stringify([t.detector, t.look, t.frame.row, t.frame.col])}`);
      const same = await other.evaluate(() => Array.from(document.getElementById('real').getContext('2d').getImageData(0, 0, 16, 16).data).join());
      const mine = await page.evaluate(() => Array.from(document.getElementById('real').getContext('2d').getImageData(0, 0, 16, 16).data).join());
      assert(same === mine, 'the reopened picture differs');
    } finally {
      await other.close();
    }
    await page.selectOption('#colormap', 'inferno');  // the default
    return url.slice(url.indexOf('#'));
  });

  await run.check('copy Python gives the quantem.gpu call of the image shown', async () => {
    const s0 = await state();
    await page.click('#copy-python');
    const code = await page.textContent('#python');
    const d = s0.detector;
    assert(code.includes('import quantem.gpu as qgpu') && code.includes('qgpu.io.load(') &&
      code.includes(`img = qgpu.detector.adf(ds, inner=${d.inner}, outer=${d.outer}, center=(${d.cr}, ${d.cc}))`) &&
      code.includes('qgpu.display.render('), `python:\n${code}`);
    await page.selectOption('#product', 'ssb');
    await page.waitForFunction(() => !window.qgpuViewer.busy);
    await page.click('#copy-python');
    const ssb = await page.textContent('#python');
    assert(ssb.includes('qgpu.ssb.preview(ds, detector_bin=4'), `python:\n${ssb}`);
    await page.selectOption('#product', 'virtual');
    await page.waitForFunction(() => !window.qgpuViewer.busy);
    return code.split('\n').find((l) => l.startsWith('img ='));
  });

  await run.check('the copied Python, run with quantem.gpu, reproduces the values and the picture shown', async () => {
    const results = [];
    for (const id of ['virtual', 'ssb', 'dpc']) {
      const s0 = await state();
      if (s0.product !== id) {
        await page.selectOption('#product', id);
        await idle(s0.virtualVersion);
      }
      await page.click('#copy-python');
      const code = await page.textContent('#python');
      const out = runPython(opt.qgpu, code);
      if (!out) return { skip: 'quantem.gpu (BUILD/python) or numpy is not available' };
      const panelId = id === 'dpc' ? 'real2' : 'real';  // dpc: img = field_row, the row panel
      const got = await panelValues(page, panelId);
      const tol = id === 'virtual' ? 0 : 1e-5;
      assert(near(got, out.img, tol), `${id}: page values differ from the Python img (${got.slice(0, 3)} vs ${out.img.slice(0, 3)})`);
      if (id === 'virtual') {
        const pixels = await page.evaluate(() => Array.from(document.getElementById('real').getContext('2d').getImageData(0, 0, 16, 16).data));
        assert(JSON.stringify(pixels) === JSON.stringify(out.rgba), 'the Python render differs from the page picture');
      }
      results.push(id);
    }
    const s1 = await state();
    await page.selectOption('#product', 'virtual');
    await idle(s1.virtualVersion);
    return results.join(', ');
  });

  await run.check('a product cache: cached detector and products drawn, raw-data views disabled, Python opens the cache', async () => {
    await selectDataset('e2e_products');
    let s = await state();
    assert(s.dataset.representation === 'product cache' && s.virtualVersion > 0, `cache state ${s.dataset.representation}`);
    // The detector starts at the cached disk (bf): its values are the cached product's.
    const snapped = await (async () => {
      const s0 = await state();
      await page.evaluate(() => {
        const k = document.getElementById('kind');
        k.value = 'disk';
        k.dispatchEvent(new Event('change'));
      });
      await idle(s0.virtualVersion);
      return state();
    })();
    const want = await serverValues(base, 'e2e_products', `virtual?${snapped.virtualQuery}&format=json&tolerance=0.01`);
    assert(JSON.stringify(await panelValues(page, 'real')) === JSON.stringify(want), `cached bf values differ (${snapped.virtualQuery})`);
    const disabled = await page.evaluate(() => [document.querySelector('#product option[value=ssb]').disabled,
      document.querySelector('#pattern-kind option[value=max]').disabled, document.getElementById('browser-compute').disabled]);
    assert(disabled.every(Boolean), `disabled: ${disabled}`);
    const frameBlank = await page.evaluate(() => {
      const c = document.getElementById('frame');
      return window.qgpuViewer.frame.row === -1 && !c.getContext('2d').getImageData(0, 0, c.width, c.height).data.some((v) => v !== 0);
    });
    assert(frameBlank, 'the frame panel still shows a frame of another dataset');
    await page.selectOption('#product', 'idpc');
    await idle(snapped.virtualVersion);
    const idpc = await serverF32(base, 'e2e_products', 'idpc?format=f32');
    assert(JSON.stringify(await panelValues(page, 'real')) === JSON.stringify(idpc), 'cached idpc values differ');
    await page.click('#copy-python');
    const code = await page.textContent('#python');
    assert(code.includes('c = qgpu.cache.open(') && code.includes('img = c["idpc"]'), `python:\n${code}`);
    await shot('product_cache');
    s = await state();
    await page.selectOption('#product', 'virtual');
    await idle(s.virtualVersion);
    await selectDataset(ds0);
  });

  // ---- 1. (last) the server goes away and comes back ----
  await run.check('server offline: banner and stale panels; back online: cleared and redrawn', async () => {
    const old = await restartServer();
    const s0 = await state();
    await typeIn(page, 'det-cc', 15);
    await page.waitForFunction(() => !window.qgpuViewer.online, null, { timeout: 15000 });
    const shown = await page.evaluate(() => [!document.getElementById('offline').hidden,
      document.getElementById('real-panel').classList.contains('stale')]);
    assert(shown[0] && shown[1], `offline banner / stale: ${shown}`);
    await shot('offline');
    await startAgain(old.port);
    await page.waitForFunction((v) => window.qgpuViewer.online && window.qgpuViewer.virtualVersion > v && !window.qgpuViewer.busy,
      s0.virtualVersion, { timeout: 20000 });
    const after = await page.evaluate(() => [document.getElementById('offline').hidden,
      document.getElementById('real-panel').classList.contains('stale')]);
    const s = await state();
    assert(after[0] && !after[1] && s.virtualQuery.includes('cc=15&'), `after reconnect: ${after} ${s.virtualQuery}`);
  });
}
