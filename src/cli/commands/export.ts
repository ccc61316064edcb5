// marft export [--format zip|onnx|areal] ...
//   zip (default): --checkpoint DIR --out FILE.zip — the checkpoint's adapters as PEFT folders, one per agent
//     (agents/<role>/adapter_config.json and adapter_model.safetensors), plus the run config, zipped.
//   onnx: (--checkpoint DIR --agent ROLE | --model DIR [--adapter DIR]) --out FILE.onnx — the base model with
//     the agent's adapter merged, as an ONNX graph (FILE.onnx.data beside it past ~1.5 GB of weights), and
//     the tokenizer files copied next to it. --model also overrides the checkpoint's base model folder.
//   areal: --checkpoint DIR --out DIR2 — an AReaL-MARFT config.yaml with the adapters alongside.
// A checkpoint is a run folder (its `latest`), a checkpoint folder, or a checkpoint zip. onnx and areal
// read files only (no GPU); --checkpoint --agent reads the agent's adapter as the lab does (src/marft/export/agent.ts).

import { basename, dirname, join, resolve } from 'node:path';
import { arealExportFiles } from '../../marft/export/areal.ts';
import { loadCheckpoint, readCheckpointFiles, type VerifiedCheckpoint } from '../../marft/checkpoint/checkpoint.ts';
import { exportAgentOnnx } from '../../marft/export/agent.ts';
import { exportAdapters } from '../../marft/export/peft.ts';
import { type RunConfig, parseRunConfig } from '../../config/run-config.ts';
import { zipFiles } from '../../platform/zip.ts';
import { loadAdapterFiles } from '../../model/load.ts';
import { nodeModelFiles } from '../../model/node-files.ts';
import { type OnnxExport, exportOnnx } from '../../model/onnx/export.ts';
import { LIMITS_FLAG, UsageError, parse, parseLimits, required } from '../args.ts';
import { checkpointSource, nodeSession, runModelDir } from '../platform.ts';
import { writeFileAtomic } from '../write-atomic.ts';

export const usage =
  'marft export [--format zip] --checkpoint DIR --out FILE.zip [--limits default|adapter]\n' +
  '  marft export --format onnx (--checkpoint DIR --agent ROLE | --model DIR [--adapter DIR]) --out FILE.onnx [--no-mask] [--max-positions N] [--external-data auto|on|off]\n' +
  '  marft export --format areal --checkpoint DIR --out DIR2 [--base-model PATH]';

const FLAGS = {
  checkpoint: { type: 'string' },
  out: { type: 'string' },
  format: { type: 'string' },
  agent: { type: 'string' },
  model: { type: 'string' },
  adapter: { type: 'string' },
  'no-mask': { type: 'boolean' },
  'max-positions': { type: 'string' },
  'external-data': { type: 'string' },
  'base-model': { type: 'string' },
  ...LIMITS_FLAG,
} as const;

/** A checkpoint's verified files and run config, from a run folder, a checkpoint folder or a zip (its path: the zip's name). */
export async function readCheckpoint(path: string): Promise<VerifiedCheckpoint & { config: RunConfig }> {
  const { store, dir } = checkpointSource(path);
  const ck = await readCheckpointFiles(store, dir);
  const config = parseRunConfig(new TextDecoder().decode(ck.files['config.json']), { checkEnv: false });
  return { ...ck, path: ck.path || basename(resolve(path)), config };
}

export interface OnnxExportArgs {
  out: string;
  checkpoint?: string;
  agent?: string;
  model?: string;
  adapter?: string;
  withAttentionMask?: boolean;
  maxPositions?: number;
  externalData?: boolean | 'auto';
}

/** Writes FILE.onnx (+ FILE.onnx.data) and the tokenizer files beside it; returns a summary line. */
export async function exportOnnxToFile(a: OnnxExportArgs): Promise<string> {
  const out = resolve(a.out);
  const opts = {
    fileName: basename(out),
    withAttentionMask: a.withAttentionMask,
    maxPositions: a.maxPositions,
    externalData: a.externalData,
  };
  let exp: OnnxExport;
  let source: string;
  if (a.checkpoint) {
    if (a.adapter) throw new UsageError('--adapter goes with --model, not with --checkpoint (use --agent ROLE)');
    const ck = await readCheckpoint(a.checkpoint);
    const roles = ck.config.graph.agents.map((x) => x.role);
    if (!a.agent) throw new UsageError(`--agent is required with --checkpoint (one of ${roles.join(', ')})`);
    if (!roles.includes(a.agent)) throw new UsageError(`--agent ${a.agent} is not a role of the checkpoint (${roles.join(', ')})`);
    const modelDir = a.model ? resolve(a.model) : runModelDir(ck.config);
    ({ onnx: exp, source } = await exportAgentOnnx(ck, a.agent, await nodeModelFiles(modelDir), opts));
  } else {
    if (!a.model) throw new UsageError('--format onnx needs --checkpoint DIR --agent ROLE, or --model DIR [--adapter DIR]');
    if (a.agent) throw new UsageError('--agent goes with --checkpoint');
    const adapter = a.adapter ? await loadAdapterFiles(await nodeModelFiles(resolve(a.adapter))) : null;
    source = a.adapter ? `adapter ${resolve(a.adapter)}` : 'base model';
    exp = await exportOnnx(await nodeModelFiles(resolve(a.model)), adapter, { ...opts, source });
  }
  // the external data first: the .onnx that names it appears only once it is whole
  if (exp.data) writeFileAtomic(join(dirname(out), exp.data.location), exp.data.chunks());
  writeFileAtomic(out, exp.model);
  for (const [f, bytes] of Object.entries(exp.extraFiles)) writeFileAtomic(join(dirname(out), f), bytes);
  const copied = Object.keys(exp.extraFiles);
  return `wrote ${out} (${exp.summary}; ${source})${copied.length ? `, copied ${copied.join(', ')}` : ', no tokenizer files in the model folder'}`;
}

/** Writes the AReaL export into outDir; returns a summary line. */
export async function exportArealToDir(checkpoint: string, outDir: string, baseModel?: string): Promise<string> {
  const ck = await readCheckpoint(checkpoint);
  const files = arealExportFiles(ck.config, ck.files, {
    baseModel: baseModel ?? runModelDir(ck.config),
    trialName: `iter${ck.manifest.iteration}`,
    source: { checkpoint: resolve(checkpoint), iteration: ck.manifest.iteration },
  });
  const root = resolve(outDir);
  for (const [p, data] of Object.entries(files)) writeFileAtomic(join(root, p), data);
  return `wrote ${root}: config.yaml and ${Object.keys(files).filter((f) => f.endsWith('.safetensors')).length} adapter folder(s)`;
}

export async function exportCommand(argv: string[]): Promise<void> {
  const a = parse(argv, FLAGS);
  const format = typeof a.format === 'string' ? a.format : 'zip';
  const out = required(a.out, 'out');
  if (format === 'onnx') {
    const ext = a['external-data'];
    if (ext !== undefined && !['auto', 'on', 'off'].includes(ext as string))
      throw new UsageError(`--external-data must be auto, on or off, got ${ext}`);
    const mp = typeof a['max-positions'] === 'string' ? Number(a['max-positions']) : undefined;
    if (mp !== undefined && !(Number.isInteger(mp) && mp > 0))
      throw new UsageError(`--max-positions must be a positive integer, got ${a['max-positions']}`);
    console.error(
      await exportOnnxToFile({
        out,
        checkpoint: a.checkpoint as string | undefined,
        agent: a.agent as string | undefined,
        model: a.model as string | undefined,
        adapter: a.adapter as string | undefined,
        withAttentionMask: !a['no-mask'],
        maxPositions: mp,
        externalData: ext === 'on' ? true : ext === 'off' ? false : 'auto',
      }),
    );
    return;
  }
  if (format === 'areal') {
    console.error(await exportArealToDir(required(a.checkpoint, 'checkpoint'), out, a['base-model'] as string | undefined));
    return;
  }
  if (format !== 'zip') throw new UsageError(`--format must be zip, onnx or areal, got ${format}`);
  const { store, dir } = checkpointSource(required(a.checkpoint, 'checkpoint'));
  const config = parseRunConfig(new TextDecoder().decode((await readCheckpointFiles(store, dir)).files['config.json']), {
    checkEnv: false,
  });
  const m = await nodeSession((l) => console.error(l), parseLimits(a.limits)).load(config.model.path);
  const state = await loadCheckpoint(m.gpu, store, dir, m.model);
  const files = await exportAdapters(m.gpu, state, { baseModel: m.source.baseModel });
  writeFileAtomic(out, zipFiles(files));
  console.error(
    `wrote ${out}: ${Object.keys(files).length} files (${Object.keys(files).filter((f) => f.endsWith('.safetensors')).length} adapters)`,
  );
}
