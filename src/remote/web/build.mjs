// Bundles the viewer into dist/ (app.js + index.html + style.css). WGSL files are bundled as text.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, 'dist');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
// app.js: the server viewer; local.js: the local-file page (local.html, no server).
for (const [entry, file] of [['src/main.ts', 'app.js'], ['src/local/main.ts', 'local.js']])
await build({
  entryPoints: [join(here, entry)],
  bundle: true,
  format: 'esm',
  target: 'es2022',
  minify: false,
  sourcemap: true,
  loader: { '.wgsl': 'text' },
  outfile: join(out, file),
  logLevel: 'warning',
});
for (const f of ['index.html', 'local.html', 'style.css']) copyFileSync(join(here, f), join(out, f));
console.log('viewer built in ' + out);
