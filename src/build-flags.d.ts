// Constants the bundler writes into the code (vite.config.ts's `define`).

/**
 * Whether this build carries the engine worker's test hooks (src/worker/test-hooks.ts): true for the
 * end-to-end build (`vite build --mode e2e`), the dev server and vitest; false in a production build,
 * where the code behind it is dead and left out.
 */
declare const __TEST_HOOKS__: boolean;
