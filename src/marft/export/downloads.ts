// Two downloads that need no GPU and no loaded run, so the Runs tab offers them for any run kept in storage:
// a checkpoint's PEFT adapters (agents/<role>/ folders and the run config, the files "Download adapters"
// gives while a run trains) and a base model folder as a zip (<name>/config.json, tokenizer, safetensors),
// so Python loads the adapters onto the very base they were trained on: the adapters' adapter_config.json
// names the base by that folder name (base_model_name_or_path).

import { CONFIG_FILE, type VerifiedCheckpoint } from '../checkpoint/checkpoint.ts';
import type { ModelFiles } from '../../model/folder.ts';
import { zipFiles } from '../../platform/zip.ts';
import type { Download } from './agent.ts';

/** The adapter files of a checkpoint: every agents/ file and the run config (what the run was trained with). */
export function checkpointAdapterFiles(ck: VerifiedCheckpoint): Record<string, Uint8Array> {
  return Object.fromEntries(Object.entries(ck.files).filter(([p]) => p.startsWith('agents/') || p === CONFIG_FILE));
}

/** A checkpoint's adapters as the zip the lab downloads, named after the run and the iteration. */
export function checkpointAdaptersZip(ck: VerifiedCheckpoint, runId: string): Download {
  return { name: `marft-adapters-${runId}-it${ck.manifest.iteration}.zip`, bytes: zipFiles(checkpointAdapterFiles(ck)) };
}

/** Every file of a model folder under <its name>/ in one zip, so unzipping gives the folder from_pretrained reads. */
export async function modelFolderZip(model: ModelFiles): Promise<Download> {
  const files: Record<string, Uint8Array> = {};
  for (const p of model.list().sort()) files[`${model.name}/${p}`] = await model.read(p);
  return { name: `${model.name}.zip`, bytes: zipFiles(files), summary: `${model.name}/: ${Object.keys(files).length} files` };
}
