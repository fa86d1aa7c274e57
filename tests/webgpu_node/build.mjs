// Bundles harness.ts with the kernel modules it imports from src/*/webgpu (the same sources the viewer bundles) into
// dist/harness.mjs for Node; WGSL files as text. `webgpu` (dawn.node) stays external: resolved at run time from
// node_modules (here) or the packed node_modules of .devpack-webgpu (scripts/device_pack_webgpu.sh).
//   node build.mjs [OUTFILE]     (default dist/harness.mjs here)
import { build } from 'esbuild';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const outfile = process.argv[2] ? resolve(process.argv[2]) : join(here, 'dist/harness.mjs');
await build({
  entryPoints: [join(here, 'harness.ts')], bundle: true, platform: 'node', format: 'esm', target: 'node20',
  outfile, loader: { '.wgsl': 'text' }, external: ['webgpu'], logLevel: 'warning',
  // pngjs is CommonJS: give the ESM bundle a require() for its node: built-ins.
  banner: { js: "import { createRequire as __qgpuRequire } from 'node:module'; const require = __qgpuRequire(import.meta.url);" },
});
console.log('built ' + outfile);
