// The pieces of the checkpoint format below the save/load logic (see checkpoint.ts for the layout):
// SHA-256, JSON that keeps NaN / ±Infinity / -0 (the metric history has NaN accuracies), the critic's
// value-head file and the optimiser file, each with a validating reader that names the bad tensor.
//
//   critic/value_head.safetensors  heads.{s}.layers.{j}.weight (OUT, IN), heads.{s}.layers.{j}.bias (OUT);
//                                  metadata: input_size C, hidden [H1, ...] (JSON), heads S.
//   optimizer.safetensors          {policy|critic}.{i:04}.{param}.adam_m / .adam_v, with the shape of the
//                                  parameter, i its index in the optimiser's group list (loraParams order:
//                                  layer, target module, A then B; valueHeadParams order: head, layer, W then
//                                  b, then with critic.mode lora the critic LoRA's, named lora.layers...),
//                                  and policy.stats (S, 8), one row per adapter slot, and critic.stats
//                                  (8) (OPTIMIZER_STATS_LAYOUT). A checkpoint from before per-slot state has
//                                  policy.stats (8): every slot loads that one row (its step count included).
// All tensors are F32 and stored bit for bit (NaN payloads included), so a load is exact.

import type { Gpu } from '../../gpu/gpu.ts';
import type { TensorReader } from '../../gpu/prefetch.ts';
import { type Tensor, numel } from '../../gpu/tensor.ts';
import type { LoraSet } from '../../model/lora-set.ts';
import { OPTIMIZER_STATS_LAYOUT, type Optimizer } from '../../model/optimizer.ts';
import { parseSafetensors, type TensorToWrite, writeSafetensors } from '../../model/safetensors.ts';
import type { ValueHead } from '../../model/value-head.ts';
import type { TrainState } from '../state.ts';
import { errorMessage } from '../../common/errors.ts';
import { ckptFail } from '../../platform/storage/errors.ts';
import { parseJson } from '../../common/json.ts';

export const VALUE_HEAD_FILE = 'critic/value_head.safetensors';
export const OPTIMIZER_FILE = 'optimizer.safetensors';

// ---- SHA-256 ----------------------------------------------------------------------------------------

export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

// ---- JSON that keeps every f64 ----------------------------------------------------------------------

const SPECIAL = 'f64';
const SPECIALS: Record<string, number> = { NaN: Number.NaN, Infinity: Infinity, '-Infinity': -Infinity, '-0': -0 };

/** JSON.stringify, with NaN, ±Infinity and -0 written as {"f64": "NaN"} (plain JSON turns them into null or 0). */
export function stringifyExact(value: unknown, indent?: number): string {
  return JSON.stringify(
    value,
    (_k, v: unknown) => {
      if (typeof v === 'number' && (!Number.isFinite(v) || Object.is(v, -0))) return { [SPECIAL]: Object.is(v, -0) ? '-0' : String(v) };
      return v;
    },
    indent,
  );
}

/** JSON.parse (with parseJson's nesting cap), undoing stringifyExact's encoding. */
export function parseExact(text: string): unknown {
  return parseJson(text, (_k, v: unknown) => {
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const keys = Object.keys(v);
      const s = (v as Record<string, unknown>)[SPECIAL];
      if (keys.length === 1 && typeof s === 'string' && s in SPECIALS) return SPECIALS[s];
    }
    return v;
  });
}

// ---- validated tensor reading -----------------------------------------------------------------------

export interface ExpectedTensor {
  name: string;
  shape: readonly number[];
  /** An older format's shape, also accepted (the caller converts the values). */
  legacyShape?: readonly number[];
}

const sameShape = (a: readonly number[], b: readonly number[]): boolean => a.length === b.length && a.every((d, i) => d === b[i]);

/**
 * Parses a safetensors file and checks that it holds exactly the expected F32 tensors with their shapes;
 * returns name -> values (aligned copies) and the metadata.
 */
export function readExactTensors(
  bytes: Uint8Array,
  file: string,
  expected: readonly ExpectedTensor[],
): { values: Map<string, Float32Array>; metadata: Record<string, string> } {
  let st;
  try {
    st = parseSafetensors(bytes, file);
  } catch (e) {
    return ckptFail('TENSOR_MISMATCH', file, `not a readable safetensors file (${errorMessage(e).split('\n')[0]})`);
  }
  const want = new Set(expected.map((t) => t.name));
  const extra = [...st.tensors.keys()].filter((n) => !want.has(n));
  if (extra.length)
    ckptFail(
      'TENSOR_MISMATCH',
      file,
      `unexpected tensor${extra.length > 1 ? 's' : ''} ${extra
        .slice(0, 3)
        .map((n) => `"${n}"`)
        .join(
          ', ',
        )}${extra.length > 3 ? ` and ${extra.length - 3} more` : ''} (this run config does not have ${extra.length > 1 ? 'them' : 'it'})`,
    );
  const values = new Map<string, Float32Array>();
  for (const { name, shape, legacyShape } of expected) {
    const t = st.tensors.get(name);
    if (!t)
      ckptFail(
        'TENSOR_MISMATCH',
        file,
        `tensor "${name}" is missing (the file has ${st.tensors.size} tensors, the run needs ${expected.length})`,
      );
    if (t.dtype !== 'F32') ckptFail('TENSOR_MISMATCH', file, `tensor "${name}" is ${t.dtype}, expected F32`);
    if (!sameShape(t.shape, shape) && !(legacyShape && sameShape(t.shape, legacyShape))) {
      ckptFail('TENSOR_MISMATCH', file, `tensor "${name}" has shape [${t.shape.join(', ')}], the run needs [${shape.join(', ')}]`);
    }
    const buf = new ArrayBuffer(t.data.byteLength);
    new Uint8Array(buf).set(t.data);
    values.set(name, new Float32Array(buf));
  }
  return { values, metadata: st.metadata ?? {} };
}

const f32 = (name: string, shape: readonly number[], data: Float32Array): TensorToWrite => ({ name, dtype: 'F32', shape, data });

// ---- critic -----------------------------------------------------------------------------------------

interface NamedParam {
  name: string;
  param: Tensor;
}

export function valueHeadNames(head: ValueHead): NamedParam[] {
  return head.heads.flatMap((layers, s) =>
    layers.flatMap((l, j) => [
      { name: `heads.${s}.layers.${j}.weight`, param: l.W },
      { name: `heads.${s}.layers.${j}.bias`, param: l.b },
    ]),
  );
}

export async function encodeValueHead(gpu: TensorReader, head: ValueHead): Promise<Uint8Array> {
  const tensors: TensorToWrite[] = [];
  for (const { name, param } of valueHeadNames(head)) tensors.push(f32(name, param.shape, await gpu.readF32(param)));
  return writeSafetensors(tensors, {
    format: 'marft-value-head',
    input_size: String(head.C),
    hidden: JSON.stringify(head.hidden),
    heads: String(head.heads.length),
  });
}

/** Checks the file against the (freshly created) head and overwrites every weight. */
export function decodeValueHead(gpu: Gpu, head: ValueHead, bytes: Uint8Array, file = VALUE_HEAD_FILE): void {
  const named = valueHeadNames(head);
  const { values, metadata } = readExactTensors(
    bytes,
    file,
    named.map(({ name, param }) => ({ name, shape: param.shape })),
  );
  const check = (key: string, want: string): void => {
    if (metadata[key] !== undefined && metadata[key] !== want) {
      ckptFail('TENSOR_MISMATCH', file, `metadata ${key} is ${metadata[key]}, the run needs ${want} (config.json critic)`);
    }
  };
  check('input_size', String(head.C));
  check('hidden', JSON.stringify(head.hidden));
  check('heads', String(head.heads.length));
  for (const { name, param } of named) gpu.write(param, values.get(name)!);
}

// ---- optimiser --------------------------------------------------------------------------------------

export function loraNames(set: LoraSet): NamedParam[] {
  return set.layers.flatMap((layer, l) =>
    Object.entries(layer).flatMap(([m, p]) => [
      { name: `layers.${l}.${m}.lora_A`, param: p.A },
      { name: `layers.${l}.${m}.lora_B`, param: p.B },
    ]),
  );
}

/** One tensor of the optimiser file; legacyShape: the shape an older checkpoint stored it in. */
interface OptimTensor {
  name: string;
  t: Tensor;
  legacyShape?: number[];
}

/** The optimiser tensors of one Optimizer, in group order, checked against the parameters' names. */
function optimTensors(prefix: string, optim: Optimizer, named: NamedParam[]): OptimTensor[] {
  if (named.length !== optim.groups.length)
    throw new Error(`${prefix} optimiser has ${optim.groups.length} groups for ${named.length} parameters`);
  const width = Math.max(4, String(named.length).length);
  const out: OptimTensor[] = [];
  optim.groups.forEach((g, i) => {
    // The optimiser is built from loraParams / valueHeadParams: this identity check pins the order.
    if (g.params !== named[i].param)
      throw new Error(`${prefix} optimiser group ${i} is not the parameter ${named[i].name}: the group order changed`);
    const key = `${prefix}.${String(i).padStart(width, '0')}.${named[i].name}`;
    out.push({ name: `${key}.adam_m`, t: g.m }, { name: `${key}.adam_v`, t: g.v });
  });
  // A slotted optimiser's (S, 8) stats were one (8) row before per-slot state.
  out.push({ name: `${prefix}.stats`, t: optim.stats, legacyShape: optim.slots === null ? undefined : [OPTIMIZER_STATS_LAYOUT.size] });
  return out;
}

function allOptimTensors(state: TrainState): OptimTensor[] {
  return [
    ...optimTensors('policy', state.policyOptim, loraNames(state.policy)),
    ...optimTensors('critic', state.criticOptim, [
      ...valueHeadNames(state.critic),
      ...(state.criticLora ? loraNames(state.criticLora).map(({ name, param }) => ({ name: `lora.${name}`, param })) : []),
    ]),
  ];
}

export async function encodeOptimizer(gpu: TensorReader, state: TrainState): Promise<Uint8Array> {
  const tensors: TensorToWrite[] = [];
  for (const { name, t } of allOptimTensors(state)) tensors.push(f32(name, t.shape, await gpu.readF32(t)));
  return writeSafetensors(tensors, {
    format: 'marft-adamw',
    stats_layout: JSON.stringify(OPTIMIZER_STATS_LAYOUT),
    policy_groups: String(state.policyOptim.groups.length),
    critic_groups: String(state.criticOptim.groups.length),
  });
}

export function decodeOptimizer(gpu: Gpu, state: TrainState, bytes: Uint8Array, file = OPTIMIZER_FILE): void {
  const all = allOptimTensors(state);
  const { values } = readExactTensors(
    bytes,
    file,
    all.map(({ name, t, legacyShape }) => ({ name, shape: t.shape, legacyShape })),
  );
  for (const { name, t } of all) {
    const v = values.get(name)!;
    const n = numel(t.shape);
    // legacy (8) stats of a slotted optimiser: every slot starts from the one state (its step count too)
    gpu.write(t, v.length === n ? v : Float32Array.from({ length: n }, (_, i) => v[i % v.length]));
  }
}

/** Every tensor a checkpoint reads from the GPU (adapters, value heads, optimiser state): one prefetch covers them. */
export function checkpointTensors(state: TrainState): Tensor[] {
  return [
    ...loraNames(state.policy).map((x) => x.param),
    ...valueHeadNames(state.critic).map((x) => x.param),
    ...(state.criticLora ? loraNames(state.criticLora).map((x) => x.param) : []),
    ...allOptimTensors(state).map((x) => x.t),
  ];
}
