// The Hub download against a fake Hub (a fetch that serves the Hub's URL layout from memory): the file
// choice and the typed errors of listing, resume with a Range request after a file breaks off half-way,
// pause and resume, a server that ignores Range, size and sha256 mismatches refused, and a full quota.

import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { memoryStore } from '../platform/storage/store.ts';
import { faultyStore, quota } from '../platform/storage/testing.ts';
import { parseModelConfig } from '../model/config.ts';
import { ATTEMPTS, cancelHubDownload, downloadHubModel, HUB_URL, type HubOptions, hubOrigin, listHubModel } from './hub.ts';
import { WorkerFail } from './errors.ts';

const BASE = 'http://hub.test';
const REPO = 'org/tiny';
const enc = (s: string) => new TextEncoder().encode(s);
const weights = Uint8Array.from({ length: 1000 }, (_, i) => (i * 37 + 11) & 255);
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

interface FakeHub {
  files: Record<string, Uint8Array>;
  /** Sizes / sha256 the tree lists, where they differ from the files (to fake a mismatch). */
  listed?: Record<string, { size?: number; sha256?: string }>;
  /** Per request of a file: bytes after which the body breaks off, or null to send it whole. */
  breakAt?: (file: string, n: number) => number | null;
  ignoreRange?: boolean;
  status?: number;
  /** Every resolve request: file and its Range header. */
  log: { file: string; range: string | null; auth: string | null }[];
}

function fakeHub(h: Omit<FakeHub, 'log'>): FakeHub & { fetch: typeof fetch } {
  const hub: FakeHub = { ...h, log: [] };
  const counts = new Map<string, number>();
  const f = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = String(input);
    const hdr = new Headers(init?.headers);
    if (init?.signal?.aborted) throw new DOMException('aborted', 'AbortError');
    if (hub.status) return new Response('no', { status: hub.status });
    const tree = `${BASE}/api/models/${REPO}/tree/main`;
    if (url === tree) {
      return Response.json(
        Object.entries(hub.files).map(([path, b]) => {
          const l = hub.listed?.[path] ?? {};
          const lfs = path.endsWith('.safetensors') ? { lfs: { oid: l.sha256 ?? sha(b), size: l.size ?? b.length, pointerSize: 134 } } : {};
          return { type: 'file', path, size: l.size ?? b.length, oid: 'x', ...lfs };
        }),
      );
    }
    const prefix = `${BASE}/${REPO}/resolve/main/`;
    if (!url.startsWith(prefix)) return new Response('Repository not found', { status: 404 });
    const file = url.slice(prefix.length);
    const body = hub.files[file];
    if (!body) return new Response('Entry not found', { status: 404 });
    const range = hdr.get('Range');
    hub.log.push({ file, range, auth: hdr.get('Authorization') });
    const n = (counts.get(file) ?? 0) + 1;
    counts.set(file, n);
    const from = range && !hub.ignoreRange ? Number(/^bytes=(\d+)-$/.exec(range)![1]) : 0;
    const part = body.slice(from);
    const cut = hub.breakAt?.(file, n) ?? null;
    let pulls = 0; // error() drops queued chunks, so the break comes on the pull after the first part is read
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (cut === null) {
          c.enqueue(part);
          c.close();
          return;
        }
        if (pulls++ === 0) c.enqueue(part.slice(0, cut));
        else c.error(new TypeError('network error'));
      },
    });
    return new Response(stream, { status: from > 0 ? 206 : 200 });
  };
  return Object.assign(hub, { fetch: f });
}

const model = () => ({
  'config.json': enc(JSON.stringify({ model_type: 'llama' })),
  'tokenizer.json': enc('{"model":{}}'),
  'tokenizer_config.json': enc('{}'),
  'model.safetensors': weights,
  'README.md': enc('# tiny'),
});
const opts = (hub: { fetch: typeof fetch }, extra: HubOptions = {}): HubOptions => ({
  base: BASE,
  fetch: hub.fetch,
  sleep: async () => {},
  ...extra,
});
const code = async (p: Promise<unknown>) =>
  p.then(
    () => 'resolved',
    (e) => (e instanceof WorkerFail ? e.code : ((e as { code?: string }).code ?? String(e))),
  );

describe('hubOrigin', () => {
  it('honours ?hub= only for a loopback server while the lab itself is served from loopback', () => {
    expect(hubOrigin(null, 'lab.example')).toBe(HUB_URL);
    expect(hubOrigin('http://127.0.0.1:4321/x', '127.0.0.1')).toBe('http://127.0.0.1:4321');
    expect(hubOrigin('http://localhost:9', 'localhost')).toBe('http://localhost:9');
    expect(hubOrigin('http://127.0.0.1:4321', 'lab.example')).toBe(HUB_URL); // a deployed lab ignores it
    expect(hubOrigin('https://evil.example', '127.0.0.1')).toBe(HUB_URL);
    expect(hubOrigin('http://127.0.0.1.evil.example', '127.0.0.1')).toBe(HUB_URL);
    expect(hubOrigin('javascript:alert(1)', '127.0.0.1')).toBe(HUB_URL);
    expect(hubOrigin('not a url', '127.0.0.1')).toBe(HUB_URL);
  });
});

describe('listHubModel', () => {
  it('picks config, tokenizer files and the single safetensors with sizes and the LFS sha256', async () => {
    const hub = fakeHub({ files: model() });
    const l = await listHubModel(REPO, opts(hub));
    expect(l.files.map((f) => f.path)).toEqual(['config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors']);
    expect(l.files[3]).toEqual({ path: 'model.safetensors', size: 1000, sha256: sha(weights) });
    expect(l.bytes).toBe(model()['config.json'].length + 12 + 2 + 1000);
    expect(l).toMatchObject({ name: 'org--tiny', path: 'opfs:models/org--tiny', revision: 'main' });
  });

  it('takes the shard index and exactly the shards its weight_map names', async () => {
    const files: Record<string, Uint8Array> = { ...model() };
    delete files['model.safetensors'];
    files['model.safetensors.index.json'] = enc(
      JSON.stringify({
        weight_map: { a: 'model-00002-of-00002.safetensors', b: 'model-00001-of-00002.safetensors', c: 'model-00001-of-00002.safetensors' },
      }),
    );
    files['model-00001-of-00002.safetensors'] = weights.slice(0, 600);
    files['model-00002-of-00002.safetensors'] = weights.slice(600);
    const l = await listHubModel(REPO, opts(fakeHub({ files })));
    expect(l.files.map((f) => f.path).slice(3)).toEqual([
      'model.safetensors.index.json',
      'model-00001-of-00002.safetensors',
      'model-00002-of-00002.safetensors',
    ]);
  });

  it('refuses bad ids, missing repos, gated repos, repos without safetensors and unsupported architectures', async () => {
    const hub = fakeHub({ files: model() });
    expect(await code(listHubModel('not a repo', opts(hub)))).toBe('HUB_REPO');
    expect(await code(listHubModel('../etc', opts(hub)))).toBe('HUB_REPO');
    expect(await code(listHubModel('org/other', opts(hub)))).toBe('HUB_NOT_FOUND');
    expect(await code(listHubModel(REPO, opts(fakeHub({ files: model(), status: 401 }))))).toBe('HUB_GATED');
    expect(await code(listHubModel(REPO, opts(fakeHub({ files: model(), status: 403 }))))).toBe('HUB_GATED');
    const bin = { ...model(), 'pytorch_model.bin': weights } as Record<string, Uint8Array>;
    delete bin['model.safetensors'];
    const e = await listHubModel(REPO, opts(fakeHub({ files: bin }))).catch((x) => x as WorkerFail);
    expect(e).toBeInstanceOf(WorkerFail);
    expect((e as WorkerFail).code).toBe('HUB_NO_WEIGHTS');
    expect((e as WorkerFail).message).toContain('pytorch_model.bin');
    const gpt2 = { ...model(), 'config.json': enc(JSON.stringify({ model_type: 'gpt2' })) };
    expect(await code(listHubModel(REPO, opts(fakeHub({ files: gpt2 })), (j) => parseModelConfig(j)))).toBe('CONFIG_UNSUPPORTED');
  });

  it('retries a network failure and reports HUB_NETWORK after the last attempt', async () => {
    let calls = 0;
    const failing = {
      fetch: (async () => {
        calls++;
        throw new TypeError('Failed to fetch');
      }) as typeof fetch,
    };
    expect(await code(listHubModel(REPO, opts(failing)))).toBe('HUB_NETWORK');
    expect(calls).toBe(ATTEMPTS);
  });
});

describe('downloadHubModel', () => {
  it('downloads every file into models/<name>/ and sends the token only as a header', async () => {
    const hub = fakeHub({ files: model() });
    const store = memoryStore();
    const l = await listHubModel(REPO, opts(hub));
    const seen: number[] = [];
    const path = await downloadHubModel(store, l, null, opts(hub, { token: 'hf_x' }), (p) => seen.push(p.done));
    expect(path).toBe('opfs:models/org--tiny');
    expect(store.snapshot('org--tiny')).toEqual({
      'config.json': model()['config.json'],
      'tokenizer.json': model()['tokenizer.json'],
      'tokenizer_config.json': model()['tokenizer_config.json'],
      'model.safetensors': weights,
    });
    expect(seen.at(-1)).toBe(l.bytes);
    expect(hub.log.every((r) => r.auth === 'Bearer hf_x')).toBe(true);
    expect([...store.files.keys()].some((p) => p.startsWith('.'))).toBe(false);
  });

  it('resumes a file that breaks off half-way with a Range request for the rest', async () => {
    const hub = fakeHub({ files: model(), breakAt: (f, n) => (f === 'model.safetensors' && n === 1 ? 500 : null) });
    const store = memoryStore();
    await downloadHubModel(store, await listHubModel(REPO, opts(hub)), null, opts(hub));
    expect(hub.log.filter((r) => r.file === 'model.safetensors').map((r) => r.range)).toEqual([null, 'bytes=500-']);
    expect(store.snapshot('org--tiny')['model.safetensors']).toEqual(weights);
  });

  it('pause keeps what arrived; the next download asks only for the rest; cancel removes it', async () => {
    const ctl = new AbortController();
    const hub = fakeHub({ files: model(), breakAt: (f, n) => (f === 'model.safetensors' && n === 1 ? 300 : null) });
    const store = memoryStore();
    const l = await listHubModel(REPO, opts(hub));
    const paused = downloadHubModel(store, l, null, opts(hub, { signal: ctl.signal }), (p) => {
      if (p.file === 'model.safetensors' && p.done > l.bytes - 1000) ctl.abort();
    });
    await expect(paused).rejects.toThrow();
    expect(store.snapshot('.partial-org--tiny')['model.safetensors.parts/000000']).toEqual(weights.slice(0, 300));
    expect(await store.stat('org--tiny')).toBe(null);
    await downloadHubModel(store, l, null, opts(hub));
    expect(hub.log.filter((r) => r.file === 'model.safetensors').map((r) => r.range)).toEqual([null, 'bytes=300-']);
    expect(hub.log.filter((r) => r.file === 'config.json')).toHaveLength(1); // finished files are not fetched again
    expect(store.snapshot('org--tiny')['model.safetensors']).toEqual(weights);

    const again = memoryStore({ '.partial-org--tiny/config.json': '{}' });
    await cancelHubDownload(again, REPO);
    expect(again.files.size).toBe(0);
  });

  it('starts a file over when the server ignores Range and answers 200', async () => {
    const hub = fakeHub({ files: model(), ignoreRange: true, breakAt: (f, n) => (f === 'model.safetensors' && n === 1 ? 400 : null) });
    const store = memoryStore();
    await downloadHubModel(store, await listHubModel(REPO, opts(hub)), null, opts(hub));
    expect(hub.log.filter((r) => r.file === 'model.safetensors').map((r) => r.range)).toEqual([null, 'bytes=400-']);
    expect(store.snapshot('org--tiny')['model.safetensors']).toEqual(weights);
  });

  it('refuses a file shorter or longer than listed, or with another sha256, and keeps no model', async () => {
    for (const listed of [{ size: 1200 }, { size: 800 }, { sha256: 'ab'.repeat(32) }]) {
      const hub = fakeHub({ files: model(), listed: { 'model.safetensors': listed } });
      const store = memoryStore();
      const l = await listHubModel(REPO, opts(hub));
      const e = await downloadHubModel(store, l, null, opts(hub)).catch((x) => x as WorkerFail);
      expect((e as WorkerFail).code, JSON.stringify(listed)).toBe('HUB_SIZE');
      expect(await store.stat('org--tiny')).toBe(null);
      expect(Object.keys(store.snapshot('.partial-org--tiny'))).not.toContain('model.safetensors');
    }
  });

  it('gives up after ATTEMPTS broken transfers with HUB_NETWORK, keeping the bytes for a later resume', async () => {
    const hub = fakeHub({ files: model(), breakAt: (f) => (f === 'model.safetensors' ? 100 : null) });
    const store = memoryStore();
    const e = await downloadHubModel(store, await listHubModel(REPO, opts(hub)), null, opts(hub)).catch((x) => x as WorkerFail);
    expect((e as WorkerFail).code).toBe('HUB_NETWORK');
    expect(hub.log.filter((r) => r.file === 'model.safetensors').map((r) => r.range)).toEqual([
      null,
      'bytes=100-',
      'bytes=200-',
      'bytes=300-',
    ]);
    const parts = store.snapshot('.partial-org--tiny/model.safetensors.parts');
    expect(Object.values(parts).reduce((s, b) => s + b.length, 0)).toBe(400);
  });

  it('refuses before downloading when the quota is too small, and maps a quota error on write to STORAGE_FULL', async () => {
    const hub = fakeHub({ files: model() });
    const l = await listHubModel(REPO, opts(hub));
    expect(await code(downloadHubModel(memoryStore(), l, 100, opts(hub)))).toBe('STORAGE_FULL');
    expect(hub.log).toHaveLength(0);
    const full = faultyStore(memoryStore(), (op, n) => (op === 'write' && n === 3 ? quota() : null));
    expect(await code(downloadHubModel(full, l, null, opts(hub)))).toBe('STORAGE_FULL');
  });
});
