// The multi-LoRA parameters: for each layer and target module, the adapters of all S slots stacked in
// one buffer, so one dispatch serves a batch that mixes agents (each sequence carries its slot; -1 = none).
//   A (S, R, IN), B (S, OUT, R) f32, the PEFT layouts lora_A.weight [R, in] and lora_B.weight [out, R] per slot.
// Gradients dA, dB share the layout. Initialisation follows PEFT: A ~ kaiming-uniform(a=sqrt 5), i.e.
// U(-1/sqrt(in), 1/sqrt(in)), and B = 0, so a fresh adapter leaves the model unchanged.

import type { Gpu } from '../gpu/gpu.ts';
import type { TensorReader } from '../gpu/prefetch.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { LINEAR_MODULES, type LinearModule, type ModelConfig, linearDims } from './config.ts';
import { fail } from './errors.ts';
import { type LoraConfig, type PeftAdapter, loraScale } from './peft.ts';
import { Rng } from '../common/rng.ts';

export interface LoraSpec {
  r: number;
  alpha: number;
  targets: LinearModule[];
  /** Number of adapter slots (agents in per-agent mode, 1 in shared mode). */
  slots: number;
  useRslora?: boolean;
}

export interface LoraParam {
  A: Tensor; // (S, R, IN)
  B: Tensor; // (S, OUT, R)
  dA: Tensor;
  dB: Tensor;
}

export interface LoraSet {
  spec: LoraSpec;
  scale: number;
  layers: Array<Partial<Record<LinearModule, LoraParam>>>;
}

function checkSpec(spec: LoraSpec): void {
  if (!Number.isInteger(spec.r) || spec.r < 1) fail('PEFT_INVALID', 'lora', `r must be a positive integer, got ${spec.r}`);
  if (!Number.isInteger(spec.slots) || spec.slots < 1) fail('PEFT_INVALID', 'lora', `slots must be a positive integer, got ${spec.slots}`);
  if (!spec.targets.length) fail('PEFT_INVALID', 'lora', 'target modules are empty');
  for (const t of spec.targets) if (!LINEAR_MODULES.includes(t)) fail('PEFT_INVALID', 'lora', `unknown target module "${t}"`);
}

/** Allocates the stacked adapters, every slot initialised as PEFT does from `seed` (slot s from fork s). */
export function createLoraSet(gpu: Gpu, config: ModelConfig, spec: LoraSpec, seed: number): LoraSet {
  checkSpec(spec);
  const { r: R, slots: S } = spec;
  const rng = new Rng(seed);
  const layers: LoraSet['layers'] = [];
  for (let l = 0; l < config.numLayers; l++) {
    const layer: Partial<Record<LinearModule, LoraParam>> = {};
    for (const m of spec.targets) {
      const { in: IN, out: OUT } = linearDims(config, m);
      const bound = 1 / Math.sqrt(IN);
      const a = new Float32Array(S * R * IN);
      for (let s = 0; s < S; s++) {
        const r = rng.fork(`${l}.${m}.${s}`);
        for (let i = 0; i < R * IN; i++) a[s * R * IN + i] = r.uniform(-bound, bound);
      }
      const name = `layers.${l}.${m}`;
      layer[m] = {
        A: gpu.upload(a, [S, R, IN], 'f32', `${name}.lora_A`),
        B: gpu.zeros([S, OUT, R], 'f32', `${name}.lora_B`),
        dA: gpu.zeros([S, R, IN], 'f32', `${name}.lora_A.grad`),
        dB: gpu.zeros([S, OUT, R], 'f32', `${name}.lora_B.grad`),
      };
    }
    layers.push(layer);
  }
  return { spec, scale: loraScale({ r: R, loraAlpha: spec.alpha, useRslora: spec.useRslora ?? false }), layers };
}

export function loraParams(set: LoraSet): Array<{ param: Tensor; grad: Tensor }> {
  return set.layers.flatMap((layer) =>
    Object.values(layer).flatMap((p) => [
      { param: p.A, grad: p.dA },
      { param: p.B, grad: p.dB },
    ]),
  );
}

export function releaseLoraSet(gpu: Gpu, set: LoraSet): void {
  for (const { param, grad } of loraParams(set)) gpu.release(param, grad);
}

/** Writes a PEFT adapter into one slot. Its rank, alpha and targets must match the set's. */
export function setLoraSlot(gpu: Gpu, set: LoraSet, slot: number, adapter: PeftAdapter): void {
  const { spec } = set;
  const c = adapter.config;
  if (slot < 0 || slot >= spec.slots) fail('PEFT_INVALID', 'lora', `slot ${slot} is outside 0..${spec.slots - 1}`);
  if (c.r !== spec.r) fail('PEFT_INVALID', 'adapter_config.json', `r is ${c.r}, the run uses r = ${spec.r}`);
  if (loraScale(c) !== set.scale)
    fail('PEFT_INVALID', 'adapter_config.json', `scale alpha/r is ${loraScale(c)}, the run uses ${set.scale}`);
  set.layers.forEach((layer, l) => {
    for (const m of spec.targets) {
      const p = layer[m]!;
      const src = adapter.layers[l]?.[m];
      const [, R, IN] = p.A.shape;
      const OUT = p.B.shape[1];
      // A module the adapter does not carry (or a layer outside layers_to_transform) is a zero adapter.
      const a = src?.A ?? new Float32Array(R * IN);
      const b = src?.B ?? new Float32Array(OUT * R);
      if (a.length !== R * IN || b.length !== OUT * R) {
        fail(
          'PEFT_INVALID',
          'adapter_model.safetensors',
          `layer ${l} ${m}: lora_A has ${a.length} values (want ${R * IN}), lora_B ${b.length} (want ${OUT * R})`,
        );
      }
      gpu.write(p.A, a, slot * R * IN * 4);
      gpu.write(p.B, b, slot * OUT * R * 4);
    }
    for (const m of Object.keys(adapter.layers[l] ?? {}) as LinearModule[]) {
      if (!spec.targets.includes(m)) fail('PEFT_INVALID', 'adapter_config.json', `the adapter targets ${m}, which this run does not`);
    }
  });
}

/** Reads one slot back as a PEFT adapter (for export and checkpoints). */
export async function getLoraSlot(gpu: TensorReader, set: LoraSet, slot: number, base: string | null = null): Promise<PeftAdapter> {
  const { spec } = set;
  const config: LoraConfig = {
    r: spec.r,
    loraAlpha: spec.alpha,
    targetModules: [...spec.targets],
    loraDropout: 0,
    useRslora: spec.useRslora ?? false,
    baseModelNameOrPath: base,
    layersToTransform: null,
  };
  const layers = [];
  for (const layer of set.layers) {
    const out: PeftAdapter['layers'][number] = {};
    for (const m of spec.targets) {
      const p = layer[m]!;
      const [, R, IN] = p.A.shape;
      const OUT = p.B.shape[1];
      const a = (await gpu.readF32(p.A)).slice(slot * R * IN, (slot + 1) * R * IN);
      const b = (await gpu.readF32(p.B)).slice(slot * OUT * R, (slot + 1) * OUT * R);
      out[m] = { A: a, B: b };
    }
    layers.push(out);
  }
  return { config, layers };
}
