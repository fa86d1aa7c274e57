// Helpers of the browser e2e test: the qgpu service as a child process, Debian's chromium through
// playwright-core, and a tiny pass/fail/skip runner.
import { execFileSync, spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export function tempDir(prefix) {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function writeSample(qgpu, path, scan = [16, 16], detector = [32, 32]) {
  execFileSync(qgpu, ['sample', path, '--scan', ...scan.map(String), '--detector', ...detector.map(String)],
    { stdio: 'pipe', timeout: 120000 });
}

// Starts `qgpu serve` on a free loopback port; resolves with { url, stop } once it listens.
export function startServer(qgpu, files, web, logPath, port = 0) {
  const log = createWriteStream(logPath, { flags: 'a' });
  const child = spawn(qgpu, ['serve', ...files, '--backend', 'cpu', '--port', String(port), '--web', web], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr.pipe(log);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('qgpu serve did not start within 60 s')), 60000);
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) {
        clearTimeout(timer);
        const exited = new Promise((r) => child.on('exit', r));
        resolve({ url: m[1], port: Number(new URL(m[1]).port), stop: () => { child.kill('SIGTERM'); return exited; }, child });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`qgpu serve exited with ${code} before listening (log: ${logPath})`));
    });
  });
}

export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

export async function launchBrowser(extraArgs = []) {
  const userDataDir = tempDir('qgpu-e2e-profile-');
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: [...CHROMIUM_ARGS, ...extraArgs],
    viewport: { width: 1400, height: 800 },
  });
  return { context, userDataDir };
}

export class Runner {
  passed = 0;
  failed = 0;
  skipped = 0;

  async check(name, fn, timeoutMs = 60000) {
    let timer;
    try {
      const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
      });
      const note = await Promise.race([fn(), timeout]);
      if (note && note.skip) {
        this.skipped++;
        console.log(`SKIP ${name}: ${note.skip}`);
      } else {
        this.passed++;
        console.log(`PASS ${name}${note ? ` (${note})` : ''}`);
      }
    } catch (e) {
      this.failed++;
      console.log(`FAIL ${name}: ${e instanceof Error ? e.message : e}`);
    } finally {
      clearTimeout(timer);
    }
  }
}

export function assert(cond, message) {
  if (!cond) throw new Error(message);
}

export async function fetchBytes(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status} ${await res.text()}`);
  return Buffer.from(await res.arrayBuffer());
}

// A Direct Electron custom scan whose csv never lists some positions (missing.e2e.mjs, widget.e2e.mjs): scan 6 rows x 8 cols, detector 16 x 16 uint16; every position listed once in a shuffled order except MISSING.
export const DE_SCAN = { ROWS: 6, COLS: 8, DET: 16, MISSING: [3, 10, 11, 29, 47] };
const { ROWS, COLS, DET, MISSING } = DE_SCAN;
const listed = [];
for (let p = 0; p < ROWS * COLS; ++p) if (!MISSING.includes(p)) listed.push(p);
listed.sort((a, b) => ((a * 37) % 48) - ((b * 37) % 48));  // a fixed shuffle: frame i lies at listed[i]
// Writes the scan into `dir` (scan_movie.mrc, scan_info.txt, scan_scan_coordinates.csv); returns the movie's path.
export function writeDeCustomScan(dir) {
  const frames = listed.length, h = Buffer.alloc(1024);
  h.writeInt32LE(DET, 0);
  h.writeInt32LE(DET, 4);
  h.writeInt32LE(frames, 8);
  h.writeInt32LE(6, 12);  // MODE 6: uint16
  h.write('MAP ', 208, 'latin1');
  h[212] = 0x44;
  h[213] = 0x44;
  const data = Buffer.alloc(frames * DET * DET * 2);
  // frame i: a bright-field disk of radius 4 whose pixels hold 1 + (its position % 7) (the disk fit finds it; each
  // scanned position's sum is positive)
  for (let i = 0; i < frames; ++i)
    for (let k = 0; k < DET * DET; ++k) {
      const y = Math.floor(k / DET) - 7.5, x = (k % DET) - 7.5;
      data.writeUInt16LE(y * y + x * x <= 16 ? 1 + (listed[i] % 7) : 0, 2 * (i * DET * DET + k));
    }
  writeFileSync(join(dir, 'scan_movie.mrc'), Buffer.concat([h, data]));
  writeFileSync(join(dir, 'scan_info.txt'),
    `Scan - Enable = Enable\nScan - Size X = ${COLS}\nScan - Size Y = ${ROWS}\nScan - Type = XY File\nScan - Repeats = 1\n`);
  writeFileSync(join(dir, 'scan_scan_coordinates.csv'), listed.map((p) => `${p % COLS},${Math.floor(p / COLS)}`).join('\n') + '\n');
  return join(dir, 'scan_movie.mrc');
}
