// The run folders in OPFS (the Runs tab): runs/<id>/ is a checkpoint run folder (latest + ckpt-NNNNNN/, see
// src/marft/checkpoint/checkpoint.ts) plus run.json (when it was made, from what). Listing reads each run's
// latest state.json for its last accuracy (and its whole metric history for a chart overlay); importing a
// checkpoint zip makes a new run folder holding that one checkpoint, verified before it is listed (the bundled
// demo run is imported so, under its own id). The loaded run itself is src/marft/run.ts's Run.

import {
  CONFIG_FILE,
  LATEST_FILE,
  STATE_FILE,
  checkpointName,
  importCheckpointZip,
  listCheckpoints,
  parseManifest,
  readCheckpointFiles,
  resolveCheckpoint,
} from '../marft/checkpoint/checkpoint.ts';
import type { IterationMetrics } from '../config/metrics.ts';
import type { RunConfig } from '../config/run-config.ts';
import { opfsStore } from '../platform/storage/opfs.ts';
import { type CheckpointStore, pathParts } from '../platform/storage/store.ts';
import { ckptFail } from '../platform/storage/errors.ts';
import type { RunSummary } from './api.ts';
import { storageFailure } from './model-source.ts';

const META = 'run.json';

export interface RunMeta {
  id: string;
  createdAt: string;
  /** demo: the bundled demo run (public/demo/), kept read-only. */
  source: 'new' | 'import' | 'demo';
  note?: string;
}

/** OPFS runs/ (opened on first use). */
export const runsStore: CheckpointStore = opfsStore('runs');

export function newRunId(prefix = 'run'): string {
  const d = new Date();
  const p = (n: number) => String(n).padStart(2, '0');
  const rand = Math.random().toString(36).slice(2, 6);
  return `${prefix}-${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}-${rand}`;
}

/** run.json of a run folder, keyed by its path in the folder. */
export const runMetaFile = (meta: RunMeta): Record<string, string> => ({ [META]: JSON.stringify(meta, null, 2) + '\n' });

const decode = (b: Uint8Array) => new TextDecoder().decode(b);

async function summarize(s: CheckpointStore, id: string): Promise<RunSummary> {
  const base: RunSummary = { id, createdAt: '', roles: [], env: '', model: '', checkpoints: [], lastAccuracy: null };
  try {
    if ((await s.stat(`${id}/${META}`)) === 'file') {
      const meta = JSON.parse(decode(await s.read(`${id}/${META}`))) as RunMeta;
      base.createdAt = meta.createdAt ?? '';
      if (meta.source === 'demo') base.demo = true;
    }
    base.checkpoints = (await listCheckpoints(s, id)).map((c) => ({ name: c.name, iteration: c.iteration, latest: c.latest }));
    const latest = base.checkpoints.find((c) => c.latest) ?? base.checkpoints[base.checkpoints.length - 1];
    if (latest) {
      const cfg = JSON.parse(decode(await s.read(`${id}/${latest.name}/${CONFIG_FILE}`))) as RunConfig;
      base.roles = cfg.graph.agents.map((a) => a.role);
      base.env = cfg.env.name;
      base.model = cfg.model.path || 'built-in';
      base.loraMode = cfg.lora?.mode;
      const state = JSON.parse(decode(await s.read(`${id}/${latest.name}/${STATE_FILE}`))) as {
        metrics?: Array<{ accuracy: number }>;
        savedAt?: string;
      };
      const m = state.metrics ?? [];
      base.lastAccuracy = m.length ? m[m.length - 1].accuracy : null;
      base.createdAt ||= state.savedAt ?? '';
    }
  } catch (e) {
    base.problem = (e as Error).message.split('\n')[0];
  }
  return base;
}

/** Every run folder, newest first. */
export async function listRuns(): Promise<RunSummary[]> {
  const s = runsStore;
  const entries = (await s.list('')).filter((e) => e.kind === 'directory');
  const out = await Promise.all(entries.map((e) => summarize(s, e.name)));
  return out.sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : a.id < b.id ? 1 : -1));
}

/** The metric history of a run's latest checkpoint (a chart overlay of that run). */
export async function runHistory(id: string, s: CheckpointStore = runsStore): Promise<IterationMetrics[]> {
  if (pathParts(id).length !== 1) ckptFail('PATH_INVALID', id, 'a run id names one folder of runs/');
  const ckpt = await resolveCheckpoint(s, id);
  return (await parseManifest(await s.read(`${ckpt}/${STATE_FILE}`), `${id}: ${STATE_FILE}`)).metrics;
}

export async function deleteRun(id: string, s: CheckpointStore = runsStore): Promise<void> {
  if (pathParts(id).length !== 1) ckptFail('PATH_INVALID', id, 'a run id names one folder of runs/');
  await s.remove(id);
}

/**
 * A checkpoint zip as a new run folder of `s` (default OPFS runs/); verified, removed again when it does not
 * verify or a write fails (a full quota is STORAGE_FULL). Every file lands under <new id>/: the zip reader
 * admits only plain relative entry names.
 */
export async function importCheckpoint(
  bytes: Uint8Array,
  fileName: string,
  s: CheckpointStore = runsStore,
  as: { id: string; source: RunMeta['source'] } = { id: newRunId('import'), source: 'import' },
): Promise<RunSummary> {
  const files = importCheckpointZip(bytes);
  const manifest = await parseManifest(files[STATE_FILE], `${fileName}: ${STATE_FILE}`);
  const { id } = as;
  const ckpt = checkpointName(manifest.iteration);
  try {
    for (const [p, b] of Object.entries(files)) await s.write(`${id}/${ckpt}/${p}`, b);
    await s.write(`${id}/${LATEST_FILE}`, `${ckpt}\n`);
    for (const [p, text] of Object.entries(runMetaFile({ id, createdAt: new Date().toISOString(), source: as.source, note: fileName })))
      await s.write(`${id}/${p}`, text);
    await readCheckpointFiles(s, id);
  } catch (e) {
    await s.remove(id).catch(() => {});
    throw storageFailure(e, `importing ${fileName}`);
  }
  return summarize(s, id);
}
