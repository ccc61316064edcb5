// One agent of a saved checkpoint: agentAdapter is the one way to read an agent's adapter (in shared LoRA
// mode the one adapter every role uses) out of a checkpoint's verified files, for the lab's ONNX export and
// logits and for `marft export --format onnx`. Here too: the agent as an ONNX zip (the adapter merged into
// the run's base model by exportOnnx, with the tokenizer files and a README), and the logits the lab's own
// decoder gives with that adapter (applied unmerged, by the LoRA kernels), which an export is checked
// against. Browser-safe and storage-free: the callers read the checkpoint and the base model's files.

import { CONFIG_FILE, type VerifiedCheckpoint } from '../checkpoint/checkpoint.ts';
import { type RunConfig, parseRunConfig } from '../../config/run-config.ts';
import { MarftError } from '../errors.ts';
import { agentDir } from './peft.ts';
import { errorMessage } from '../../common/errors.ts';
import { ckptFail } from '../../platform/storage/errors.ts';
import { zipFiles } from '../../platform/zip.ts';
import { type ModelConfig, parseModelConfig } from '../../model/config.ts';
import type { Decoder } from '../../model/decoder.ts';
import type { ModelFiles } from '../../model/folder.ts';
import { sequenceLogits } from '../../model/logits.ts';
import { type OnnxExport, type OnnxExportOptions, exportOnnx } from '../../model/onnx/export.ts';
import { checkAdapterFits } from '../../model/onnx/merge.ts';
import { ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE, type PeftAdapter, readPeftAdapter } from '../../model/peft.ts';

/** A file to hand to the user. */
export interface Download {
  name: string;
  bytes: Uint8Array;
  /** One line on what it holds, when there is more to say than the name. */
  summary?: string;
}

export interface AgentAdapter {
  config: RunConfig;
  adapter: PeftAdapter;
  /** "run-…/ckpt-000002", for messages and metadata. */
  where: string;
  iteration: number;
  shared: boolean;
}

/**
 * The run config of a checkpoint and the adapter of `role` (the shared adapter in shared LoRA mode): its
 * folder as state.json records it, a missing file named (FILE_MISSING), an unreadable one ADAPTER_INVALID.
 */
export function agentAdapter(ck: VerifiedCheckpoint, role: string): AgentAdapter {
  const config = parseRunConfig(new TextDecoder().decode(ck.files[CONFIG_FILE]), { checkEnv: false });
  const roles = config.graph.agents.map((a) => a.role);
  if (!roles.includes(role)) throw new MarftError('NO_AGENT', `"${role}" is not an agent of ${ck.path} (its agents: ${roles.join(', ')})`);
  // every role has its folder; in shared mode each holds a copy of the one adapter (see peft.ts)
  const dir = ck.manifest.adapters?.roles?.[role]?.dir ?? agentDir(role);
  const cfg = ck.files[`${dir}/${ADAPTER_CONFIG_FILE}`];
  const weights = ck.files[`${dir}/${ADAPTER_WEIGHTS_FILE}`];
  if (!cfg || !weights) ckptFail('FILE_MISSING', `${ck.path}/${dir}`, `the adapter of agent "${role}" is not in the checkpoint`);
  let adapter: PeftAdapter;
  try {
    adapter = readPeftAdapter({ [ADAPTER_CONFIG_FILE]: cfg, [ADAPTER_WEIGHTS_FILE]: weights });
  } catch (e) {
    return ckptFail('ADAPTER_INVALID', `${ck.path}/${dir}`, `agent "${role}": ${errorMessage(e).split('\n')[0]}`);
  }
  return { config, adapter, where: ck.path, iteration: ck.manifest.iteration, shared: config.lora.mode === 'shared' };
}

/** Fails with ADAPTER_MISMATCH, naming the layer and module, when the adapter does not fit `model`. */
export function checkAgentFits(model: ModelConfig, modelName: string, role: string, a: AgentAdapter): void {
  try {
    checkAdapterFits(model, a.adapter, `agents/${role}`);
  } catch (e) {
    const why = errorMessage(e)
      .split('\n')[0]
      .replace(/^agents\/[^:]*: /, '');
    throw new MarftError(
      'ADAPTER_MISMATCH',
      `the ${a.shared ? 'shared adapter' : `adapter of agent "${role}"`} in ${a.where} does not fit the base model "${modelName}": ${why}`,
    );
  }
}

async function modelConfigOf(model: ModelFiles): Promise<ModelConfig> {
  return parseModelConfig(await model.readText('config.json'), `${model.name}/config.json`);
}

/** A role as a file name. */
export const roleFileName = (role: string): string => role.replace(/[^\w.-]+/g, '_').replace(/^\.+/, '') || 'agent';

function readme(role: string, file: string, a: AgentAdapter, model: string, summary: string, files: string[]): string {
  return [
    `# ${file}: agent "${role}" of ${a.where} (iteration ${a.iteration})`,
    '',
    `Base model ${model} with ${a.shared ? "the run's shared LoRA adapter (every agent of this run gives the same model)" : `the LoRA adapter of "${role}"`} merged into its weights (W + scale * B @ A).`,
    summary,
    '',
    'Inputs: input_ids int64 (batch, sequence), attention_mask int64 (batch, sequence) (1 = token, 0 = left padding).',
    'Output: logits float32 (batch, sequence, vocab). No KV cache: each call runs the whole sequence.',
    `Files: ${files.join(', ')}.`,
    '',
    '```python',
    'import numpy as np, onnxruntime as ort',
    `s = ort.InferenceSession("${file}")`,
    'ids = np.array([[1, 2, 3]], dtype=np.int64)',
    'logits = s.run(["logits"], {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0]',
    '```',
    '',
    "The agent's system prompt and the rest of the team are in the run config (the Runs tab's checkpoint zip).",
    '',
  ].join('\n');
}

/**
 * The agent's adapter merged into `model` as ONNX (exportOnnx's result), once it is checked to fit
 * (ADAPTER_MISMATCH); `source` says which agent of which checkpoint (it is in the model's metadata too).
 */
export async function exportAgentOnnx(
  ck: VerifiedCheckpoint,
  role: string,
  model: ModelFiles,
  opts: Omit<OnnxExportOptions, 'source'>,
): Promise<{ agent: AgentAdapter; onnx: OnnxExport; source: string }> {
  const agent = agentAdapter(ck, role);
  checkAgentFits(await modelConfigOf(model), model.name, role, agent);
  const source = `agent ${role} of ${agent.where} (iteration ${agent.iteration}${agent.shared ? ', shared LoRA' : ''})`;
  return { agent, onnx: await exportOnnx(model, agent.adapter, { ...opts, source }), source };
}

/** The zip of one agent as ONNX: <role>.onnx (+ <role>.onnx.data past ~1.5 GB of weights), tokenizer files, README.md. */
export async function agentOnnxZip(ck: VerifiedCheckpoint, role: string, model: ModelFiles, runId: string): Promise<Download> {
  const file = `${roleFileName(role)}.onnx`;
  const { agent: a, onnx: exp } = await exportAgentOnnx(ck, role, model, { fileName: file, externalData: 'auto' });
  const files: Record<string, Uint8Array | string> = { [file]: exp.model, ...exp.extraFiles };
  if (exp.data) {
    const data = new Uint8Array(exp.data.bytes);
    let o = 0;
    for (const c of exp.data.chunks()) {
      data.set(c, o);
      o += c.length;
    }
    files[exp.data.location] = data;
  }
  files['README.md'] = readme(role, file, a, model.name, exp.summary, Object.keys(files).sort());
  return {
    name: `marft-onnx-${runId}-${roleFileName(role)}-it${a.iteration}.zip`,
    bytes: zipFiles(files),
    summary: `${file}: ${exp.summary}${a.shared ? ' (shared LoRA)' : ''}`,
  };
}

/** (T, V) logits the lab's decoder gives `ids` with the agent's adapter of the checkpoint. */
export async function agentLogits(
  ck: VerifiedCheckpoint,
  role: string,
  decoder: Decoder,
  modelName: string,
  ids: readonly number[],
): Promise<Float32Array> {
  const a = agentAdapter(ck, role);
  checkAgentFits(decoder.config, modelName, role, a);
  return sequenceLogits(decoder, ids, a.adapter);
}
