#!/usr/bin/env node
// Runs the marft CLI: bundles src/cli/marft.ts (WGSL inlined) into .build/ with esbuild, then runs it.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const b = spawnSync(process.execPath, [join(root, 'scripts/bundle.mjs'), join(root, 'src/cli/marft.ts'), join(root, '.build')], {
  stdio: ['ignore', 'ignore', 'inherit'],
});
if (b.status !== 0) process.exit(b.status ?? 1);
const r = spawnSync(process.execPath, [join(root, '.build/marft.mjs'), ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(r.status ?? 1);
