// A model from the Hugging Face Hub, end to end, against a local Hub: a Node HTTP server started here on
// a free loopback port serves the Hub's URL layout (/api/models/<id>/tree/main, /<id>/resolve/main/<file>,
// with Range and CORS) for the built-in tiny model as the repo "test-org/marft-tiny"; model.safetensors
// breaks off half-way the first time. The lab is pointed at it with ?hub=http://127.0.0.1:<port> (the
// worker honours that only for a loopback origin). The engine worker's fetches obey the CSP header its own
// script is served with (the page's policy, which `vite preview` and `npm start` send as a header too,
// checked first on the suite's server), so this test serves the built lab itself from a second loopback
// server whose policy adds that origin to connect-src, in the header and the meta (dist/ is not changed). Checks: the
// listing and the ask before downloading, the resumed download (a Range request), the model loads and
// is kept (model picker and Storage panel, with its size and Delete), no request leaves localhost and
// no CSP rule is broken.

import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { extname, join, normalize } from 'node:path';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, test } from '@playwright/test';
import { SHOTS } from './helpers.ts';

test.setTimeout(300_000);

const REPO = 'test-org/marft-tiny';
const DIR = 'public/models/marft-tiny';
const LOCAL = new Set(['127.0.0.1', 'localhost', '[::1]']);

interface Served {
  server: Server;
  origin: string;
  log: string[];
}

/**
 * The local Hub: the tree API and resolve URLs for REPO. The first GET of model.safetensors breaks off
 * half-way; later ones trickle (32 KiB every 40 ms), so the test can pause them mid-way.
 */
async function localHub(): Promise<Served> {
  const files = Object.fromEntries(readdirSync(DIR).map((f) => [f, readFileSync(`${DIR}/${f}`)]));
  const log: string[] = [];
  let weightGets = 0;
  const server = createServer((req, res) => {
    const cors = {
      'Access-Control-Allow-Origin': '*',
      'Access-Control-Allow-Headers': 'Range, Authorization',
      'Access-Control-Expose-Headers': 'Content-Range, Content-Length',
    };
    if (req.method === 'OPTIONS') {
      res.writeHead(204, cors);
      res.end();
      return;
    }
    const url = req.url ?? '';
    log.push(`${url} ${req.headers.range ?? ''}`.trim());
    if (url === `/api/models/${REPO}/tree/main`) {
      const tree = Object.entries(files).map(([path, b]) => ({
        type: 'file',
        path,
        size: b.length,
        oid: 'x',
        ...(path.endsWith('.safetensors')
          ? { lfs: { oid: createHash('sha256').update(b).digest('hex'), size: b.length, pointerSize: 134 } }
          : {}),
      }));
      res.writeHead(200, { ...cors, 'Content-Type': 'application/json' });
      res.end(JSON.stringify(tree));
      return;
    }
    const prefix = `/${REPO}/resolve/main/`;
    const body = url.startsWith(prefix) ? files[url.slice(prefix.length)] : undefined;
    if (!body) {
      res.writeHead(404, cors);
      res.end('Entry not found');
      return;
    }
    const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const from = m ? Number(m[1]) : 0;
    const part = body.subarray(from);
    res.writeHead(m ? 206 : 200, {
      ...cors,
      'Content-Type': 'application/octet-stream',
      'Content-Length': String(part.length),
      ...(m ? { 'Content-Range': `bytes ${from}-${body.length - 1}/${body.length}` } : {}),
    });
    if (!url.endsWith('model.safetensors')) {
      res.end(part);
      return;
    }
    if (++weightGets === 1) {
      res.write(part.subarray(0, part.length >> 1), () => setTimeout(() => res.destroy(), 200)); // half, then the connection drops
      return;
    }
    let at = 0;
    const timer = setInterval(() => {
      if (res.destroyed) {
        clearInterval(timer);
        return;
      }
      res.write(part.subarray(at, at + 32 * 1024));
      at += 32 * 1024;
      if (at >= part.length) {
        clearInterval(timer);
        res.end();
      }
    }, 40);
    res.on('close', () => clearInterval(timer));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, log };
}

/** The built lab (dist/) on a loopback port, its page's policy (meta and header) allowing `hubOrigin` too. */
async function labWithHub(hubOrigin: string): Promise<Served> {
  const withHub = (text: string) => text.replace("connect-src 'self'", `connect-src 'self' ${hubOrigin}`);
  const html = withHub(readFileSync('dist/index.html', 'utf8'));
  const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(html)![1];
  const types: Record<string, string> = {
    '.html': 'text/html',
    '.js': 'text/javascript',
    '.css': 'text/css',
    '.json': 'application/json',
    '.svg': 'image/svg+xml',
    '.wasm': 'application/wasm',
    '.png': 'image/png',
  };
  const log: string[] = [];
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    log.push(path);
    const file = join('dist', normalize(path === '/' ? '/index.html' : path));
    if (!file.startsWith('dist') || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404);
      res.end();
      return;
    }
    res.writeHead(200, { 'Content-Type': types[extname(file)] ?? 'application/octet-stream', 'Content-Security-Policy': csp });
    res.end(file === join('dist', 'index.html') ? html : readFileSync(file));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, log };
}

test("the served page and its engine worker script carry the page's Content-Security-Policy as a header", async ({ request }) => {
  const page = await request.get('/');
  const meta = /<meta http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(await page.text())?.[1];
  expect(meta).toContain("connect-src 'self' https://huggingface.co");
  expect(page.headers()['content-security-policy']).toBe(meta);
  const worker = readdirSync('dist/assets').find((f) => /^engine\.worker-[\w-]+\.js$/.test(f));
  expect(worker, 'the built engine worker').toBeDefined();
  const res = await request.get(`/assets/${worker}`);
  expect(res.status()).toBe(200);
  expect(res.headers()['content-security-policy'], "the worker script's policy header").toBe(meta);
});

test('a Hub model is listed, asked for, downloaded with a resume after a broken transfer, loaded and kept', async ({ page, context }) => {
  const hub = await localHub();
  const lab = await labWithHub(hub.origin);
  try {
    const offsite: string[] = [];
    context.on('request', (r) => {
      const u = new URL(r.url());
      if (u.protocol !== 'data:' && u.protocol !== 'blob:' && !LOCAL.has(u.hostname)) offsite.push(r.url());
    });
    await page.addInitScript(() => {
      const w = window as unknown as { __csp: string[] };
      w.__csp = [];
      document.addEventListener('securitypolicyviolation', (e) => w.__csp.push(`${e.violatedDirective}: ${e.blockedURI}`));
    });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${lab.origin}/?hub=${encodeURIComponent(hub.origin)}`);
    await expect(page.getByTestId('gpu-status')).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
    expect(hub.log, 'nothing is fetched from the Hub before the user asks').toEqual([]);

    await page.getByText('Download from the Hugging Face Hub…').click();
    await page.getByLabel('Hub model id').fill('not a repo');
    await page.getByTestId('hub-list').click();
    await expect(page.getByTestId('hub-error')).toContainText('is not a Hub model id');
    await page.getByLabel('Hub model id').fill('test-org/no-such-model');
    await page.getByTestId('hub-list').click();
    await expect(page.getByTestId('hub-error')).toContainText('404');

    await page.getByLabel('Hub model id').fill(REPO);
    await page.getByLabel('Hub model id').press('Enter'); // the form submits from the keyboard
    const listing = page.getByTestId('hub-listing');
    await expect(listing).toContainText('model.safetensors', { timeout: 30_000 });
    await expect(listing).toContainText('tokenizer.json');
    await expect(page.getByTestId('hub-summary')).toContainText('test-org--marft-tiny');
    expect(
      hub.log.some((l) => l.includes('/resolve/main/model.safetensors')),
      "weights wait for the user's yes",
    ).toBe(false);
    await page.getByTestId('hub-picker').screenshot({ path: `${SHOTS}/hub.png` });

    const weightGets = () => hub.log.filter((l) => l.includes('/resolve/main/model.safetensors'));
    const rangeStart = (l: string) => Number(/bytes=(\d+)-$/.exec(l)?.[1] ?? NaN);
    const small = readdirSync(DIR)
      .filter((f) => f !== 'model.safetensors')
      .reduce((s, f) => s + readFileSync(`${DIR}/${f}`).length, 0); // fetched before the weights
    const progress = page.getByTestId('hub-progress');
    const progressed = async (bytes: number) =>
      expect.poll(async () => Number(await progress.getAttribute('value')), { timeout: 60_000 }).toBeGreaterThan(bytes);

    // 1. download: the transfer breaks off half-way and is resumed with a Range request; pause it mid-way
    await page.getByTestId('hub-download').click();
    await expect.poll(() => weightGets().length, { timeout: 60_000 }).toBe(2);
    const half = rangeStart(weightGets()[1]); // the retry asks for the rest of what broke off
    expect(half).toBeGreaterThan(0);
    await progressed(small + half + 300_000);
    await page.getByTestId('hub-pause').click();
    await expect(page.getByTestId('hub-picker')).toContainText('Paused at');
    await page.getByTestId('hub-picker').screenshot({ path: `${SHOTS}/hub-paused.png` });

    // 2. resume: the next request starts where the pause left off, and the model loads
    await page.getByTestId('hub-download').click();
    await expect(page.getByTestId('hub-listing')).toHaveCount(0, { timeout: 120_000 }); // the panel clears once the model is in place and loaded
    await expect(page.getByTestId('model-status')).toHaveAttribute('data-state', 'ready');
    await expect(page.getByTestId('model-status')).toContainText('test-org--marft-tiny');
    await expect(page.getByTestId('model-select')).toHaveValue('opfs:models/test-org--marft-tiny');
    expect(weightGets()).toHaveLength(3);
    expect(rangeStart(weightGets()[2])).toBeGreaterThan(half + 300_000);

    // 3. a second download paused and cancelled leaves no partial files and keeps the model already there
    await page.getByTestId('hub-list').click();
    await expect(page.getByTestId('hub-download')).toBeVisible({ timeout: 30_000 });
    await page.getByTestId('hub-download').click();
    await progressed(small + 300_000);
    await page.getByTestId('hub-pause').click();
    await expect(page.getByTestId('hub-picker')).toContainText('Paused at');
    await page.getByTestId('hub-cancel').click();
    await expect(page.getByTestId('hub-listing')).toHaveCount(0);
    const modelFolders = () =>
      page.evaluate(async () => {
        const models = await (await navigator.storage.getDirectory()).getDirectoryHandle('models');
        const names: string[] = [];
        for await (const [name] of (models as unknown as { entries(): AsyncIterable<[string, unknown]> }).entries()) names.push(name);
        return names.sort();
      });
    await expect.poll(modelFolders, { timeout: 30_000 }).toEqual(['test-org--marft-tiny']);

    await page.getByTestId('tab-runs').click();
    const row = page.getByTestId('storage-model').filter({ hasText: 'opfs:models/test-org--marft-tiny' });
    await expect(row).toContainText('MiB', { timeout: 30_000 });
    await expect(row.getByRole('button', { name: 'Delete' })).toBeVisible();
    await expect(page.getByTestId('storage-model').filter({ hasText: '.partial-' })).toHaveCount(0);
    await page.getByTestId('storage-panel').screenshot({ path: `${SHOTS}/hub-storage.png` });

    const violations = await page.evaluate(() => (window as unknown as { __csp: string[] }).__csp);
    expect(offsite, `requests off localhost:\n${offsite.join('\n')}`).toEqual([]);
    expect(violations, 'CSP violations').toEqual([]);
    expect(errors).toEqual([]);
  } finally {
    lab.server.close();
    hub.server.close();
  }
});
