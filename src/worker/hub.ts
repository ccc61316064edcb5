// Models from the Hugging Face Hub, opt-in: nothing here runs until the user types a repo id and asks.
// listHubModel reads the repo's file tree (/api/models/<id>/tree/<rev>: path, size, and the sha256 of LFS
// files) and picks what the lab needs: config.json, the tokenizer files, generation_config.json and the
// safetensors (one file, or the index and the shards its weight_map names). downloadHubModel fetches them
// from /<id>/resolve/<rev>/<file> into the models store the way importFolder copies a picked folder:
// into a hidden .partial-<name>/ folder, renamed into place only when every file is there and verified.
//
// Resume: the store only writes whole files, so a file in flight is kept as numbered chunk files
// (.partial-<name>/<file>.parts/000000, …, CHUNK bytes each but the last). A new attempt (a retry after a
// network failure, a resume after pause or a closed tab) sums the chunks and asks for the rest with
// `Range: bytes=<have>-`; a server that answers 200 instead of 206 sends the whole file, so the chunks are
// dropped. A finished file is joined, checked against the listed size (and sha256 where listed) and
// written once. Pause keeps the .partial folder; cancel removes it.

import { type CheckpointStore, folderBytes, listFiles } from '../platform/storage/store.ts';
import { type HubFile, type HubListing, type HubProgress, OPFS_MODEL_PREFIX } from './api.ts';
import { MAX_MODEL_BYTES, storageFailure, swapIn } from './model-source.ts';
import { WorkerFail } from './errors.ts';

export const HUB_URL = 'https://huggingface.co';
/** The revision the lab downloads. */
export const HUB_REVISION = 'main';
/** Bytes per chunk file of a download in flight (what a resume may lose at most is one unflushed chunk). */
export const CHUNK = 8 * 2 ** 20;
/** Attempts per file before a network failure is reported. */
export const ATTEMPTS = 4;

const WANTED = [
  'config.json',
  'tokenizer.json',
  'tokenizer_config.json',
  'generation_config.json',
  'special_tokens_map.json',
  'chat_template.jinja',
];
const SINGLE = 'model.safetensors';
const INDEX = 'model.safetensors.index.json';

export interface HubOptions {
  /** The Hub's origin (HUB_URL; a loopback server in the e2e test). */
  base?: string;
  /** A Hub access token for gated or private repos, held only in memory by the caller. */
  token?: string;
  fetch?: typeof fetch;
  signal?: AbortSignal;
  /** Waits between attempts (tests pass a no-op). */
  sleep?: (ms: number) => Promise<void>;
}

const LOOPBACK: ReadonlySet<string> = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * The Hub origin to use: HUB_URL, unless `requested` (the page's ?hub= test setting) is a loopback origin
 * and the lab itself is served from loopback — the e2e test's local Hub. Anything else is ignored, so a
 * shared link cannot send downloads (or a token) to another host.
 */
export function hubOrigin(requested: string | null | undefined, appHost: string): string {
  if (!requested || !LOOPBACK.has(appHost)) return HUB_URL;
  try {
    const u = new URL(requested);
    return (u.protocol === 'http:' || u.protocol === 'https:') && LOOPBACK.has(u.hostname) ? u.origin : HUB_URL;
  } catch {
    return HUB_URL;
  }
}

const REPO_ID = /^[A-Za-z0-9][\w.-]{0,95}\/[A-Za-z0-9][\w.-]{0,95}$/;

/** The models-store folder of a repo: HF's cache spelling, org--name. */
export const hubFolderName = (repo: string): string => repo.replace('/', '--');

function checkRepo(repo: string): string {
  const r = repo.trim();
  if (!REPO_ID.test(r) || r.includes('..')) {
    throw new WorkerFail('HUB_REPO', `"${repo}" is not a Hub model id: expected owner/name, e.g. HuggingFaceTB/SmolLM2-135M-Instruct`);
  }
  return r;
}

const defaultSleep = (ms: number) => new Promise<void>((res) => setTimeout(res, ms));

function headers(o: HubOptions, extra: Record<string, string> = {}): Record<string, string> {
  return o.token ? { ...extra, Authorization: `Bearer ${o.token}` } : extra;
}

/** The typed error for a Hub answer that is not ok. */
function httpFail(status: number, repo: string, what: string, token: boolean): WorkerFail {
  if (status === 401 || status === 403) {
    return new WorkerFail(
      'HUB_GATED',
      `${repo} (${what}): HTTP ${status}: the repo is gated or private${token ? ' and the token given was refused' : ''}`,
    );
  }
  if (status === 404) return new WorkerFail('HUB_NOT_FOUND', `${repo} (${what}): HTTP 404: no such model repo or file on the Hub`);
  return new WorkerFail('HUB_NETWORK', `${repo} (${what}): HTTP ${status}`);
}

const aborted = (o: HubOptions): boolean => o.signal?.aborted === true;
const isAbort = (e: unknown): boolean => (e as Error)?.name === 'AbortError';

/** fetch with the caller's signal; network errors become HUB_NETWORK (aborts pass through). */
async function hubFetch(o: HubOptions, url: string, repo: string, what: string, extra: Record<string, string> = {}): Promise<Response> {
  try {
    return await (o.fetch ?? fetch)(url, { headers: headers(o, extra), signal: o.signal });
  } catch (e) {
    if (isAbort(e) || aborted(o)) throw e;
    throw new WorkerFail('HUB_NETWORK', `${repo} (${what}): ${(e as Error).message}`);
  }
}

/** A small JSON file of the repo, retried like the weights. */
async function fetchJson(o: HubOptions, url: string, repo: string, what: string): Promise<unknown> {
  return withRetry(o, async () => {
    const r = await hubFetch(o, url, repo, what);
    if (!r.ok) throw httpFail(r.status, repo, what, !!o.token);
    try {
      return await r.json();
    } catch (e) {
      if (isAbort(e) || aborted(o)) throw e;
      throw new WorkerFail('HUB_NETWORK', `${repo} (${what}): the answer is not JSON (${(e as Error).message})`);
    }
  });
}

/** Runs `f` up to ATTEMPTS times while it fails with HUB_NETWORK (waiting 0.5 s, 1 s, 2 s). */
async function withRetry<T>(o: HubOptions, f: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await f();
    } catch (e) {
      if (!(e instanceof WorkerFail && e.code === 'HUB_NETWORK') || attempt >= ATTEMPTS || aborted(o)) throw e;
      await (o.sleep ?? defaultSleep)(250 * 2 ** attempt);
    }
  }
}

interface TreeEntry {
  type?: string;
  path?: string;
  size?: number;
  lfs?: { oid?: string; sha256?: string; size?: number };
}

/**
 * The files of `repo` the lab needs, with their sizes. `checkConfig` parses config.json (the model's
 * config parser, through the engine) so an unsupported architecture is refused before any weight is fetched.
 */
export async function listHubModel(repoIn: string, o: HubOptions = {}, checkConfig?: (json: unknown) => void): Promise<HubListing> {
  const repo = checkRepo(repoIn);
  const base = o.base ?? HUB_URL;
  const tree = await fetchJson(o, `${base}/api/models/${repo}/tree/${HUB_REVISION}`, repo, 'file list');
  if (!Array.isArray(tree))
    throw new WorkerFail(
      'HUB_NETWORK',
      `${repo} (file list): the Hub answered ${JSON.stringify(tree).slice(0, 80)} instead of a list of files`,
    );
  const byPath = new Map<string, HubFile>();
  for (const e of tree as TreeEntry[]) {
    if (e.type !== 'file' || typeof e.path !== 'string' || typeof e.size !== 'number') continue;
    const sha = e.lfs?.sha256 ?? e.lfs?.oid;
    byPath.set(e.path, { path: e.path, size: e.size, ...(typeof sha === 'string' && /^[0-9a-f]{64}$/.test(sha) ? { sha256: sha } : {}) });
  }
  if (!byPath.has('config.json'))
    throw new WorkerFail('HUB_NO_WEIGHTS', `${repo} has no config.json at its top: it is not a transformers model repo`);
  const resolve = (f: string) => `${base}/${repo}/resolve/${HUB_REVISION}/${f}`;
  if (checkConfig) checkConfig(await fetchJson(o, resolve('config.json'), repo, 'config.json'));
  const weights: string[] = [];
  if (byPath.has(SINGLE)) weights.push(SINGLE);
  else if (byPath.has(INDEX)) {
    const index = (await fetchJson(o, resolve(INDEX), repo, INDEX)) as { weight_map?: Record<string, string> };
    const shards = [...new Set(Object.values(index?.weight_map ?? {}))].sort();
    const missing = shards.filter((s) => !byPath.has(s));
    if (!shards.length || missing.length)
      throw new WorkerFail(
        'HUB_NO_WEIGHTS',
        `${repo}: ${INDEX} names ${shards.length ? `shards the repo lacks (${missing.join(', ')})` : 'no shards'}`,
      );
    weights.push(INDEX, ...shards);
  } else {
    const other = [...byPath.keys()].filter((p) => /\.(bin|pt|pth|gguf|onnx)$/.test(p)).slice(0, 3);
    throw new WorkerFail(
      'HUB_NO_WEIGHTS',
      `${repo} has neither ${SINGLE} nor ${INDEX}${other.length ? ` (it has ${other.join(', ')}, which the lab does not read)` : ''}`,
    );
  }
  if (!byPath.has('tokenizer.json')) throw new WorkerFail('NO_TOKENIZER', `${repo} has no tokenizer.json`);
  const files = [...WANTED.filter((f) => byPath.has(f)), ...weights].map((f) => byPath.get(f)!);
  const bytes = files.reduce((s, f) => s + f.size, 0);
  if (bytes > MAX_MODEL_BYTES) {
    throw new WorkerFail(
      'MODEL_TOO_LARGE',
      `${repo} is ${(bytes / 2 ** 30).toFixed(2)} GiB; the lab holds the model in the browser's memory and takes at most ${(MAX_MODEL_BYTES / 2 ** 30).toFixed(1)} GiB`,
    );
  }
  const name = hubFolderName(repo);
  return { repo, revision: HUB_REVISION, name, path: `${OPFS_MODEL_PREFIX}${name}`, files, bytes };
}

const chunkName = (i: number) => String(i).padStart(6, '0');

/** The chunk files of a file in flight, in order, and their bytes. */
async function chunks(store: CheckpointStore, dir: string): Promise<{ names: string[]; bytes: number }> {
  return { names: await listFiles(store, dir), bytes: await folderBytes(store, dir) };
}

function concat(parts: readonly Uint8Array[], n: number): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(n);
  let at = 0;
  for (const b of parts) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}

const hex = (b: ArrayBuffer) => [...new Uint8Array(b)].map((x) => x.toString(16).padStart(2, '0')).join('');

/**
 * One attempt at the rest of a file: asks for what the chunk folder `dir` lacks and appends chunk files as
 * bytes arrive; a transfer that breaks off keeps what arrived (flushed as a last, shorter chunk).
 */
async function fetchRest(
  store: CheckpointStore,
  dir: string,
  url: string,
  repo: string,
  f: HubFile,
  o: HubOptions,
  done: (n: number) => void,
): Promise<void> {
  let { names, bytes: have } = await chunks(store, dir);
  if (have > f.size) {
    await store.remove(dir);
    names = [];
    have = 0;
  }
  done(have);
  if (have === f.size) return;
  const r = await hubFetch(o, url, repo, f.path, have > 0 ? { Range: `bytes=${have}-` } : {});
  if (!r.ok) throw httpFail(r.status, repo, f.path, !!o.token);
  if (have > 0 && r.status !== 206) {
    await store.remove(dir);
    names = [];
    have = 0;
    done(0);
  } // the whole file came again
  if (!r.body) throw new WorkerFail('HUB_NETWORK', `${repo} (${f.path}): the answer has no body`);
  const reader = r.body.getReader();
  let buf: Uint8Array[] = [];
  let buffered = 0;
  const flush = async () => {
    if (!buffered) return;
    await store.write(`${dir}/${chunkName(names.length)}`, concat(buf, buffered));
    names.push(chunkName(names.length));
    have += buffered;
    buf = [];
    buffered = 0;
  };
  try {
    for (;;) {
      const { done: end, value } = await reader.read();
      if (end) break;
      buf.push(value);
      buffered += value.length;
      if (have + buffered > f.size)
        throw new WorkerFail('HUB_SIZE', `${repo} (${f.path}): the Hub sent more than the ${f.size} bytes it lists`);
      if (buffered >= CHUNK) await flush();
      done(have + buffered);
    }
  } catch (e) {
    if (e instanceof WorkerFail && e.code === 'HUB_SIZE') {
      await store.remove(dir);
      throw e;
    }
    await flush(); // keep what arrived, for the next attempt's Range
    if (isAbort(e) || aborted(o)) throw e;
    throw new WorkerFail(
      'HUB_NETWORK',
      `${repo} (${f.path}): the download broke off at ${have} of ${f.size} bytes (${(e as Error).message})`,
    );
  }
  await flush();
}

/** Fetches one file into <partial>/<file> through its chunk folder, checks it and writes it whole; `done(n)` reports bytes stored of it. */
async function downloadFile(
  store: CheckpointStore,
  partial: string,
  url: string,
  repo: string,
  f: HubFile,
  o: HubOptions,
  done: (n: number) => void,
): Promise<void> {
  const target = `${partial}/${f.path}`;
  if ((await store.stat(target)) === 'file') {
    done(f.size);
    return;
  } // finished before a pause
  const dir = `${target}.parts`;
  await withRetry(o, () => fetchRest(store, dir, url, repo, f, o, done));
  const { names, bytes } = await chunks(store, dir);
  if (bytes !== f.size) {
    await store.remove(dir);
    throw new WorkerFail('HUB_SIZE', `${repo} (${f.path}): received ${bytes} bytes, the Hub lists ${f.size}; the file was not kept`);
  }
  const parts: Uint8Array[] = [];
  for (const n of names) parts.push(await store.read(`${dir}/${n}`));
  const out = concat(parts, bytes);
  if (f.sha256) {
    const got = hex(await crypto.subtle.digest('SHA-256', out));
    if (got !== f.sha256) {
      await store.remove(dir);
      throw new WorkerFail('HUB_SIZE', `${repo} (${f.path}): its sha256 is ${got}, the Hub lists ${f.sha256}; the file was not kept`);
    }
  }
  await store.write(target, out);
  await store.remove(dir);
}

/**
 * Downloads `listing` into `store` at <name>/ (through .partial-<name>/, resuming what an earlier attempt
 * left there); returns its config.model.path. `free`: bytes the quota still allows (null: unknown).
 * Aborting `o.signal` stops at once and keeps the partial folder (pause); cancelHubDownload removes it.
 */
export async function downloadHubModel(
  store: CheckpointStore,
  listing: HubListing,
  free: number | null,
  o: HubOptions = {},
  progress?: (p: HubProgress) => void,
): Promise<string> {
  const { repo, name, files } = listing;
  const partial = `.partial-${name}`;
  const old = `.old-${name}`;
  const base = o.base ?? HUB_URL;
  const sizes = new Map<string, number>();
  let have = 0;
  for (const f of files) {
    const p = `${partial}/${f.path}`;
    const n = (await store.stat(p)) === 'file' ? f.size : (await chunks(store, `${p}.parts`)).bytes;
    sizes.set(f.path, n);
    have += n;
  }
  if (free !== null && free < listing.bytes - have) {
    throw new WorkerFail(
      'STORAGE_FULL',
      `${repo} needs ${((listing.bytes - have) / 2 ** 20).toFixed(0)} MiB more but the browser grants this site ${(free / 2 ** 20).toFixed(0)} MiB more`,
    );
  }
  const total = listing.bytes;
  try {
    for (const f of files) {
      await downloadFile(store, partial, `${base}/${repo}/resolve/${listing.revision}/${f.path}`, repo, f, o, (n) => {
        sizes.set(f.path, n);
        progress?.({ file: f.path, done: [...sizes.values()].reduce((a, b) => a + b, 0), total });
      });
    }
    await store.remove(old);
    await swapIn(store, partial, name, old);
  } catch (e) {
    throw storageFailure(e, `downloading ${repo} into the browser's storage (what arrived is kept; download again to resume)`);
  }
  await store.remove(old).catch(() => {});
  return listing.path;
}

/** Removes what a paused or failed download of `repo` left in `store`. */
export async function cancelHubDownload(store: CheckpointStore, repo: string): Promise<void> {
  await store.remove(`.partial-${hubFolderName(checkRepo(repo))}`);
}
