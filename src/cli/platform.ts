// The engine's platform in Node (src/marft/session.ts) for the marft commands: the process's Dawn device
// (a fresh one after a loss), base models from folders on disk (the built-in tiny model unless the config
// names a folder), usage errors for a model a run cannot use; the run config a command reads (the
// default 2-agent preset without --config); and where a --checkpoint or --resume path's checkpoint lives.

import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUILTIN_MODEL, type RunConfig, builtinModelName, parseRunConfig } from '../config/run-config.ts';
import type { LimitsMode } from '../gpu/device.ts';
import { acquireNodeGpu, resetNodeGpu } from '../gpu/node.ts';
import { checkpointZipStore } from '../marft/checkpoint/checkpoint.ts';
import type { CheckpointSource } from '../marft/run.ts';
import { Session } from '../marft/session.ts';
import { nodeSandbox } from '../platform/sandbox/node.ts';
import { nodeStore } from '../platform/storage/node.ts';
import { nodeModelFiles } from '../model/node-files.ts';
import { defaultRunConfig } from '../config/run-presets.ts';
import { UsageError } from './args.ts';
import { withModuleSource } from './module-source.ts';

/** public/models/<name> of the project, found from the working directory or from the CLI bundle. */
export function builtinModelDir(name = BUILTIN_MODEL): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [
    join(process.cwd(), 'public/models', name),
    join(here, '../public/models', name),
    join(here, '../../public/models', name),
  ];
  const found = candidates.find((c) => existsSync(join(c, 'config.json')));
  if (!found) {
    throw new UsageError(
      `the built-in model "${name}" is not in public/models/ (looked in ${candidates.join(', ')}); make it with \`marft pretrain --out public/models/${name}\` or set model.path in the config`,
    );
  }
  return found;
}

/** The base model folder a model.path names: a built-in model ('' or builtin:<name>) or a folder. */
const modelDir = (path: string): string => {
  const builtin = builtinModelName(path);
  return builtin ? builtinModelDir(builtin) : resolve(path);
};

/** The base model folder a run config names (the built-in model when model.path is empty). */
export const runModelDir = (config: RunConfig): string => modelDir(config.model.path);

export function readRunConfig(file: string | undefined): RunConfig {
  if (!file) return defaultRunConfig();
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read --config ${file}: ${(e as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`${file} is not valid JSON: ${(e as Error).message}`);
  }
  return parseRunConfig(withModuleSource(json, dirname(resolve(file))));
}

/**
 * A session on this process's GPU (with `limits`, the CLI's --limits); adapters record the model folder's absolute path as their base model;
 * users' environment modules and code candidates run in worker threads (src/platform/sandbox/node.ts).
 */
export function nodeSession(log: (l: string) => void, limits?: LimitsMode): Session {
  return new Session({
    device: (fresh) => {
      if (fresh) resetNodeGpu();
      return acquireNodeGpu({ log, limits });
    },
    async model(path) {
      const dir = modelDir(path);
      return { files: await nodeModelFiles(dir), name: dir, baseModel: dir };
    },
    refuse: (code, message, cause) => (code === 'NO_TOKENIZER' ? new UsageError(message) : cause),
    sandbox: nodeSandbox,
  });
}

/**
 * The checkpoint a path names: a run folder (its latest checkpoint), a checkpoint folder, or a checkpoint
 * zip (downloaded from the lab), whose files are read into memory.
 */
export function checkpointSource(path: string): CheckpointSource {
  const full = resolve(path);
  return full.endsWith('.zip')
    ? { store: checkpointZipStore(new Uint8Array(readFileSync(full))), dir: '' }
    : { store: nodeStore(dirname(full)), dir: basename(full) };
}
