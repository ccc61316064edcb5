import { defineConfig } from '@playwright/test';
import { chromiumWebgpuArgs, findChromium } from './scripts/env-check.ts';

// Drives Debian's Chromium (a browser download is impossible here) with WebGPU on; headless Chromium
// gets a SwiftShader adapter where there is no GPU, and the GPU where a Vulkan driver is (chromiumWebgpuArgs). The app is served built, as `npm start` serves it.
// E2E_PORT: another port, so that two suites (e.g. two worktrees) can run at once
const PORT = Number(process.env.E2E_PORT ?? 4179);
export default defineConfig({
  testDir: 'e2e',
  timeout: 120_000,
  workers: 1,
  reporter: [['list']],
  use: {
    baseURL: `http://127.0.0.1:${PORT}`,
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? findChromium() ?? undefined,
      args: chromiumWebgpuArgs(),
    },
  },
  webServer: {
    command: `npx vite preview --port ${PORT} --strictPort --host 127.0.0.1`,
    url: `http://127.0.0.1:${PORT}`,
    reuseExistingServer: false,
    timeout: 60_000,
  },
});
