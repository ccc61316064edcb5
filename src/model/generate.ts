// Batched generation with a KV cache and GPU sampling. Prompts are left-padded to one length and
// prefilled together; each step samples one token per sequence on the GPU, feeds it straight back as the
// next input, and detects on the GPU which sequences ended (stop token or limit; kernels/generation). The
// only readbacks are the tokens, log-probs and those ends, every `syncEvery` steps, to cut each sequence,
// check stop strings (they need the text; finished sequences idle until all are done) and hand the tokens
// accepted so far to a viewer that streams them (onTokens; a small syncEvery looks live).
// A readback's submit sends its chunk of steps to the GPU, and the readback is consumed one chunk later, so
// the GPU runs a chunk while the CPU encodes the next (a batch runs up to 2 syncEvery steps past its end).
// Submitting every step instead was no faster on an H200 (BENCHMARKS.md). The first decode step (forward,
// sampling, appends, bookkeeping) is recorded and replayed as the later ones (Gpu recordings), so a step
// costs the CPU three calls a dispatch, and no buffer, uniform or copy.
// A batch whose prefill would pass MAX_PREFILL_TOKENS runs as consecutive sub-batches: one prefill over
// all of it would exceed the 65535-workgroups-per-dimension limit of row-per-workgroup kernels (and
// memory); per-sequence RNG streams keep sampled results the same whatever the split.

import { type StepTensors, advanceStep } from '../../kernels/generation/generation.ts';
import { kvAppend } from '../../kernels/kvcache/kvcache.ts';
import { type SamplingRow, sampleTokens, uploadSamplingSettings } from '../../kernels/sampling/sampling.ts';
import { shapeError } from '../gpu/errors.ts';
import type { Recording } from '../gpu/recording.ts';
import { type Tensor, view } from '../gpu/tensor.ts';
import { defaultPositions } from './batch.ts';
import type { Decoder } from './decoder.ts';
import { createKvCache, releaseKvCache } from './kv-cache.ts';
import type { LoraSet } from './lora-set.ts';

export interface GenerateOptions {
  /** New tokens per sequence (one number for all, or one per sequence). */
  maxNewTokens: number | readonly number[];
  /** Sampling settings per sequence (temperature 0 = greedy), or one for all. */
  sampling: SamplingRow | readonly SamplingRow[];
  /** The LoRA adapters `slots` index. Default: none. */
  adapters?: LoraSet | null;
  /** Adapter slot per sequence (-1 = base model). Default all -1. */
  slots?: readonly number[];
  seed: number;
  /** RNG stream per sequence (e.g. a global episode index), so results do not depend on batch layout. */
  streams?: readonly number[];
  /** Token ids that end a sequence (kept in its output, as transformers does). */
  stopTokens?: readonly number[];
  /** Strings that end a sequence; needs `decode`. The text is cut before the string. */
  stopStrings?: readonly string[];
  decode?: (ids: number[]) => string;
  padId?: number;
  /** Read back every this many steps (default 8). */
  syncEvery?: number;
  /** Most prompt tokens (padded) per prefill; larger batches run as sub-batches. Default MAX_PREFILL_TOKENS. */
  maxPrefillTokens?: number;
  /** Called after each readback with the number of steps done. */
  onProgress?: (steps: number, maxSteps: number) => void;
  /**
   * Called after each readback with each sequence's tokens accepted since the last one (possibly none), so
   * a viewer can stream them: their concatenation is the sequence's final `tokens`, in order.
   */
  onTokens?: (fresh: number[][]) => void;
  /** Called before every decode step; what it throws abandons the generation (a training run paused or stopped). */
  interrupt?: () => void;
}

export interface Generation {
  tokens: number[][];
  /** Log-prob of each generated token under the sampling distribution used (0 for greedy). */
  logprobs: number[][];
  text: string[] | null;
  finish: Array<'stop_token' | 'stop_string' | 'length'>;
}

/** Most prompt tokens (padded) prefilled in one forward pass. */
export const MAX_PREFILL_TOKENS = 32768;

export async function generate(dec: Decoder, prompts: readonly number[][], opts: GenerateOptions): Promise<Generation> {
  const Tp = Math.max(0, ...prompts.map((p) => p.length));
  const chunk = Math.max(1, Math.floor((opts.maxPrefillTokens ?? MAX_PREFILL_TOKENS) / Math.max(1, Tp)));
  if (prompts.length <= chunk) return generateBatch(dec, prompts, opts);
  const B = prompts.length;
  const pick = <T>(v: T | readonly T[], a: number, b: number): T | readonly T[] => (Array.isArray(v) ? (v as readonly T[]).slice(a, b) : v);
  const streams = opts.streams ?? Array.from({ length: B }, (_, i) => i);
  if (streams.length !== B) shapeError('generate', `streams has ${streams.length} entries for ${B} prompts`);
  const out: Generation = { tokens: [], logprobs: [], text: opts.decode ? [] : null, finish: [] };
  const parts = Math.ceil(B / chunk);
  for (let k = 0; k < parts; k++) {
    const [a, b] = [k * chunk, Math.min(B, (k + 1) * chunk)];
    const part = await generateBatch(dec, prompts.slice(a, b), {
      ...opts,
      maxNewTokens: pick(opts.maxNewTokens, a, b),
      sampling: pick(opts.sampling, a, b),
      slots: opts.slots?.slice(a, b),
      streams: streams.slice(a, b),
      onProgress: opts.onProgress && ((steps, max) => opts.onProgress!(k * max + steps, parts * max)),
      onTokens: opts.onTokens && ((fresh) => opts.onTokens!(Array.from({ length: B }, (_, i) => (i >= a && i < b ? fresh[i - a] : [])))),
    });
    out.tokens.push(...part.tokens);
    out.logprobs.push(...part.logprobs);
    out.text?.push(...part.text!);
    out.finish.push(...part.finish);
  }
  return out;
}

async function generateBatch(dec: Decoder, prompts: readonly number[][], opts: GenerateOptions): Promise<Generation> {
  const g = dec.gpu;
  const B = prompts.length;
  if (B === 0) return { tokens: [], logprobs: [], text: opts.decode ? [] : null, finish: [] };
  const per = <T>(v: T | readonly T[], name: string): T[] => {
    const arr = Array.isArray(v) ? [...(v as readonly T[])] : Array.from({ length: B }, () => v as T);
    if (arr.length !== B) shapeError('generate', `${name} has ${arr.length} entries for ${B} prompts`);
    return arr;
  };
  const limits = per(opts.maxNewTokens, 'maxNewTokens');
  const sampling = per(opts.sampling, 'sampling');
  const slots = Int32Array.from(opts.slots ?? new Array(B).fill(-1));
  if (prompts.some((p) => p.length === 0)) shapeError('generate', 'every prompt needs at least one token');
  if (opts.stopStrings?.length && !opts.decode) shapeError('generate', 'stopStrings need a decode function');
  const maxNew = Math.max(...limits);
  const Tp = Math.max(...prompts.map((p) => p.length));
  if (Tp + maxNew > dec.config.maxPositionEmbeddings) {
    shapeError('generate', `prompt (${Tp}) + new tokens (${maxNew}) exceed max_position_embeddings ${dec.config.maxPositionEmbeddings}`);
  }
  // left padding
  const pad = opts.padId ?? dec.config.padTokenId ?? 0;
  const ids = new Int32Array(B * Tp).fill(pad);
  const mask = new Int32Array(B * Tp);
  prompts.forEach((p, b) =>
    p.forEach((id, i) => {
      ids[b * Tp + Tp - p.length + i] = id;
      mask[b * Tp + Tp - p.length + i] = 1;
    }),
  );
  const cache = createKvCache(g, dec.config, B, Tp + maxNew, mask, Tp);
  const settings = uploadSamplingSettings(g, sampling, opts.streams);
  const token = g.tensor([B], 'i32', 'gen.token');
  const logprob = g.tensor([B], 'f32', 'gen.logprob');
  const allTokens = g.tensor([B, maxNew, 1], 'i32', 'gen.tokens');
  const allLogprobs = g.tensor([B, maxNew, 1], 'f32', 'gen.logprobs');
  const stopIds = [...new Set(opts.stopTokens ?? [])];
  // The step's state on the GPU (kernels/generation): the step counter the sampling and the token appends
  // read, the next forward's positions and cache length, and which sequences ended (stop token or limit),
  // all written by one `advance` after each sampling; nothing per step goes through the uniforms or the queue.
  const s: StepTensors = {
    step: g.upload([0], [1], 'i32', 'gen.step'),
    len: g.tensor([1], 'i32', 'kv.length'),
    pos: g.tensor([B], 'i32', 'gen.pos'),
    kept: g.upload(
      Int32Array.from({ length: B + 1 }, (_, b) => (b < B && limits[b] <= 0 ? 0 : -1)),
      [B + 1],
      'i32',
      'gen.kept',
    ),
    plen: g.upload(
      prompts.map((p) => p.length),
      [B],
      'i32',
      'gen.plen',
    ),
    limit: g.upload(limits, [B], 'i32', 'gen.limit'),
    stops: g.upload(stopIds.length ? stopIds : [0], [Math.max(1, stopIds.length)], 'i32', 'gen.stops'),
    NS: stopIds.length,
    Tp,
  };
  const slotsGpu = g.upload(slots, [B], 'i32', 'gen.slots');
  // A decode step (its forward, the sampling and the bookkeeping) is recorded once and replayed as every later
  // one (Gpu.replay; Decoder.replaysDecode): its kernels read the step, positions and cache length from `s`.
  const replay = dec.replaysDecode;
  let rec: Recording | null = null;
  const out: Generation = {
    tokens: prompts.map(() => []),
    logprobs: prompts.map(() => []),
    text: opts.decode ? prompts.map(() => '') : null,
    finish: prompts.map(() => 'length'),
  };
  const done = new Array<boolean>(B).fill(false);
  const syncEvery = Math.max(1, opts.syncEvery ?? 8);
  /**
   * Takes the tokens of steps [from, to) out of a readback: each sequence's up to the count the GPU kept
   * (kept: -1 while it runs), then the stop strings, which need the text.
   */
  const accept = (toks: Int32Array, lps: Float32Array, kept: Int32Array, from: number, to: number): void => {
    const before = out.tokens.map((t) => t.length);
    for (let b = 0; b < B; b++) {
      const end = kept[b] < 0 ? to : Math.min(to, kept[b]);
      for (let i = from; i < end && !done[b]; i++) {
        const t = toks[b * maxNew + i];
        out.tokens[b].push(t);
        out.logprobs[b].push(lps[b * maxNew + i]);
        // the GPU's end at a stop token comes before a stop string the same token completes; at the limit, after
        const last = i === kept[b] - 1;
        if (last && stopIds.includes(t)) {
          done[b] = true;
          out.finish[b] = 'stop_token';
          break;
        }
        if (opts.stopStrings?.length) {
          const text = opts.decode!(out.tokens[b]);
          if (opts.stopStrings.some((x) => text.includes(x))) {
            done[b] = true;
            out.finish[b] = 'stop_string';
          }
        }
        if (last) done[b] = true;
      }
      if (kept[b] === 0) done[b] = true; // a limit of 0
    }
    opts.onTokens?.(out.tokens.map((t, b) => t.slice(before[b])));
    opts.onProgress?.(to, maxNew);
  };
  const unpin = dec.pinAdapters(opts.adapters);
  // Readbacks in flight, each with the step it reads up to: a chunk is consumed one chunk later (the last
  // at once), so the CPU encodes the next steps while one comes back and the GPU never waits for it.
  const inflight: Array<{ p: Promise<[Int32Array, Float32Array, Int32Array]>; to: number }> = [];
  let read = 0;
  let st: ReturnType<Decoder['forward']> | null = null;
  const adapters = opts.adapters;
  /** Samples step s.step's tokens from `logits`, appends them and their log-probs, and advances the state. */
  const sample = (logits: Tensor, step: number): void => {
    sampleTokens(g, token, logprob, logits, settings, opts.seed >>> 0, 0, { stepGpu: s.step });
    kvAppend(g, allTokens, view(token, [B, 1, 1]), step, s.step);
    kvAppend(g, allLogprobs, view(logprob, [B, 1, 1]), step, s.step);
    advanceStep(g, s, token);
  };
  /** A decode step: the forward of the last sampled tokens, then the next sampling. */
  const decodeStep = (step: number) => {
    const f = dec.forward(
      { B, T: 1, ids: new Int32Array(0), idsGpu: token, posGpu: s.pos, slotsGpu, adapters, slots },
      { cache, logits: 'last' },
    );
    sample(f.logits!, step);
    return f;
  };
  try {
    st = dec.forward({ B, T: Tp, ids, mask, pos: defaultPositions(B, Tp, mask), adapters, slots }, { cache, logits: 'last' });
    if (replay) cache.lengthGpu = s.len;
    for (let step = 0; step < maxNew && !done.every(Boolean); step++) {
      opts.interrupt?.();
      if (step === 0) {
        sample(st!.logits!, 0); // the prefill's
        dec.release(st!);
        st = null;
      } else if (rec) {
        g.replay(rec);
        cache.length += 1;
      } else if (replay) {
        g.startRecording();
        try {
          st = decodeStep(step);
        } finally {
          rec = g.stopRecording();
        } // it keeps its forward's outputs: the replays write them
      } else {
        dec.release(decodeStep(step));
      }
      const last = step === maxNew - 1;
      if (last || (step + 1) % syncEvery === 0) {
        inflight.push({ p: g.readMany([allTokens, allLogprobs, s.kept]) as Promise<[Int32Array, Float32Array, Int32Array]>, to: step + 1 });
        while (inflight.length > (last ? 0 : 1) && !done.every(Boolean)) {
          const { p, to } = inflight.shift()!;
          const [toks, lps, kept] = await p;
          accept(toks, lps, kept, read, to);
          read = to;
        }
      }
    }
  } finally {
    if (st) dec.release(st);
    rec?.dispose();
    for (const { p } of inflight) void p.catch(() => undefined); // not needed any more (done, or a failure on the way)
    unpin();
    releaseKvCache(g, cache);
    g.release(token, logprob, allTokens, allLogprobs, slotsGpu, s.step, s.len, s.pos, s.kept, s.plen, s.limit, s.stops);
    g.release(settings.temperature, settings.topK, settings.topP, settings.streams);
  }
  if (out.text) {
    out.text = out.tokens.map((t, b) => {
      let text = opts.decode!(t);
      if (out.finish[b] === 'stop_string') {
        const cut = Math.min(...opts.stopStrings!.map((s) => text.indexOf(s)).filter((i) => i >= 0));
        text = text.slice(0, cut);
      }
      return text;
    });
  }
  return out;
}
