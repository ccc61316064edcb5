// `npm test`: every test. Checks the system (Chromium, Vulkan loader), then typecheck, format, lint, the unit and
// kernel tests in Node (WebGPU through Dawn: a real GPU if present, else SwiftShader), then the built
// app's end-to-end tests in headless Chromium with WebGPU.
import { spawnSync } from 'node:child_process';
import { vulkanEnvForChild } from '../src/gpu/node.ts';
import { ensureTestEnvironment } from './env-check.ts';

const { chromium } = ensureTestEnvironment();
const env = { ...(vulkanEnvForChild() ?? process.env), CHROMIUM_PATH: chromium };
const steps: Array<[string, string, string[]]> = [
  ['typecheck', 'npx', ['tsc', '--noEmit', '-p', '.']],
  ['format (Prettier; `npm run format` fixes it)', 'npx', ['prettier', '--check', '--log-level', 'warn', '**/*.{ts,tsx,js,mjs}']],
  ['lint (typescript-eslint, type-aware)', 'npx', ['eslint', '.']],
  ['unit and kernel tests', 'npx', ['vitest', 'run']],
  ['build (with the test hooks the end-to-end tests use)', 'npx', ['vite', 'build', '--mode', 'e2e', '--logLevel', 'warn']],
  ['end-to-end tests (Chromium)', 'npx', ['playwright', 'test']],
  ['reliability report (reliability/RELIABILITY.md)', 'npx', ['tsx', 'scripts/reliability.ts']],
];
const only = process.argv.slice(2);
for (const [name, cmd, args] of steps) {
  if (only.length && !only.some((o) => name.startsWith(o))) continue;
  const t0 = Date.now();
  console.log(`\n== ${name}`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', env });
  console.log(`== ${name}: ${r.status === 0 ? 'ok' : 'FAILED'} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  if (r.status !== 0) process.exit(r.status ?? 1);
}
