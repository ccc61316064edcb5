// What the training commands share: the GPU, the base model with its tokenizer (the built-in tiny model
// unless the config names a folder), and the run config (the default 2-agent preset without --config).

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Gpu } from '../gpu/gpu.ts';
import { acquireNodeGpu } from '../gpu/node.ts';
import { type LoadedDecoder, loadDecoder } from '../model/load.ts';
import { nodeModelFiles } from '../model/node-files.ts';
import type { LoadedTokenizer } from '../model/tokenizer.ts';
import { type RunConfig, parseConfig } from '../config/run-config.ts';
import { defaultRunConfig } from '../config/run-presets.ts';
import { UsageError } from './args.ts';
import { withModuleSource } from './module-source.ts';

export const BUILTIN_MODEL = 'marft-tiny';

/** public/models/<name> of the project, found from the working directory or from the CLI bundle. */
export function builtinModelDir(name = BUILTIN_MODEL): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(process.cwd(), 'public/models', name), join(here, '../public/models', name), join(here, '../../public/models', name)];
  const found = candidates.find((c) => existsSync(join(c, 'config.json')));
  if (!found) {
    throw new UsageError(`the built-in model "${name}" is not in public/models/ (looked in ${candidates.join(', ')}); make it with \`marft pretrain --out public/models/${name}\` or set model.path in the config`);
  }
  return found;
}

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
  return parseConfig(withModuleSource(json, dirname(resolve(file))));
}

export interface Session extends LoadedDecoder {
  gpu: Gpu;
  tokenizer: LoadedTokenizer;
  modelDir: string;
}

export async function openSession(config: RunConfig, log: (l: string) => void): Promise<Session> {
  const gpu = await acquireNodeGpu({ log });
  const modelDir = config.model.path ? resolve(config.model.path) : builtinModelDir();
  const loaded = await loadDecoder(gpu, await nodeModelFiles(modelDir));
  if (!loaded.model.tokenizer) throw new UsageError(`${modelDir} has no tokenizer.json: a training run needs the model's tokenizer`);
  return { gpu, ...loaded, tokenizer: loaded.model.tokenizer, modelDir };
}
