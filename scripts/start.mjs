// `npm start`: builds the lab (a production build: no test hooks) and serves it offline at a printed
// localhost URL (vite.config.ts's preview settings apply: the page's Content-Security-Policy goes out as a
// header too, for the engine worker).
import { spawnSync } from 'node:child_process';
import { preview } from 'vite';

const build = spawnSync('npx', ['vite', 'build', '--logLevel', 'warn'], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);
const port = Number(process.env.PORT ?? 4173);
const server = await preview({ preview: { port, host: '127.0.0.1', strictPort: false } });
const url = server.resolvedUrls?.local[0] ?? `http://localhost:${port}/`;
console.log(`\nMARFT Lab is running at ${url}\nOpen it in Chrome or Edge (WebGPU). Press Ctrl+C to stop.`);
