// Browser end-to-end test of `qgpu serve --live`: the detector simulator streams a sample (DECTRIS stream V2, a few
// hundred frames per second) into the service; the viewer shows the scan filling (rows received drawn, the rest
// still zero), the detector is changed mid-scan, and at the end the page shows exactly the service's image of the
// whole scan, which equals the offline load's. Screenshots go to --out.
// Usage: node live.e2e.mjs --qgpu BUILD/qgpu --web src/remote/web/dist [--out DIR]
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Runner, assert, launchBrowser, startServer, tempDir, writeSample } from './harness.mjs';
import { pageState, panelValues, serverValues } from './tool_checks.mjs';

const { values: opt } = parseArgs({
  options: { qgpu: { type: 'string' }, web: { type: 'string' }, out: { type: 'string', default: 'out' } },
});
if (!opt.qgpu || !opt.web) throw new Error('usage: live.e2e.mjs --qgpu PATH --web DIR [--out DIR]');
mkdirSync(opt.out, { recursive: true });
const run = new Runner();
const tmp = tempDir('qgpu-live-e2e-');
let server, browser, sim, offline;
const watchdog = setTimeout(() => {
  console.log('FAIL live e2e watchdog: the whole test took longer than 300 s');
  console.log(`live e2e: ${run.passed} passed, ${run.failed + 1} failed`);
  sim?.kill();
  server?.stop();
  process.exit(1);
}, 300000);

const freePort = () => new Promise((resolve) => {
  const s = createServer();
  s.listen(0, '127.0.0.1', () => {
    const { port } = s.address();
    s.close(() => resolve(port));
  });
});

try {
  const h5 = join(tmp, 'live_sample.h5');
  writeSample(opt.qgpu, h5, [24, 24], [32, 32]);
  const port = await freePort();
  // 576 frames at 60 frames/s: about 10 s of scan (room for a slow browser start on CI).
  sim = spawn(opt.qgpu, ['simulate-detector', h5, '--port', String(port), '--rate', '60'], { stdio: 'ignore' });
  server = await startServer(opt.qgpu, ['--live', `dectris://127.0.0.1:${port}`], opt.web, join(opt.out, 'serve_live.log'));
  const base = server.url;
  browser = await launchBrowser();
  const page = browser.context.pages()[0] ?? (await browser.context.newPage());
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  const shot = (name) => page.screenshot({ path: join(opt.out, `${name}.png`), fullPage: true });

  await run.check('the live dataset opens while the scan runs', async () => {
    await page.goto(base);
    await page.waitForFunction(() => window.qgpuViewer?.ready, null, { timeout: 30000 });
    const s = await pageState(page);
    assert(s.dataset.id === 'live' && s.dataset.live && !s.dataset.live.finished, `dataset ${JSON.stringify(s.dataset.live)}`);
  });

  await run.check('the image fills row by row: received rows drawn, the rest still empty', async () => {
    await page.waitForFunction(() => window.qgpuViewer.liveFrames >= 100 && window.qgpuViewer.liveFrames <= 500 &&
      !window.qgpuViewer.busy, null, { timeout: 30000, polling: 50 });
    const values = await panelValues(page, 'real');
    const rows = [];
    for (let r = 0; r < 24; r++) rows.push(values.slice(r * 24, (r + 1) * 24).some((v) => v !== 0));
    const filled = rows.filter(Boolean).length;
    await shot('live_mid_scan');
    assert(rows[0] && !rows[23] && filled > 2 && filled < 23, `rows with counts: ${rows.map(Number).join('')}`);
    const text = await page.locator('#live-status').textContent();
    assert(/live dectris:\/\/127\.0\.0\.1:\d+: series 1, \d+ \/ 576 frames/.test(text), `status: ${text}`);
    return `${filled} of 24 rows drawn`;
  });

  await run.check('the detector changed mid-scan applies to the frames already in and those to come', async () => {
    await page.selectOption('#kind', 'annulus');
    await page.waitForFunction(() => window.qgpuViewer.virtualQuery.startsWith('kind=annulus'), null, { timeout: 20000 });
  });

  await run.check('at the end the page shows the service image of the whole scan, equal to the offline load', async () => {
    await page.waitForFunction(() => /finished/.test(document.getElementById('live-status').textContent), null,
      { timeout: 60000 });
    await page.waitForFunction(() => window.qgpuViewer.liveFrames === 576 && !window.qgpuViewer.busy, null, { timeout: 20000 });
    const s = await pageState(page);
    const got = await panelValues(page, 'real');
    const want = await serverValues(base, 'live', `virtual?${s.virtualQuery}&format=json`);
    assert(JSON.stringify(got) === JSON.stringify(want), `page != service for ${s.virtualQuery}`);
    const st = await (await fetch(`${base}api/datasets/live/live`)).json();
    assert(st.finished && st.frames_received === 576 && st.stats.dropped === 0, `status ${JSON.stringify(st)}`);
    // the same query on the offline load of the file (a second service)
    offline = await startServer(opt.qgpu, [h5], opt.web, join(opt.out, 'serve_offline.log'));
    const ref = await serverValues(offline.url, 'live_sample', `virtual?${s.virtualQuery}&format=json`);
    assert(JSON.stringify(ref) === JSON.stringify(want), 'live != offline load');
    await shot('live_finished');
    assert(pageErrors.length === 0, `page errors: ${pageErrors.join('; ')}`);
  });
} catch (e) {
  run.failed++;
  console.log(`FAIL live e2e setup: ${e.stack ?? e}`);
} finally {
  clearTimeout(watchdog);
  await browser?.context.close();
  sim?.kill();
  await server?.stop();
  await offline?.stop();
}
console.log(`live e2e: ${run.passed} passed, ${run.failed} failed`);
process.exit(run.failed ? 1 : 0);
