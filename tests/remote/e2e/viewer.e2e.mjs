// Browser end-to-end test of `qgpu serve` and its viewer: loads the page in headless chromium, checks the
// mean pattern and the real-space image, drags and resizes the virtual detector, clicks a scan position, and
// compares what the page shows with the service's own answers (values exactly, pictures pixel for pixel). With a
// WebGPU adapter it also runs the WGSL virtual detector on a frame window and compares its sums with the
// service's exact uint64s. The microscopist's-tool checks (dataset switching, products, calibrated display,
// detectors, navigation, export, offline state) are in tool_checks.mjs; default look, SSB controls, layout while
// loading and the figure export, at several widths, in layout_checks.mjs; signed and float data in dtype_checks.mjs. Screenshots go to --out.
// Usage: node viewer.e2e.mjs --qgpu BUILD/qgpu --web src/remote/web/dist [--out DIR] [--webgpu auto|off]
// Prints PASS/FAIL/SKIP lines and a final `e2e: N passed, M failed`; exits 1 on any failure.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Runner, assert, fetchBytes, launchBrowser, startServer, tempDir, writeSample } from './harness.mjs';
import { dtypeChecks } from './dtype_checks.mjs';
import { layoutChecks } from './layout_checks.mjs';
import { pagePixelsVsServerPng, pageState, panelValues, serverValues, toolChecks, waitIdle } from './tool_checks.mjs';

const { values: opt } = parseArgs({
  options: { qgpu: { type: 'string' }, web: { type: 'string' }, out: { type: 'string', default: 'out' }, webgpu: { type: 'string', default: 'auto' } },
});
if (!opt.qgpu || !opt.web) throw new Error('usage: viewer.e2e.mjs --qgpu PATH --web DIR [--out DIR]');
mkdirSync(opt.out, { recursive: true });
const run = new Runner();
const tmp = tempDir('qgpu-e2e-');
let server, browser;
const watchdog = setTimeout(() => {
  console.log('FAIL e2e watchdog: the whole test took longer than 900 s');
  console.log(`e2e: ${run.passed} passed, ${run.failed + 1} failed`);
  server?.stop();
  process.exit(1);
}, 900000);

try {
  const h5 = join(tmp, 'e2e_sample.h5'), other = join(tmp, 'e2e_other.h5');
  writeSample(opt.qgpu, h5);
  writeSample(opt.qgpu, other, [12, 20], [24, 24]);
  const products = join(tmp, 'e2e_products.h5');  // a product cache of the first sample (served without raw data)
  execFileSync(opt.qgpu, ['cache', h5, '-o', products, '--backend', 'cpu'], { stdio: 'pipe', timeout: 120000 });
  const files = [h5, other, products];
  server = await startServer(opt.qgpu, files, opt.web, join(opt.out, 'serve.log'));
  const base = server.url;
  // --enable-unsafe-webgpu gives headless chromium an adapter (SwiftShader, software, with --disable-gpu).
  browser = await launchBrowser(opt.webgpu === 'off' ? [] : ['--enable-unsafe-webgpu']);
  const page = browser.context.pages()[0] ?? (await browser.context.newPage());
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && !m.text().includes('Failed to load resource') && pageErrors.push(m.text()));
  const state = () => pageState(page);
  const idle = (after) => waitIdle(page, after);
  const shot = (name) => page.screenshot({ path: join(opt.out, `${name}.png`), fullPage: true });
  let s, gpu;

  // The page's values of the real panel equal the service's for the query shown, and at the default look the
  // picture equals the service's PNG pixel for pixel.
  const sameAsService = async (cur) => {
    const want = await serverValues(base, cur.dataset.id, `virtual?${cur.virtualQuery}&format=json`);
    const got = await panelValues(page, 'real');
    assert(JSON.stringify(got) === JSON.stringify(want), `page values != service values for ${cur.virtualQuery}`);
    const differing = await pagePixelsVsServerPng(page, 'real', `/api/datasets/${cur.dataset.id}/virtual?${cur.virtualQuery}&format=png`);
    assert(differing === 0, `${differing} pixels differ from the service PNG for ${cur.virtualQuery}`);
  };

  await run.check('page loads and lists the datasets', async () => {
    await page.goto(base);
    await page.waitForFunction(() => window.qgpuViewer?.ready, null, { timeout: 30000 });
    const options = await page.locator('#dataset option').allTextContents();
    assert(options.length === 3 && options[0].includes('e2e_sample') && options[0].includes('16×16×32×32'), `dataset options: ${options}`);
  });

  await run.check('mean pattern and first real-space image are drawn', async () => {
    await page.waitForFunction(() => window.qgpuViewer.virtualVersion >= 1 && !window.qgpuViewer.busy, null, { timeout: 30000 });
    const drawn = await page.evaluate(() => ['pattern', 'real', 'frame'].map((id) => {
      const c = document.getElementById(id);
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      return [c.width, c.height, d.some((v, i) => i % 4 !== 3 && v !== 0)];
    }));
    assert(JSON.stringify(drawn) === JSON.stringify([[32, 32, true], [16, 16, true], [32, 32, true]]), `canvases: ${JSON.stringify(drawn)}`);
    s = await state();
    assert(s.meanVersion >= 1 && s.virtualSource === 'server', `state ${s.meanVersion} ${s.virtualSource}`);
    await shot('viewer_first');
  });

  await run.check('first real-space image equals the service answer (values and pixels)', async () => {
    await sameAsService(s);
    return s.virtualQuery;
  });

  // Screen point of detector pixel (row, col) on the overlay.
  const screenAt = async (row, col) => {
    const box = await page.locator('#overlay').boundingBox();
    return [box.x + ((col + 0.5) / 32) * box.width, box.y + ((row + 0.5) / 32) * box.height];
  };

  await run.check('dragging the detector redraws the image as the service computes it', async () => {
    const before = s;
    const [x, y] = await screenAt(before.detector.cr, before.detector.cc);
    await page.mouse.move(x, y);
    await page.mouse.down();
    const [x2, y2] = await screenAt(before.detector.cr + 5, before.detector.cc + 7);
    await page.mouse.move(x2, y2, { steps: 8 });
    await page.mouse.up();
    await idle(before.virtualVersion);
    s = await state();
    const moved = [s.detector.cr - before.detector.cr, s.detector.cc - before.detector.cc];
    assert(Math.abs(moved[0] - 5) < 0.6 && Math.abs(moved[1] - 7) < 0.6, `centre moved by ${moved}`);
    assert(s.virtualQuery.includes(`cr=${s.detector.cr}`) && s.virtualQuery.includes(`cc=${s.detector.cc}`), `shown ${s.virtualQuery}`);
    await sameAsService(s);
    return s.virtualQuery;
  });

  await run.check('the wheel resizes the detector and the image follows', async () => {
    const before = s;
    const [x, y] = await screenAt(before.detector.cr, before.detector.cc);
    await page.mouse.move(x, y);
    await page.mouse.wheel(0, -100);
    await idle(before.virtualVersion);
    s = await state();
    assert(s.detector.r > before.detector.r, `radius ${before.detector.r} -> ${s.detector.r}`);
    await sameAsService(s);
    return s.virtualQuery;
  });

  await run.check('an annulus detector gives the service annulus image', async () => {
    const before = s;
    await page.selectOption('#kind', 'annulus');
    await idle(before.virtualVersion);
    s = await state();
    assert(s.virtualQuery.startsWith('kind=annulus') && s.virtualQuery.includes('inner='), `shown ${s.virtualQuery}`);
    await sameAsService(s);
    return s.virtualQuery;
  });

  await run.check('clicking real space shows that scan position\'s frame', async () => {
    const before = s;
    const box = await page.locator('#real').boundingBox();
    await page.mouse.click(box.x + (11.5 / 16) * box.width, box.y + (3.5 / 16) * box.height);
    await page.waitForFunction((v) => window.qgpuViewer.frame.version > v, before.frame.version, { timeout: 30000 });
    s = await state();
    assert(s.frame.row === 3 && s.frame.col === 11, `frame at (${s.frame.row}, ${s.frame.col})`);
    const want = await fetchBytes(`${base}api/datasets/${s.dataset.id}/frame?row=3&col=11&format=png`);
    assert(Buffer.from(s.frame.bytes).equals(want), 'page frame PNG != service frame PNG');
  });

  await run.check('WebGPU virtual detector equals the service exact uint64 sums', async () => {
    const r = await page.evaluate(() => window.qgpuViewer.gpuCheck());
    gpu = r;
    if (!r.ran) return { skip: `no WebGPU adapter in this browser (${r.adapter.adapter})` };
    const res = await fetch(`${base}api/datasets/${s.dataset.id}/virtual?${r.query}&format=json`);
    const want = (await res.json()).data.map(String);
    assert(r.gpuEqualsCpuReference, 'WGSL sums differ from the in-page CPU reference');
    assert(JSON.stringify(r.sums) === JSON.stringify(want), `WGSL sums differ from the service: ${r.sums.slice(0, 4)} vs ${want.slice(0, 4)}`);
    assert(r.colormapCpuVsServerPng === 0, `${r.colormapCpuVsServerPng} pixels of the JS colormap differ from the service PNG`);
    assert(r.colormapGpuVsServerPng <= Math.ceil(r.pixels / 100), `${r.colormapGpuVsServerPng} of ${r.pixels} WGSL colormap pixels differ`);
    const kind = r.adapter.fallback ? 'software/fallback adapter: a smoke test only' : 'hardware adapter';
    return `${r.pixels} sums exact on '${r.adapter.adapter}' (${kind}), WGSL colormap pixels differing from the service PNG: ` +
      `${r.colormapGpuVsServerPng}, ${r.gpuMs.toFixed(1)} ms`;
  });

  await run.check('WGSL 64-bit sums equal BigInt on large counts and weights (and >65535 frames)', async () => {
    const r = await page.evaluate(() => window.qgpuViewer.wgslLimbCheck());
    if (!r.ran) return { skip: `no WebGPU adapter in this browser (${r.adapter.adapter})` };
    for (const c of r.results) assert(c.mismatches === 0, `${c.mismatches} of ${c.frames} sums differ (${JSON.stringify(c)})`);
    return r.results.map((c) => `${c.frames} frames x ${c.framePixels} px, max sum ${c.maxSum}`).join('; ');
  });

  await run.check('browser compute mode (WebGPU) draws the service picture while dragging', async () => {
    if (!gpu || !gpu.ran) return { skip: 'no WebGPU adapter in this browser' };
    await page.check('#browser-compute');
    await page.waitForFunction(() => window.qgpuViewer.virtualSource === 'browser' && !window.qgpuViewer.busy, null, { timeout: 30000 });
    const before = await state();
    const [x, y] = await screenAt(before.detector.cr, before.detector.cc);
    await page.mouse.move(x, y);
    await page.mouse.down();
    const [x2, y2] = await screenAt(before.detector.cr - 4, before.detector.cc - 6);
    await page.mouse.move(x2, y2, { steps: 6 });
    await page.mouse.up();
    await idle(before.virtualVersion);
    s = await state();
    assert(s.virtualSource === 'browser', `source ${s.virtualSource}`);
    await sameAsService(s);
    await page.uncheck('#browser-compute');
    await page.waitForFunction(() => window.qgpuViewer.virtualSource === 'server' && !window.qgpuViewer.busy, null, { timeout: 30000 });
    return s.virtualQuery;
  });

  await toolChecks({ run, page, base, opt, files, shot, restartServer: async () => {
    await server.stop();
    return server;
  }, startAgain: async (port) => {
    server = await startServer(opt.qgpu, files, opt.web, join(opt.out, 'serve.log'), port);
    return server;
  } });

  await layoutChecks({ run, context: browser.context, base, opt, h5, tmp });
  await dtypeChecks({ run, context: browser.context, opt, tmp });

  await run.check('the page reported no unexpected error', async () => {
    s = await state();
    const unexpected = s.errors.filter((e) => !e.includes('Failed to fetch') && !e.includes('NetworkError'));
    assert(unexpected.length === 0 && pageErrors.length === 0, `errors: ${JSON.stringify([...unexpected, ...pageErrors])}`);
  });
  await shot('viewer');
} catch (e) {
  run.failed++;
  console.log(`FAIL e2e setup: ${e instanceof Error ? e.stack : e}`);
} finally {
  clearTimeout(watchdog);
  await browser?.context.close().catch(() => {});
  if (browser) rmSync(browser.userDataDir, { recursive: true, force: true });
  server?.stop();
  rmSync(tmp, { recursive: true, force: true });
}
if (run.skipped) console.log(`e2e: ${run.skipped} skipped (see SKIP lines)`);
console.log(`e2e: ${run.passed} passed, ${run.failed} failed`);
process.exit(run.failed ? 1 : 0);
