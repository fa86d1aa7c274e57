// Browser end-to-end test of the local-file page (local.html): no `qgpu serve`. The page is served as static files
// (a tiny node server standing in for any web host), the HDF5 files are handed to its file input the way a user
// picks them, and everything is read and computed in the page: the TypeScript HDF5 reader, the WGSL bitshuffle+LZ4
// decoder, the WGSL exact virtual detector. Checked against independent references made at test time:
//   - frames of files written by the HDF5 library through the real bitshuffle plugin in every chunk index layout
//     (tests/io/webgpu/write_webgpu_fixtures.cpp; its reference is H5Dread through the plugin), decoded on the GPU
//     and by the TypeScript reference decoder: equal bit for bit;
//   - `qgpu sample` files (one file, and a master with 3 data files picked together): the page's metadata equals
//     `qgpu info --json`, its BF image equals `qgpu image --bf --backend cpu` (uint64 .npy) exactly;
//   - corrupt chunks get a per-chunk status; the full 1024x1024x192x192 stack is refused with the options.
// The adapter is logged; SwiftShader (headless chromium here) is a smoke test of the WGSL, no speed is claimed.
// Then the same page opened from disk (file://), as one self-contained file.
// Usage: node local.e2e.mjs --qgpu BUILD/qgpu --fixtures BUILD/tests/io/write_webgpu_fixtures --web WEB_DIST [--webgpu auto|off] [--out DIR]
import { execFileSync } from 'node:child_process';
import { copyFileSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { basename, extname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Runner, assert, launchBrowser, tempDir } from './harness.mjs';

const { values: opt } = parseArgs({
  options: { qgpu: { type: 'string' }, fixtures: { type: 'string' }, web: { type: 'string' }, webgpu: { type: 'string', default: 'auto' },
             out: { type: 'string' } },
});
if (!opt.qgpu || !opt.fixtures || !opt.web) throw new Error('usage: local.e2e.mjs --qgpu PATH --fixtures PATH --web DIR');
for (const k of ['qgpu', 'fixtures', 'web']) opt[k] = resolve(opt[k]);
const run = new Runner();
const tmp = tempDir('qgpu-local-e2e-');
let browser, http;
const watchdog = setTimeout(() => {
  console.log('FAIL local e2e watchdog: the whole test took longer than 400 s');
  console.log(`local e2e: ${run.passed} passed, ${run.failed + 1} failed`);
  process.exit(1);
}, 400000);

// Static files of the built page only.
function serveStatic(dir) {
  const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.map': 'application/json' };
  const server = createServer((req, res) => {
    const name = basename(new URL(req.url, 'http://x').pathname) || 'index.html';
    try {
      const body = readFileSync(join(dir, name));
      res.writeHead(200, { 'content-type': types[extname(name)] ?? 'application/octet-stream' });
      res.end(body);
    } catch {
      res.writeHead(404);
      res.end();
    }
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

// uint64 little-endian .npy -> array of decimal strings.
function readNpyU64(path) {
  const b = readFileSync(path);
  const hlen = b.readUInt16LE(8);
  const header = b.subarray(10, 10 + hlen).toString();
  assert(header.includes("'<u8'"), `${path}: dtype in ${header}`);
  const out = [];
  for (let o = 10 + hlen; o < b.length; o += 8) out.push(b.readBigUInt64LE(o).toString());
  return out;
}

function readNpyF32(path) {
  const b = readFileSync(path);
  const hlen = b.readUInt16LE(8);
  assert(b.subarray(10, 10 + hlen).toString().includes("'<f4'"), `${path}: not float32`);
  const out = [];
  for (let o = 10 + hlen; o < b.length; o += 4) out.push(b.readFloatLE(o));
  return out;
}

try {
  // References, made now with the HDF5 library + plugin and the qgpu CPU backend.
  const manifest = JSON.parse(execFileSync(opt.fixtures, [tmp], { encoding: 'utf8', timeout: 120000 }));
  const sample = join(tmp, 'local_sample.h5');
  execFileSync(opt.qgpu, ['sample', sample, '--scan', '12', '10', '--detector', '32', '32'], { stdio: 'pipe', timeout: 120000 });
  const master = join(tmp, 'local_multi.h5');
  execFileSync(opt.qgpu, ['sample', master, '--scan', '8', '8', '--detector', '24', '24', '--files', '3'], { stdio: 'pipe', timeout: 120000 });
  const multiFiles = [master, ...[1, 2, 3].map((i) => join(tmp, `local_multi_data_00000${i}.h5`))];
  // More than 8 links: HDF5 keeps the master's /entry/data links in dense storage (fractal heap + B-tree v2).
  const dense = join(tmp, 'local_dense.h5');
  execFileSync(opt.qgpu, ['sample', dense, '--scan', '12', '12', '--detector', '16', '16', '--files', '12'], { stdio: 'pipe', timeout: 120000 });
  const denseFiles = [dense, ...Array.from({ length: 12 }, (_, i) => join(tmp, `local_dense_data_${String(i + 1).padStart(6, '0')}.h5`))];
  const infoOf = (f) => JSON.parse(execFileSync(opt.qgpu, ['info', f, '--json'], { encoding: 'utf8', cwd: tmp }));
  const bfOf = (f, cr, cc, r, out) => {
    execFileSync(opt.qgpu, ['image', f, '--bf', String(r), '--center', String(cr), String(cc), '--backend', 'cpu', '-o', out], { stdio: 'pipe' });
    return readNpyU64(join(out, 'bf.npy'));
  };

  http = await serveStatic(opt.web);
  const url = `http://127.0.0.1:${http.address().port}/local.html`;
  browser = await launchBrowser(opt.webgpu === 'off' ? [] : ['--enable-unsafe-webgpu']);
  const page = browser.context.pages()[0] ?? (await browser.context.newPage());
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  let adapter = null;
  const open = async (files) => {
    // Picking the files already picked fires no change event: clear the input first (the page then reports
    // 'no file given', and the next open clears its errors).
    if (await page.evaluate(() => document.getElementById('files').files.length)) {
      const v0 = await page.evaluate(() => window.qgpuLocal.version);
      await page.setInputFiles('#files', []);
      await page.waitForFunction((x) => window.qgpuLocal.version > x, v0, { timeout: 30000 });
    }
    const v = await page.evaluate(() => window.qgpuLocal.version);
    await page.setInputFiles('#files', files);
    await page.waitForFunction((x) => window.qgpuLocal.version > x, v, { timeout: 60000 });
    return page.evaluate(() => ({ info: window.qgpuLocal.info, errors: window.qgpuLocal.errors, methods: window.qgpuLocal.methods,
      bfSums: window.qgpuLocal.bfSums, bfQuery: window.qgpuLocal.bfQuery }));
  };

  await run.check('local page loads without a server and reports its WebGPU adapter', async () => {
    await page.goto(url);
    await page.waitForFunction(() => window.qgpuLocal?.ready, null, { timeout: 30000 });
    adapter = await page.evaluate(() => window.qgpuLocal.adapter);
    if (!adapter) return { skip: 'no WebGPU adapter in this browser' };
    return `adapter '${adapter.adapter}'${adapter.fallback ? ' (software/fallback: a smoke test, no speed claimed)' : ''}`;
  });

  for (const fx of manifest) {
    await run.check(`${fx.name}: HDF5 reader (${fx.method}) + WGSL decode equal the HDF5 library frames`, async () => {
      const s = await open([join(tmp, `${fx.name}.h5`)]);
      const partial = fx.written < fx.dims[0];
      // a file still being acquired opens (metadata, readiness) but its frames are not loaded
      assert(partial ? s.errors.length === 1 && /frame 20 .* is not written yet/.test(s.errors[0]) : s.errors.length === 0, `page errors: ${s.errors}`);
      assert(JSON.stringify(s.info.stored_dims) === JSON.stringify(fx.dims) && s.info.dtype === fx.dtype, `info ${s.info.stored_dims} ${s.info.dtype}`);
      assert(s.methods[0] === `parsed: ${fx.method}`, `index ${s.methods[0]}, ${fx.method} expected`);
      assert(s.info.ready === !partial && s.info.chunks_written === fx.written && s.info.chunks_expected === fx.dims[0],
        `readiness ${s.info.chunks_written}/${s.info.chunks_expected} ready ${s.info.ready}`);
      // (a small file's Buffer is a view into Node's shared pool: copy exactly its bytes)
      const raw = readFileSync(join(tmp, `${fx.name}.u32`));
      const want = new Uint32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length));
      const frames = fx.written, n = want.length / fx.dims[0];
      const cpu = await page.evaluate((k) => window.qgpuLocal.decodeFrames(0, k, 'cpu'), frames);
      let bad = cpu.values.findIndex((v, i) => v !== want[i]);
      assert(cpu.values.length === frames * n && bad < 0, `TS reference decoder differs at element ${bad}`);
      if (!adapter) return { skip: 'no WebGPU adapter: TypeScript reader and reference decoder checked only' };
      const gpu = await page.evaluate((k) => window.qgpuLocal.decodeFrames(0, k, 'gpu'), frames);
      assert(gpu.status.every((x) => x === 0), `chunk status ${gpu.status.filter((x) => x).length} bad: ${gpu.messages.find(Boolean)}`);
      bad = gpu.values.findIndex((v, i) => v !== want[i]);
      assert(gpu.values.length === frames * n && bad < 0, `WGSL decoder differs at element ${bad}: ${gpu.values[bad]} vs ${want[bad]}`);
      return `${frames} frames of ${fx.dims[1]}x${fx.dims[2]} ${fx.dtype}, ${frames * n} values exact${partial ? `, ${fx.written} of ${fx.dims[0]} written: not ready` : ''}`;
    });
  }

  await run.check('uint8 and uint32 files: WebGPU BF (sparse) and ADF (total-minus-complement) equal qgpu image (CPU) exactly', async () => {
    if (!adapter) return { skip: 'no WebGPU adapter' };
    const notes = [];
    for (const [name, cr, cc] of [['btree_v1_sb2_u8_tail', 6, 5], ['fixed_array_u32', 5.5, 6]]) {
      const f = join(tmp, `${name}.h5`);
      const s = await open([f]);
      assert(s.errors.length === 0, `${name}: ${s.errors}`);
      const out = join(tmp, `dt_${name}`);
      execFileSync(opt.qgpu, ['image', f, '--bf', '4', '--adf', '1', '9', '--center', String(cr), String(cc), '--backend', 'cpu', '-o', out], { stdio: 'pipe' });
      const bf = await page.evaluate(([cr, cc]) => window.qgpuLocal.bf(cr, cc, 4), [cr, cc]);
      const adf = await page.evaluate(([cr, cc]) => window.qgpuLocal.ring(cr, cc, 1, 9), [cr, cc]);
      const wantBf = readNpyU64(join(out, 'bf.npy')), wantAdf = readNpyU64(join(out, 'adf.npy'));
      assert(JSON.stringify(bf) === JSON.stringify(wantBf), `${name} BF: ${bf.slice(0, 3)} vs ${wantBf.slice(0, 3)}`);
      assert(adf.plan === 'total-minus-complement' && JSON.stringify(adf.sums) === JSON.stringify(wantAdf), `${name} ADF (${adf.plan}): ${adf.sums.slice(0, 3)} vs ${wantAdf.slice(0, 3)}`);
      notes.push(`${s.info.dtype}: BF max ${wantBf.reduce((m, v) => (BigInt(v) > m ? BigInt(v) : m), 0n)}, ADF ${adf.plan}`);
    }
    return notes.join('; ');
  });

  await run.check('a file still being acquired: readiness equals qgpu info', async () => {
    const f = join(tmp, 'partial_fixed_array_u16.h5');
    const s = await open([f]);
    const want = infoOf(f);
    for (const k of ['chunks_expected', 'chunks_written', 'ready', 'shape', 'scan_shape_source'])
      assert(JSON.stringify(s.info[k]) === JSON.stringify(want[k]), `${k}: page ${JSON.stringify(s.info[k])}, qgpu info ${JSON.stringify(want[k])}`);
    return `${s.info.chunks_written} of ${s.info.chunks_expected} chunks written, ready ${s.info.ready}`;
  });

  // JSON with object keys sorted (the page and qgpu order keys differently).
  const canon = (v) => JSON.stringify(v, (_, x) => (x && typeof x === 'object' && !Array.isArray(x) ?
    Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1))) : x));
  const sameInfo = (got, want) => {
    const keys = ['dataset_path', 'dtype', 'byte_order', 'precision', 'bit_offset', 'stored_dims', 'chunk_dims', 'filters', 'shape', 'scan_shape_source', 'one_frame_per_chunk',
      'bitshuffle_lz4', 'bitshuffle_block_elems', 'source_kind', 'ntrigger', 'nimages', 'pixel_mask', 'chunks_expected',
      'chunks_written', 'ready', 'calibration'];
    for (const k of keys) assert(canon(got[k]) === canon(want[k]), `${k}: page ${canon(got[k])}, qgpu info ${canon(want[k])}`);
    const parts = (ps) => JSON.stringify(ps.map((p) => [basename(p.file), p.dataset_path, p.first_frame, p.frames]));
    assert(parts(got.parts) === parts(want.parts), `parts: page ${parts(got.parts)}, qgpu info ${parts(want.parts)}`);
  };

  await run.check('qgpu sample file: metadata equals qgpu info, WebGPU BF equals qgpu image --bf (CPU) exactly', async () => {
    const s = await open([sample]);
    assert(s.errors.length === 0, `page errors: ${s.errors}`);
    sameInfo(s.info, infoOf(sample));
    if (!adapter) return { skip: 'no WebGPU adapter: metadata checked only' };
    const sums = await page.evaluate(() => window.qgpuLocal.bf(15.5, 14, 6));
    const want = bfOf(sample, 15.5, 14, 6, join(tmp, 'bf_single'));
    assert(JSON.stringify(sums) === JSON.stringify(want), `BF differs: ${sums.slice(0, 4)} vs ${want.slice(0, 4)}`);
    return `${sums.length} BF sums exact`;
  });

  await run.check('qgpu sample file: WebGPU ADF (total-minus-complement) equals qgpu image --adf (CPU) exactly', async () => {
    if (!adapter) return { skip: 'no WebGPU adapter' };
    const r = await page.evaluate(() => window.qgpuLocal.ring(15.5, 14, 4, 40));  // the sample is still open
    const out = join(tmp, 'adf_single');
    execFileSync(opt.qgpu, ['image', sample, '--adf', '4', '40', '--center', '15.5', '14', '--backend', 'cpu', '-o', out], { stdio: 'pipe' });
    const want = readNpyU64(join(out, 'adf.npy'));
    assert(r.plan === 'total-minus-complement', `plan ${r.plan}`);
    assert(JSON.stringify(r.sums) === JSON.stringify(want), `ADF differs: ${r.sums.slice(0, 4)} vs ${want.slice(0, 4)}`);
    const small = await page.evaluate(() => window.qgpuLocal.ring(15.5, 14, 2, 5));
    execFileSync(opt.qgpu, ['image', sample, '--adf', '2', '5', '--center', '15.5', '14', '--backend', 'cpu', '-o', out], { stdio: 'pipe' });
    assert(small.plan === 'sparse' && JSON.stringify(small.sums) === JSON.stringify(readNpyU64(join(out, 'adf.npy'))), 'small annulus differs');
    return `${r.sums.length} sums exact on both plans`;
  });

  await run.check('qgpu sample file: WebGPU CoM and centred DPC within 1e-5 px of qgpu image --com (CPU)', async () => {
    if (!adapter) return { skip: 'no WebGPU adapter' };
    const r = await page.evaluate(() => window.qgpuLocal.com());
    const out = join(tmp, 'com_single');
    execFileSync(opt.qgpu, ['image', sample, '--com', '--backend', 'cpu', '-o', out], { stdio: 'pipe' });
    const row = readNpyF32(join(out, 'com_row.npy')), col = readNpyF32(join(out, 'com_col.npy'));
    const maxDiff = (a, b) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);
    const dCom = Math.max(maxDiff(r.row, row), maxDiff(r.col, col));
    // centred DPC reference: CPU CoM minus its mean (double), as dpc::centered_dpc
    const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length;
    const mr = mean(row), mc = mean(col);
    const dDpc = Math.max(maxDiff(r.dpcRow, row.map((v) => Math.fround(v - mr))), maxDiff(r.dpcCol, col.map((v) => Math.fround(v - mc))));
    assert(r.row.length === row.length && dCom <= 1e-5 && dDpc <= 1e-5, `max |diff| CoM ${dCom}, DPC ${dDpc}`);
    return `${row.length} positions, max |diff| CoM ${dCom}, DPC ${dDpc}`;
  });

  await run.check('qgpu sample file: WebGPU iDPC at a fixed rotation within 1e-5 relative L2 of qgpu image --idpc (CPU, FFTW double)', async () => {
    if (!adapter) return { skip: 'no WebGPU adapter' };
    const notes = [];
    for (const [angle, transpose] of [[0, false], [-37.5, true]]) {
      const out = join(tmp, `idpc_${angle}`);
      execFileSync(opt.qgpu, ['image', sample, '--idpc', '--rotation', String(angle), ...(transpose ? ['1'] : []), '--backend', 'cpu', '-o', out], { stdio: 'pipe' });
      const want = readNpyF32(join(out, 'idpc.npy'));
      const got = await page.evaluate(([a, t]) => window.qgpuLocal.idpc(a, t), [angle, transpose]);
      let num = 0, den = 0;
      want.forEach((w, i) => { num += (got[i] - w) ** 2; den += w * w; });
      const rel = Math.sqrt(num / den);
      assert(got.length === want.length && rel <= 1e-5, `angle ${angle}: relative L2 difference ${rel}`);
      notes.push(`angle ${angle}${transpose ? ' transposed' : ''}: ${rel.toExponential(2)}`);
    }
    return notes.join('; ');
  });

  await run.check('qgpu sample file: WebGPU SSB at a given defocus on a binned detector within 2e-4 rad of qgpu ssb --preview (CPU)', async () => {
    if (!adapter) return { skip: 'no WebGPU adapter' };
    const notes = [];
    // The browser's SSB is qgpu ssb's amplitude weighting; rotation and transpose in the same convention.
    for (const [defocus, bin, rot] of [[50, 2, []], [-120, 1, ['--rotation', '30']], [0, 4, ['--rotation', '-75', '--transpose']]]) {
      const out = join(tmp, `ssb_${bin}`);
      execFileSync(opt.qgpu, ['ssb', sample, '--defocus', String(defocus), '--preview', String(bin), '--weighting', 'amplitude',
        ...rot, '--backend', 'cpu', '-o', out], { stdio: 'pipe' });
      const want = readNpyF32(join(out, 'ssb_preview_phase.npy'));
      const pr = JSON.parse(readFileSync(join(out, 'ssb_preview_phase.json'), 'utf8')).result.parameters;
      const params = { energyKev: pr.energy_kev, semiangleMrad: pr.semiangle_mrad, scanStepAngstrom: pr.scan_step_angstrom,
        detectorMradPerPixel: pr.detector_mrad_per_pixel, diskCenter: pr.disk_center, rotationDeg: pr.rotation_deg,
        transpose: pr.transpose, detectorBin: pr.detector_bin, aberrations: pr.aberrations };
      const got = await page.evaluate((p) => window.qgpuLocal.ssb(p), params);
      const d = got.reduce((m, v, i) => Math.max(m, Math.abs(v - want[i])), 0);
      const span = Math.max(...want) - Math.min(...want);
      assert(got.length === want.length && d <= 2e-4, `defocus ${defocus}, bin ${bin}: max |phase diff| ${d} rad (phase span ${span})`);
      notes.push(`C1 ${defocus}, bin ${bin}, rotation ${pr.rotation_deg}${pr.transpose ? ' transposed' : ''} (${pr.k_groups} K groups): ${d.toExponential(2)} rad of ${span.toFixed(3)}`);
    }
    return notes.join('; ');
  });

  await run.check('display: every colormap x linear/log/signed_log on signed DPC values equals the qgpu PNG, histogram exact', async () => {
    if (!adapter) return { skip: 'no WebGPU adapter' };
    const notes = [];
    for (const cmap of ['viridis', 'magma', 'inferno', 'plasma', 'gray'])
      for (const scale of ['linear', 'log', 'signed_log']) {
        const out = join(tmp, `disp_${cmap}_${scale}`);
        execFileSync(opt.qgpu, ['image', sample, '--dpc', '--rotation', '0', '--colormap', cmap, '--scale', scale, '--percentiles', '2', '97',
          '--backend', 'cpu', '-o', out], { stdio: 'pipe' });
        const values = readNpyF32(join(out, 'dpc_col.npy'));
        const png = Array.from(readFileSync(join(out, 'dpc_col.png')));
        const o = { colormap: cmap, scale, lowerPercentile: 2, upperPercentile: 97 };
        const r = await page.evaluate(([v, o, p]) => window.qgpuLocal.renderCheck(v, o, p), [values, o, png]);
        assert(r.cpuVsPng === 0, `${cmap}/${scale}: ${r.cpuVsPng} pixels of the JS reference differ from the qgpu PNG`);
        assert(r.gpuVsPng === 0, `${cmap}/${scale}: ${r.gpuVsPng} WGSL pixels differ from the qgpu PNG`);
        assert(r.histogramsEqual, `${cmap}/${scale}: WGSL histogram differs from the reference`);
        assert(r.histogram.reduce((a, b) => a + b, 0) === values.length, `${cmap}/${scale}: histogram counts ${r.histogram.reduce((a, b) => a + b, 0)}`);
        notes.push(r.flagged);
      }
    return `15 combinations exact; pixels resolved on the host per combination: ${notes.join(',')}`;
  });

  await run.check('display: 200000 synthetic values (decades, signs, zeros, NaN, inf): WGSL RGBA and histogram equal the CPU reference', async () => {
    if (!adapter) return { skip: 'no WebGPU adapter' };
    const notes = [];
    for (const scale of ['linear', 'log', 'signed_log'])
      for (const [plo, phi] of [[0, 100], [1, 99.5]]) {
        const r = await page.evaluate((o) => window.qgpuLocal.renderSynthetic(200000, o), { colormap: 'inferno', scale, lowerPercentile: plo, upperPercentile: phi });
        assert(r.rgbaEqual && r.histogramsEqual, `${scale} ${plo}..${phi}: ${JSON.stringify(r)}`);
        notes.push(`${scale} ${plo}..${phi}: ${r.flagged} on host`);
      }
    return notes.join('; ');
  });

  await run.check('scan crop + exact detector bin load: BF equals qgpu image --scan-region --bin-detector (CPU) exactly', async () => {
    if (!adapter) return { skip: 'no WebGPU adapter' };
    const notes = [];
    for (const [region, bin] of [[[2, 3, 7, 5], 2], [[0, 0, 12, 10], 4], [[5, 1, 4, 8], 1]]) {
      const shape = await page.evaluate(async ([region, bin]) => {
        const v = window.qgpuLocal.version;
        await window.qgpuLocal.load({ scanRegion: region, binDetector: bin });
        return { shape: window.qgpuLocal.shape, errors: window.qgpuLocal.errors, bumped: window.qgpuLocal.version > v };
      }, [region, bin]);
      assert(shape.errors.length === 0 && JSON.stringify(shape.shape) === JSON.stringify([region[2], region[3], 32 / bin, 32 / bin]), JSON.stringify(shape));
      const cr = (32 / bin - 1) / 2, r = 12 / bin;
      const sums = await page.evaluate(([cr, r]) => window.qgpuLocal.bf(cr, cr, r), [cr, r]);
      const out = join(tmp, `bf_crop_${bin}`);
      execFileSync(opt.qgpu, ['image', sample, '--bf', String(r), '--center', String(cr), String(cr), '--scan-region', ...region.map(String),
        '--bin-detector', String(bin), '--backend', 'cpu', '-o', out], { stdio: 'pipe' });
      const want = readNpyU64(join(out, 'bf.npy'));
      assert(JSON.stringify(sums) === JSON.stringify(want), `region ${region} bin ${bin}: ${sums.slice(0, 4)} vs ${want.slice(0, 4)}`);
      notes.push(`${region.join(',')} bin ${bin}: ${sums.length} sums`);
    }
    const refused = await page.evaluate(async () => {
      window.qgpuLocal.errors.length = 0;
      await window.qgpuLocal.load({ binDetector: 3 });
      return window.qgpuLocal.errors.slice();
    });
    assert(refused.length === 1 && /does not divide/.test(refused[0]), `bin 3 of 32: ${JSON.stringify(refused)}`);
    await page.evaluate(() => window.qgpuLocal.load({}));
    return notes.join('; ') + ' exact';
  });

  await run.check('multi-file master + 3 data files picked together: metadata equals qgpu info, BF exact', async () => {
    const s = await open(multiFiles);
    assert(s.errors.length === 0, `page errors: ${s.errors}`);
    sameInfo(s.info, infoOf(master));
    assert(s.info.parts.length === 3 && s.info.source_kind === 'linked files', `parts ${JSON.stringify(s.info.parts)}`);
    if (!adapter) return { skip: 'no WebGPU adapter: metadata checked only' };
    const want = bfOf(master, 11, 12.5, 5, join(tmp, 'bf_multi'));
    const sums = await page.evaluate(() => window.qgpuLocal.bf(11, 12.5, 5));
    assert(JSON.stringify(sums) === JSON.stringify(want), `BF differs: ${sums.slice(0, 4)} vs ${want.slice(0, 4)}`);
    const frames = await page.evaluate(() => window.qgpuLocal.decodeFrames(20, 4, 'gpu'));
    const cpu = await page.evaluate(() => window.qgpuLocal.decodeFrames(20, 4, 'cpu'));
    assert(JSON.stringify(frames.values) === JSON.stringify(cpu.values), 'frames across the data-file boundary differ GPU vs TS');
    return `${s.info.parts.length} parts, ${sums.length} BF sums exact, pixel mask ${s.info.pixel_mask.bad_pixels} bad`;
  });

  await run.check('master with 12 data files (dense link storage): metadata equals qgpu info, BF exact', async () => {
    const s = await open(denseFiles);
    assert(s.errors.length === 0, `page errors: ${s.errors}`);
    sameInfo(s.info, infoOf(dense));
    assert(s.info.parts.length === 12, `parts ${s.info.parts.length}`);
    if (!adapter) return { skip: 'no WebGPU adapter: metadata checked only' };
    const want = bfOf(dense, 7.5, 8, 3, join(tmp, 'bf_dense'));
    const sums = await page.evaluate(() => window.qgpuLocal.bf(7.5, 8, 3));
    assert(JSON.stringify(sums) === JSON.stringify(want), `BF differs: ${sums.slice(0, 4)} vs ${want.slice(0, 4)}`);
    return `${s.info.parts.length} parts, ${sums.length} BF sums exact`;
  });

  await run.check('hostile files: truncated, not HDF5, bad index checksum, corrupt chunk, big-endian, 12-bit counts: one clear error each, no hang', async () => {
    const src = readFileSync(join(tmp, 'btree_v1_sb0_u16.h5'));
    const cases = [];
    const write = (name, bytes) => { writeFileSync(join(tmp, name), bytes); return join(tmp, name); };
    cases.push([write('hostile_truncated.h5', src.subarray(0, Math.floor(src.length * 0.3))), /beyond the end of the file|truncated/]);
    cases.push([write('hostile_not_hdf5.h5', Buffer.alloc(5000, 7)), /not an HDF5 file/]);
    const fa = Buffer.from(readFileSync(join(tmp, 'fixed_array_u32.h5')));
    const at = fa.indexOf('FAHD');
    assert(at > 0, 'no fixed array header in the fixture');
    fa[at + 9] ^= 0x40;
    cases.push([write('hostile_checksum.h5', fa), /checksum mismatch in fixed array header/]);
    // frame 17's first LZ4 block claims more bytes than its chunk holds (LZ4 has no checksum: scrambled literals
    // would decode, undetectably, so the framing is what a reader can check)
    await open([join(tmp, 'btree_v1_sb0_u16.h5')]);
    const offsets = await page.evaluate(() => window.qgpuLocal.chunkOffsets());
    const cc = Buffer.from(src);
    cc.writeUInt32BE(0x7fff, offsets[17] + 12);
    cases.push([write('hostile_chunk.h5', cc), /frame 17 did not decode: block 0 claims 32767 compressed bytes/]);
    // issue 25: counts stored big-endian, and a count of 12 bits at bit offset 4 (write_webgpu_fixtures): refused
    // by name, never decoded as plain little-endian counts
    cases.push([join(tmp, 'hostile_big_endian_u16.h5'), /uint16 counts stored big-endian; the browser reader decodes little-endian counts only/]);
    cases.push([join(tmp, 'hostile_precision12_u16.h5'), /uint16 elements whose count is 12 bits \(precision\) at bit offset 4/]);
    const got = [];
    for (const [file, re] of cases) {
      const s = await open([file]);
      const msg = s.errors.join(' | ');
      assert(s.errors.length === 1 && re.test(msg), `${basename(file)}: ${JSON.stringify(s.errors)}`);
      got.push(`${basename(file)}: ${msg.slice(0, 90)}`);
    }
    return got.join('; ');
  });

  await run.check('a master without its data files names the missing file', async () => {
    const s = await open([master]);
    assert(s.errors.length === 1 && /local_multi_data_000001\.h5.*not picked/.test(s.errors[0]), `errors ${JSON.stringify(s.errors)}`);
  });

  await run.check('WGSL decoder over more than 65535 blocks in one dispatch (second dispatch dimension)', async () => {
    if (!adapter) return { skip: 'no WebGPU adapter' };
    await open([join(tmp, 'btree_v1_sb2_u8_tail.h5')]);  // 13x11 uint8: one LZ4 block + a 7-element tail per chunk
    const t0 = Date.now();
    const r = await page.evaluate(() => window.qgpuLocal.decodeReplicated(33000));  // 2 blocks per chunk
    assert(r.mismatches === 0 && r.badStatus === 0 && r.blocks > 65535, JSON.stringify(r));
    return `${r.blocks} blocks, all equal to the reference (${((Date.now() - t0) / 1000).toFixed(1)} s, not a speed claim)`;
  }, 240000);

  await run.check('corrupt chunks get their own status, the other chunks decode', async () => {
    if (!adapter) return { skip: 'no WebGPU adapter' };
    await open([sample]);
    const r = await page.evaluate(() => window.qgpuLocal.corruptCheck());
    assert(r.status[0] === 0 && r.status[3] === 0, `intact chunks: ${r.status}`);
    assert(r.status[1] !== 0 && r.status[2] !== 0, `corrupt chunks decoded without complaint: ${r.status} ${r.messages}`);
    assert(r.intactEqual, 'intact chunks differ from the reference decoder');
    return r.messages.filter(Boolean).join('; ');
  });

  await run.check('the full 1024x1024x192x192 stack is refused with crop / bin / product cache offered', async () => {
    const r = await page.evaluate(() => {
      const info = { ...window.qgpuLocal.info, shape: [1024, 1024, 192, 192] };
      return [window.qgpuLocal.admit(info, {}, 2 ** 31 * 0.8), window.qgpuLocal.admit(info, { binDetector: 8, scanRegion: [0, 0, 512, 512] }, 2 ** 31 * 0.8)];
    });
    assert(!r[0].ok && /crop/.test(r[0].message) && /exact detector bin/.test(r[0].message) && /qgpu cache/.test(r[0].message), r[0].message);
    assert(r[1].ok, `a crop with a bin of 8 should fit: ${JSON.stringify(r[1])}`);
    return r[0].message;
  });

  await run.check('the page\'s product buttons draw every product (BF, ADF, CoM, DPC, iDPC, SSB) without error', async () => {
    if (!adapter) return { skip: 'no WebGPU adapter' };
    assert((await page.evaluate(() => window.qgpuLocal.info.path)) === basename(sample), 'the sample is not the open file');  // opened by the corrupt-chunk check
    for (const product of ['bf', 'adf', 'com_row', 'com_col', 'dpc_row', 'dpc_col', 'idpc', 'ssb']) {
      await page.selectOption('#product', product);
      await page.selectOption('#scale', product.startsWith('dpc') ? 'signed_log' : 'linear');
      await page.click('#show');
      await page.waitForFunction((p) => document.getElementById('real-text').textContent.startsWith(`${p}:`) ||
        window.qgpuLocal.errors.length > 0, product, { timeout: 30000 });
      const r = await page.evaluate(() => {
        const c = document.getElementById('real');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        return { errors: window.qgpuLocal.errors, size: [c.width, c.height], colours: new Set(Array.from({ length: d.length / 4 }, (_, i) => d[4 * i] * 65536 + d[4 * i + 1] * 256 + d[4 * i + 2])).size };
      });
      assert(r.errors.length === 0 && r.size.join() === '10,12' && r.colours > 3, `${product}: ${JSON.stringify(r)}`);
    }
  });

  // Opened from disk, as a user double-clicks dist/local.html: one self-contained file (a module script or any
  // other file would be refused from a file:// origin), which opens a file and computes as served.
  await run.check('local.html opened from disk (file://) works: no other file loaded, the sample opens, WebGPU BF exact', async () => {
    const disk = await browser.context.newPage();
    const errors = [];
    disk.on('pageerror', (e) => errors.push(String(e)));
    disk.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    const requested = [];
    disk.on('request', (r) => r.url().startsWith('data:') || requested.push(r.url()));
    try {
      const fileUrl = pathToFileURL(join(opt.web, 'local.html')).href;
      await disk.goto(fileUrl);
      await disk.waitForFunction(() => window.qgpuLocal?.ready, null, { timeout: 30000 });
      const r = await disk.evaluate(() => ({ notice: !!document.getElementById('no-script'),
        external: document.querySelectorAll('script[src], link[rel=stylesheet]').length,
        background: getComputedStyle(document.body).backgroundColor }));
      assert(!r.notice && r.external === 0 && r.background === 'rgb(17, 17, 17)', `page from disk: ${JSON.stringify(r)}`);
      assert(requested.length === 1 && requested[0] === fileUrl, `requests from disk: ${JSON.stringify(requested)}`);
      const v = await disk.evaluate(() => window.qgpuLocal.version);
      await disk.setInputFiles('#files', [sample]);
      await disk.waitForFunction((x) => window.qgpuLocal.version > x, v, { timeout: 60000 });
      const st = await disk.evaluate(() => ({ info: window.qgpuLocal.info, errors: window.qgpuLocal.errors }));
      assert(st.errors.length === 0, `page errors: ${st.errors}`);
      sameInfo(st.info, infoOf(sample));
      let note = 'metadata equals qgpu info';
      if (adapter) {
        const sums = await disk.evaluate(() => window.qgpuLocal.bf(15.5, 14, 6));
        const want = bfOf(sample, 15.5, 14, 6, join(tmp, 'bf_file_url'));
        assert(JSON.stringify(sums) === JSON.stringify(want), `BF from disk differs: ${sums.slice(0, 4)} vs ${want.slice(0, 4)}`);
        await disk.selectOption('#product', 'bf');
        await disk.click('#show');
        await disk.waitForFunction(() => document.getElementById('real-text').textContent.startsWith('bf:') || window.qgpuLocal.errors.length > 0,
          null, { timeout: 30000 });
        note += `, ${sums.length} BF sums exact`;
      }
      if (opt.out) await disk.screenshot({ path: join(opt.out, 'local_file_url.png'), fullPage: true });
      assert(errors.length === 0, `errors: ${JSON.stringify(errors)}`);
      return note;
    } finally {
      await disk.close();
    }
  });

  await run.check('the local page reported no uncaught error', async () => {
    assert(pageErrors.length === 0, `errors: ${JSON.stringify(pageErrors)}`);
  });
} catch (e) {
  run.failed++;
  console.log(`FAIL local e2e setup: ${e instanceof Error ? e.stack : e}`);
} finally {
  clearTimeout(watchdog);
  await browser?.context.close().catch(() => {});
  if (browser) rmSync(browser.userDataDir, { recursive: true, force: true });
  http?.close();
  rmSync(tmp, { recursive: true, force: true });
}
if (run.skipped) console.log(`local e2e: ${run.skipped} skipped (see SKIP lines)`);
console.log(`local e2e: ${run.passed} passed, ${run.failed} failed`);
process.exit(run.failed ? 1 : 0);
