// The notebook widget's ES module (dist/widget.js, anywidget's render({model, el})) in headless Chromium against a
// mock model (get/set/on/off/send/save_changes) whose Python side is real: widget_bridge.py runs qgpu.widget's
// Show4DState on a sample and answers what the page sends, so every image is a float32 buffer Python computed.
//   node widget.e2e.mjs --qgpu BUILD/qgpu --python-path BUILD/python --web src/remote/web/dist --out DIR
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DE_SCAN, assert, launchBrowser, Runner, tempDir, writeDeCustomScan, writeSample } from './harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const qgpu = arg('qgpu');
const pythonPath = arg('python-path');
const web = arg('web');
const out = arg('out', tempDir('qgpu-widget-e2e-'));
mkdirSync(out, { recursive: true });
const runner = new Runner();

// The Python side: one request at a time, answered by its messages and a "done" line.
function startBridge(file) {
  const child = spawn(process.env.PYTHON ?? '/usr/bin/python3', [join(here, 'widget_bridge.py'), file], {
    env: { ...process.env, PYTHONPATH: pythonPath }, stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  const waiting = [];
  const queued = [];
  lines.on('line', (l) => (waiting.length ? waiting.shift()(JSON.parse(l)) : queued.push(JSON.parse(l))));
  const next = () => (queued.length ? Promise.resolve(queued.shift()) : new Promise((r) => waiting.push(r)));
  // One request at a time: two in flight (a save while Python still answers the last) would share the reply lines,
  // and one of them could wait for a "done" the other took.
  let chain = Promise.resolve();
  const one = async (req) => {
    child.stdin.write(JSON.stringify(req) + '\n');
    const messages = [];
    for (;;) {
      const m = await next();
      if (m.done) return { messages, state: m.done, ms: m.ms };
      messages.push(m);
    }
  };
  return {
    next,
    request(req) {
      const run = chain.then(() => one(req));
      chain = run.catch(() => {});
      return run;
    },
    stop: () => child.kill(),
  };
}

// The page: the widget module served from a fake origin, a mock model wired to the bridge.
const PAGE = `<!doctype html><meta charset="utf-8"><body style="background:#fff;margin:8px">
<div id="cell" style="width:1300px"></div>
<script type="module">
  const listeners = {};
  const state = window.initialState;
  let pending = {};
  const model = window.model = {
    sets: [], saves: 0, sent: [],
    get: (n) => state[n],
    set(n, v) { state[n] = v; pending[n] = v; this.sets.push([n, JSON.parse(JSON.stringify(v))]);
      (listeners['change:' + n] ?? []).forEach((cb) => cb()); },  // as Backbone: a local set fires change too
    // lastReply: resolves once Python's answer to this save has been delivered
    save_changes() { this.saves++; const p = pending; pending = {}; this.lastReply = window.toPython({ set: p }); },
    on(e, cb) { (listeners[e] ??= []).push(cb); },
    off(e, cb) { listeners[e] = (listeners[e] ?? []).filter((x) => x !== cb); },
    send(content) { this.sent.push(content); window.toPython({ msg: content }); },
  };
  window.deliver = (messages, newState) => {
    for (const m of messages) {
      const buffers = m.buffers.map((b) => { const s = atob(b); const u = new Uint8Array(s.length);
        for (let i = 0; i < s.length; ++i) u[i] = s.charCodeAt(i); return new DataView(u.buffer); });
      (listeners['msg:custom'] ?? []).forEach((cb) => cb(m.content, buffers));
    }
    for (const [k, v] of Object.entries(newState)) {
      if (JSON.stringify(state[k]) === JSON.stringify(v)) continue;
      state[k] = v;
      (listeners['change:' + k] ?? []).forEach((cb) => cb());
    }
    window.delivered = (window.delivered ?? 0) + 1;
  };
  const widget = (await import('/widget.js')).default;
  window.cleanup = widget.render({ model, el: document.getElementById('cell') });
</script>`;

// A page of the widget module and the mock model above on a bridge (its dataset), its first images delivered.
async function openOn(bridge, start, onReply = () => {}) {
  const p = await context.newPage();
  p.on('pageerror', (e) => errors.push(e.message));
  await p.exposeFunction('toPython', async (req) => {
    const reply = await bridge.request(req);
    onReply(reply);
    await p.evaluate(([m, s]) => window.deliver(m, s), [reply.messages, reply.state]);
  });
  await p.route('http://widget.test/**', (route) => {
    const path = new URL(route.request().url()).pathname;
    if (path === '/widget.js') return route.fulfill({ contentType: 'text/javascript', body: readFileSync(join(web, 'widget.js')) });
    return route.fulfill({ contentType: 'text/html', body: PAGE });
  });
  await p.addInitScript((s) => (window.initialState = s), start.state);
  await p.goto('http://widget.test/');
  await p.waitForFunction(() => (window.delivered ?? 0) >= 1, null, { timeout: 30000 });
  return p;
}

const file = join(tempDir('qgpu-widget-'), 'scan.h5');
writeSample(qgpu, file, [24, 20], [48, 48]);
const bridge = startBridge(file);
const first = await bridge.next();
assert(first.state, 'the bridge did not start');
const { context } = await launchBrowser();
const errors = [];
let lastMs = 0;
let lastState = first.state;
const page = await openOn(bridge, first, (reply) => {
  lastMs = reply.ms;
  lastState = reply.state;
});
const panel = (id) => page.locator(`#${id}-panel`);
const version = (id) => page.evaluate((id) => {
  const host = document.getElementById('cell').shadowRoot;
  return Number(host.getElementById(`${id}-panel`).dataset.version ?? 0);
}, id);
const canvasSize = (id) => page.evaluate((id) => {
  const c = document.getElementById('cell').shadowRoot.getElementById(id);
  return [c.height, c.width];
}, id);

await runner.check('the first view: pattern, real-space image and frame drawn from Python\'s buffers', async () => {
  await page.waitForFunction(() => (window.delivered ?? 0) >= 1, null, { timeout: 30000 });
  assert(JSON.stringify(await page.evaluate(() => window.model.sent)) === '[{"type":"ready"}]', 'no ready message');
  const sizes = [await canvasSize('pattern'), await canvasSize('real'), await canvasSize('frame')];
  assert(JSON.stringify(sizes) === '[[48,48],[24,20],[48,48]]', `canvas sizes ${JSON.stringify(sizes)}`);
  const labels = await panel('real').locator('.colorbar-labels span').allTextContents();
  assert(labels.length === 3 && labels.every((t) => t.trim() !== ''), `colourbar labels ${labels}`);
  const bar = await panel('real').locator('.scalebar').textContent();
  assert(/ (Å|nm)$/.test(bar), `real-space scale bar '${bar}'`);
  const pbar = await panel('pattern').locator('.scalebar').textContent();
  assert(/mrad$/.test(pbar), `pattern scale bar '${pbar}'`);
  await page.screenshot({ path: join(out, 'widget-first.png') });
  return `scale bars ${bar}, ${pbar}`;
});

await runner.check('hovering the real-space image reads Python\'s value', async () => {
  const box = await panel('real').locator('canvas#real').boundingBox();
  await page.mouse.move(box.x + box.width * (7.5 / 20), box.y + box.height * (5.5 / 24));
  const text = await panel('real').locator('.readout').textContent();
  assert(text.startsWith('(5, 7) = '), `readout '${text}'`);
  return text;
});

await runner.check('dragging the detector ring: debounced saves, Python\'s new BF image drawn', async () => {
  const before = await version('real');
  const saves0 = await page.evaluate(() => window.model.saves);
  const d0 = lastState.detector;
  const svg = await panel('pattern').locator('svg#overlay').boundingBox();
  const x = (col) => svg.x + ((col + 0.5) / 48) * svg.width;
  const y = (row) => svg.y + ((row + 0.5) / 48) * svg.height;
  await page.mouse.move(x(d0.cc + d0.r), y(d0.cr));
  await page.mouse.down();
  const steps = 30;
  const t0 = Date.now();
  for (let i = 1; i <= steps; ++i) {
    await page.mouse.move(x(d0.cc + d0.r + (6 * i) / steps), y(d0.cr));
    await page.waitForTimeout(5);
  }
  await page.mouse.up();
  const dragMs = Date.now() - t0;
  // The last position is sent up to DEBOUNCE_MS (40 ms) after the last move: wait past it, then for Python's answer
  // to that save (reading the model's radius at once raced the debounced send: a 10 s wait for a stale value).
  await page.waitForTimeout(200);
  await page.evaluate(() => window.model.lastReply);
  const saves = (await page.evaluate(() => window.model.saves)) - saves0;
  const r = lastState.detector.r;
  assert(r > d0.r + 4 && r < d0.r + 8, `Python's detector radius ${r} after dragging from ${d0.r} by 6 px`);
  // At most one save per debounce window; fewer saves than moves where the moves came faster than the window (on a
  // loaded machine each move may itself take longer than 40 ms: one save each is then what debouncing gives).
  assert(saves >= 1 && saves <= Math.ceil(dragMs / 40) + 2 && (saves < steps || dragMs / steps >= 40),
    `${saves} saves for ${steps} moves in ${dragMs} ms`);
  assert((await version('real')) > before, 'the real-space panel was not redrawn');
  const title = await panel('real').locator('h2 span').first().textContent();
  assert(title === `virtual disk r ${r.toFixed(1)} px`, `title '${title}' for r ${r}`);
  await page.screenshot({ path: join(out, 'widget-dragged.png') });
  return `${steps} moves -> ${saves} saves, r ${d0.r.toFixed(2)} -> ${r}, last update ${lastMs.toFixed(1)} ms in Python`;
});

await runner.check('a click on the real-space image shows that scan position\'s frame', async () => {
  const box = await panel('real').locator('canvas#real').boundingBox();
  await page.mouse.click(box.x + box.width * (12.5 / 20), box.y + box.height * (3.5 / 24));
  await page.waitForFunction(() => JSON.stringify(window.model.get('position')) === '[3,12]', null, { timeout: 10000 });
  await page.waitForFunction(() => document.getElementById('cell').shadowRoot.querySelector('#frame-panel h2 span').textContent === 'frame (3, 12)',
    null, { timeout: 10000 });
  assert(JSON.stringify(lastState.position) === '[3,12]', `Python's position ${lastState.position}`);
});

await runner.check('product iDPC and an annulus detector; a Python error is shown, not lost', async () => {
  await panel('pattern').page().locator('select.product').selectOption('idpc');
  await page.waitForFunction(() => document.getElementById('cell').shadowRoot.querySelector('#real-panel h2 span').textContent === 'idpc',
    null, { timeout: 20000 });
  await page.locator('select.detector').selectOption('annulus');
  await page.waitForFunction(() => /^virtual annulus/.test(document.getElementById('cell').shadowRoot.querySelector('#real-panel h2 span').textContent),
    null, { timeout: 20000 });
  assert(lastState.product === 'virtual' && lastState.detector.kind === 'annulus', JSON.stringify(lastState));
  assert(await page.locator('select.product').inputValue() === 'virtual', 'the product menu does not follow Python');
  await page.evaluate(() => { window.model.set('detector', { ...window.model.get('detector'), cr: NaN }); window.model.save_changes(); });
  await page.waitForFunction(() => document.getElementById('cell').shadowRoot.querySelector('.status.error') !== null, null, { timeout: 10000 });
  const text = await page.locator('.status').textContent();
  assert(/detector cr must be a finite number/.test(text), `status '${text}'`);
  await page.screenshot({ path: join(out, 'widget-annulus.png') });
});

await runner.check('export: the real-space panel\'s PNG and .npy', async () => {
  const [png] = await Promise.all([page.waitForEvent('download'), panel('real').locator('button', { hasText: 'PNG' }).click()]);
  const pngPath = join(out, 'widget-real.png');
  await png.saveAs(pngPath);
  const bytes = readFileSync(pngPath);
  assert(bytes.readUInt32BE(16) === 20 && bytes.readUInt32BE(20) === 24, 'the PNG is not the 24 x 20 image');
  const [npy] = await Promise.all([page.waitForEvent('download'), panel('real').locator('button', { hasText: '.npy' }).click()]);
  const npyPath = join(out, 'widget-real.npy');
  await npy.saveAs(npyPath);
  assert(readFileSync(npyPath).toString('latin1').includes("'shape': (24, 20)"), 'the .npy is not 24 x 20');
});

await runner.check('a dataset with positions without a frame: hatched, "5 positions missing", "missing" on hover', async () => {
  // A second widget on a Direct Electron custom scan that never lists 5 of its 48 positions (its own bridge, page).
  const de = startBridge(writeDeCustomScan(tempDir('qgpu-widget-de-')));
  try {
    const start = await de.next();
    assert(JSON.stringify(start.state.missing) === JSON.stringify({ count: 5, positions: DE_SCAN.MISSING }),
      `trait missing ${JSON.stringify(start.state.missing)}`);
    const p2 = await openOn(de, start);
    const { ROWS, COLS, MISSING } = DE_SCAN;
    const got = await p2.evaluate(({ rows, cols }) => {
      const host = document.getElementById('cell').shadowRoot;
      const layer = host.getElementById('real-missing-layer');
      const k = layer.width / cols, lay = layer.getContext('2d').getImageData(0, 0, layer.width, layer.height).data;
      const pic = host.getElementById('real').getContext('2d').getImageData(0, 0, cols, rows).data;
      const hatched = [], transparent = [];
      for (let q = 0; q < rows * cols; ++q) {
        const r = Math.floor(q / cols), c = q % cols;
        if (lay[4 * ((r * k + Math.floor(k / 2)) * layer.width + c * k + Math.floor(k / 2)) + 3]) hatched.push(q);
        if (!pic[4 * q + 3]) transparent.push(q);
      }
      return { legend: host.getElementById('real-missing').textContent, hatched, transparent };
    }, { rows: ROWS, cols: COLS });
    assert(/^5 positions missing \(no frame\)/.test(got.legend), `legend '${got.legend}'`);
    assert(JSON.stringify(got.hatched) === JSON.stringify(MISSING), `hatched ${got.hatched}`);
    assert(JSON.stringify(got.transparent) === JSON.stringify(MISSING), `transparent ${got.transparent}`);
    const box = await p2.locator('canvas#real').boundingBox();
    await p2.mouse.move(box.x + box.width * (3.5 / COLS), box.y + box.height * (0.5 / ROWS));
    const text = await p2.locator('#real-panel .readout').textContent();
    assert(text.startsWith('(0, 3) missing'), `readout '${text}'`);
    await p2.screenshot({ path: join(out, 'widget-missing.png'), fullPage: true });
    await p2.close();
    return text;
  } finally {
    de.stop();
  }
});

await runner.check('a scan wider than 1024 positions is shown binned; a click picks its block centre', async () => {
  const wide = join(tempDir('qgpu-widget-wide-'), 'wide.h5');
  writeSample(qgpu, wide, [4, 2048], [16, 16]);  // the viewer's rule: 2 x 2 (1024 a side)
  const wb = startBridge(wide);
  try {
    const start = await wb.next();
    let state = start.state;
    const p3 = await openOn(wb, start, (reply) => { state = reply.state; });
    const size = await p3.evaluate(() => {
      const c = document.getElementById('cell').shadowRoot.getElementById('real');
      return [c.height, c.width];
    });
    assert(JSON.stringify(size) === '[2,1024]', `binned canvas ${JSON.stringify(size)}`);
    const title = await p3.locator('#real-panel h2 span').first().textContent();
    assert(title.includes('binned 2×2 scan positions'), `title '${title}'`);
    const box = await p3.locator('#real-panel canvas#real').boundingBox();
    await p3.mouse.click(box.x + box.width * (700.5 / 1024), box.y + box.height * (1.5 / 2));  // picture pixel (1, 700)
    // (a picture pixel is under half a screen pixel here: the click lands within a few pixels of 700)
    await p3.waitForFunction(() => window.model.sets.some(([n]) => n === 'position'), null, { timeout: 10000 });
    const [r, c] = await p3.evaluate(() => window.model.get('position'));
    assert(r === 3 && c % 2 === 1 && Math.abs(c - 1401) <= 8, `position (${r}, ${c}): not a block centre near (3, 1401)`);
    await p3.waitForFunction(() => /^frame \(3, \d+\)$/.test(document.getElementById('cell').shadowRoot.querySelector('#frame-panel h2 span').textContent),
      null, { timeout: 10000 });
    await p3.screenshot({ path: join(out, 'widget-binned.png') });
    await p3.close();
    return `canvas 2 x 1024, position (${r}, ${c}), Python's ${JSON.stringify(state.position)}`;
  } finally {
    wb.stop();
  }
});

await runner.check('no page errors', async () => {
  assert(errors.length === 0, errors.join('; '));
});

writeFileSync(join(out, 'widget-state.json'), JSON.stringify(lastState, null, 1));
await context.close();
bridge.stop();
console.log(`widget e2e: ${runner.passed} passed, ${runner.failed} failed (screenshots in ${out})`);
process.exit(runner.failed ? 1 : 0);
