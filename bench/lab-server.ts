// The built lab (dist/) served from a loopback port with plain node:http, as `vite preview` serves it (the
// page's Content-Security-Policy also sent as a header, which the engine worker's fetches obey), so that
// bench:browser needs neither vite nor npx: the same bundle runs on the GPU machine.
// It can also serve a local Hub on the same origin (the Hub's URL layout: /api/models/<repo>/tree/main and
// /<repo>/resolve/main/<file>), for a model the lab cannot get otherwise: the lab honours ?hub= for a
// loopback origin (src/worker/hub.ts hubOrigin), and one origin keeps the page's connect-src 'self' enough.
// benchModelFolder makes such a model: a random model of a bench/random-model.ts shape (BF16 weights, as
// the built-in model is stored), with the built-in model's tokenizer, its vocabulary padded with inert
// tokens up to the shape's vocab_size so that every sampled id decodes (to one character: paddedTokenizer).

import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize, resolve } from 'node:path';
import { expectedWeights, parseModelConfig } from '../src/model/config.ts';
import { type TensorToWrite, tensorToFloat32, writeSafetensors } from '../src/model/safetensors.ts';
import { benchModelConfigJson, randomWeights } from './random-model.ts';

const TYPES: Record<string, string> = {
  '.html': 'text/html',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.wasm': 'application/wasm',
  '.png': 'image/png',
  '.zip': 'application/zip',
  '.jsonl': 'application/json',
};

export interface LabServer {
  url: string;
  close: () => Promise<void>;
}

/** A local Hub's repos: repo id ("org/name") to its files (name to bytes). */
export type HubRepos = Record<string, Record<string, Uint8Array>>;

/** Serves `dist` on 127.0.0.1:`port` (0: any free port), and `hub`'s repos under the Hub's URL layout. */
export async function serveLab(dist: string, port: number, hub: HubRepos = {}): Promise<LabServer> {
  const root = resolve(dist);
  const index = join(root, 'index.html');
  if (!existsSync(index)) throw new Error(`${index} is missing: build the lab first (npx vite build), or point --dist at a build`);
  const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(readFileSync(index, 'utf8'))?.[1];
  if (!csp) throw new Error(`${index} has no Content-Security-Policy meta tag`);
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    if (serveHub(hub, path, req, res)) return;
    const file = join(root, normalize(path === '/' ? '/index.html' : path));
    const ok = file.startsWith(root) && existsSync(file) && statSync(file).isFile();
    // an unknown path gets the app, as vite preview's SPA fallback does (the lab reads a 404 as "no such file" by its text/html)
    const served = ok ? file : index;
    res.writeHead(200, { 'Content-Type': TYPES[extname(served)] ?? 'application/octet-stream', 'Content-Security-Policy': csp });
    res.end(readFileSync(served));
  });
  await new Promise<void>((r, j) => {
    server.once('error', j);
    server.listen(port, '127.0.0.1', r);
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

function serveHub(hub: HubRepos, path: string, req: IncomingMessage, res: ServerResponse): boolean {
  const tree = /^\/api\/models\/([^/]+\/[^/]+)\/tree\/main$/.exec(path);
  if (tree && hub[tree[1]]) {
    const list = Object.entries(hub[tree[1]]).map(([p, b]) => ({ type: 'file', path: p, size: b.length, oid: 'x' }));
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(list));
    return true;
  }
  const file = /^\/([^/]+\/[^/]+)\/resolve\/main\/(.+)$/.exec(path);
  if (!file || !hub[file[1]]) return false;
  const body = hub[file[1]][file[2]];
  if (!body) {
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end('Entry not found');
    return true;
  }
  const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
  const from = m ? Number(m[1]) : 0;
  const part = body.subarray(from);
  res.writeHead(m ? 206 : 200, {
    'Content-Type': 'application/octet-stream',
    'Content-Length': String(part.length),
    ...(m ? { 'Content-Range': `bytes ${from}-${body.length - 1}/${body.length}` } : {}),
  });
  res.end(part);
  return true;
}

/**
 * A model folder for the local Hub: config.json of the `shape` (a BENCH_MODELS name) as bench:iteration makes it,
 * with the special token ids of the built-in model's config (`tokenizerDir`/config.json), random BF16 weights (seed 1, as bench:iteration
 * draws them), and the built-in tokenizer with its vocabulary padded to the shape's vocab_size.
 */
export function benchModelFolder(shape: string, tokenizerDir: string): Record<string, Uint8Array> {
  const base = JSON.parse(readFileSync(join(tokenizerDir, 'config.json'), 'utf8')) as Record<string, unknown>;
  const cfg = benchModelConfigJson(shape, {
    bos_token_id: base.bos_token_id,
    eos_token_id: base.eos_token_id,
    pad_token_id: base.pad_token_id,
    torch_dtype: 'bfloat16',
  });
  const mc = parseModelConfig(cfg);
  const weights = randomWeights(mc, 1);
  const tensors: TensorToWrite[] = expectedWeights(mc).map((w) => ({
    name: w.name,
    dtype: 'BF16',
    shape: w.shape,
    data: tensorToFloat32(weights(w.name)),
  }));
  const enc = new TextEncoder();
  const files: Record<string, Uint8Array> = {
    'config.json': enc.encode(JSON.stringify(cfg, null, 1)),
    'model.safetensors': writeSafetensors(tensors),
    'tokenizer.json': enc.encode(
      JSON.stringify(paddedTokenizer(JSON.parse(readFileSync(join(tokenizerDir, 'tokenizer.json'), 'utf8')), mc.vocabSize)),
    ),
  };
  for (const f of readdirSync(tokenizerDir)) {
    if (['tokenizer_config.json', 'generation_config.json', 'special_tokens_map.json', 'chat_template.jinja'].includes(f))
      files[f] = readFileSync(join(tokenizerDir, f));
  }
  return files;
}

/**
 * The tokenizer with an inert token for each id from its vocabulary's end up to `vocab`: one character each
 * (code points from U+0100 up, skipping whitespace, surrogates, noncharacters and the vocabulary's own), which
 * no merge touches. So a sampled id decodes to one character and the next agent's prompt re-encodes it as
 * that one id, as bench:iteration's synthetic tokenizer does. (Inert tokens spelt "<|pad_N|>" re-encoded as
 * some ten tokens each: a solver's prompt of 1 713 tokens against 394.)
 */
export function paddedTokenizer(
  tok: { model: { vocab: Record<string, number> }; added_tokens?: Array<{ id: number }> },
  vocab: number,
): unknown {
  const used = new Set([...Object.values(tok.model.vocab), ...(tok.added_tokens ?? []).map((t) => t.id)]);
  const spelt = new Set(Object.keys(tok.model.vocab));
  const unusable = (cp: number, ch: string) =>
    (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0xfdd0 && cp <= 0xfdef) || cp >= 0xfffe || /\s/u.test(ch) || spelt.has(ch);
  const extra: Record<string, number> = {};
  let cp = 0x100;
  for (let id = 0; id < vocab; id++) {
    if (used.has(id)) continue;
    while (cp <= 0xffff && unusable(cp, String.fromCharCode(cp))) cp++;
    if (cp > 0xffff) throw new Error(`paddedTokenizer: too few single characters for a vocabulary of ${vocab}`);
    extra[String.fromCharCode(cp++)] = id;
  }
  return { ...tok, model: { ...tok.model, vocab: { ...tok.model.vocab, ...extra } } };
}
