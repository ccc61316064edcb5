import { readFileSync } from 'node:fs';
import type { Plugin } from 'vite';
import { defineConfig } from 'vitest/config';
import react from '@vitejs/plugin-react';
import { vulkanEnvForChild } from './src/gpu/node.ts';

/** Imports `*.wgsl` files as strings, the same way esbuild's text loader does for Node bundles. */
function wgslText(): Plugin {
  return {
    name: 'wgsl-text',
    transform(code, id) {
      if (!id.endsWith('.wgsl')) return null;
      return { code: `export default ${JSON.stringify(code)};`, map: null };
    },
  };
}

/**
 * The dev server (not the build) drops index.html's Content-Security-Policy: its React refresh preamble is
 * an inline script and its HMR client talks over a websocket, both of which the policy forbids.
 */
function devWithoutCsp(): Plugin {
  return {
    name: 'dev-without-csp',
    apply: 'serve',
    transformIndexHtml: (html) => html.replace(/\s*<meta http-equiv="Content-Security-Policy"[^>]*>/, ''),
  };
}

/**
 * index.html's Content-Security-Policy (its meta tag: the one place it is written), which `vite preview` and
 * `npm start` also send as an HTTP header: a worker's policy comes from its own script's response headers,
 * not from the page's meta, and the engine worker is what fetches from the Hub (connect-src).
 */
export function pageCsp(html = readFileSync(new URL('./index.html', import.meta.url), 'utf8')): string {
  const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(html)?.[1];
  if (!csp)
    throw new Error(
      'index.html has no <meta http-equiv="Content-Security-Policy" content="..."> tag: the preview server sends the same policy as a header',
    );
  return csp;
}

// The Vulkan loader reads its driver variables at process start: set them here, before vitest forks
// its test workers, so the workers' Dawn finds the GPU (or SwiftShader) from their first line. Only under
// vitest: building and serving the lab needs nothing but Node (no Chromium, no GPU driver).
if (process.env.VITEST) {
  const vulkanEnv = vulkanEnvForChild();
  if (vulkanEnv) Object.assign(process.env, vulkanEnv);
}

/** The modes whose builds carry the engine worker's test hooks; a production build (`vite build`, `npm start`) has none. */
export const TEST_HOOK_MODES = ['e2e', 'development', 'test'];

export default defineConfig(({ mode }) => ({
  plugins: [wgslText(), react(), devWithoutCsp()],
  define: { __TEST_HOOKS__: JSON.stringify(TEST_HOOK_MODES.includes(mode)) },
  worker: { format: 'es', plugins: () => [wgslText()] },
  build: { target: 'es2022', outDir: 'dist' },
  server: { host: '127.0.0.1' },
  preview: { host: '127.0.0.1', headers: { 'Content-Security-Policy': pageCsp() } },
  test: {
    include: ['kernels/**/*.test.ts', 'src/**/*.test.ts', 'bench/**/*.test.ts', 'scripts/**/*.test.ts'],
    environment: 'node',
    // One GPU device per worker process; SwiftShader is CPU-bound, so two workers fit a 2-core machine.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 600_000,
    hookTimeout: 120_000,
    // rewrites reliability/RELIABILITY.md from the fuzz and fault tests' results once the run ends
    globalSetup: ['scripts/reliability-teardown.ts'],
  },
}));
