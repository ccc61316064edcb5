import { defineConfig } from '@playwright/test';
import { chromiumLaunch } from './scripts/chromium-launch.ts';

// Drives Debian's Chromium (a browser download is impossible here) with WebGPU on. Binary and flags come from
// scripts/chromium-launch.ts, the one place that chooses them: the GPU flags where a GPU is present (they give
// the real adapter), the SwiftShader ones elsewhere. The app is served built (dist/), as `npm start` serves it,
// but from `vite build --mode e2e`: the production build plus the engine worker's test hooks some specs use.
// E2E_PORT: another port, so that two suites (e.g. two worktrees) can run at once
const PORT = Number(process.env.E2E_PORT ?? 4179);
const { executablePath, args } = chromiumLaunch();
export default defineConfig({
  testDir: 'e2e',
  timeout: 120_000,
  workers: 1,
  // One retry: a test that fails once in a while on this software GPU (the tab-reload test waited out its
  // whole timeout once in CI, cause not found) does not fail the suite; the list reporter names it flaky.
  retries: 1,
  reporter: [['list']],
  use: {
    baseURL: `http://127.0.0.1:${PORT}`,
    // Chromium's headless shell (the GPU machine's) under LANG=C.UTF-8 says "en-US@posix", which Intl refuses
    locale: 'en-US',
    // no click or navigation waits unbounded: one that never completes fails by name, not at the test's timeout
    actionTimeout: 120_000,
    navigationTimeout: 120_000,
    launchOptions: { executablePath, args },
  },
  webServer: {
    command: `npx vite preview --port ${PORT} --strictPort --host 127.0.0.1`,
    url: `http://127.0.0.1:${PORT}`,
    reuseExistingServer: false,
    timeout: 60_000,
  },
});
