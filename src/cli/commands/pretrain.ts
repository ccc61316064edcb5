// marft pretrain --out DIR [--steps N] [--seed S] [--batch B] [--seq T] [--lr X] [--error-rate P] ...
// Makes the lab's built-in tiny base model: a tokenizer learned on the synthetic coop-arith transcripts,
// a tiny Llama trained from random init on those transcripts (loss on completions only), held-out
// greedy accuracy of the solo and duo teams every --eval-every steps, then a Hugging Face folder in DIR.
// The defaults are the recipe of the built-in model (public/models/marft-tiny, made with --bf16).
// --tasks coop-arith,coop-plan mixes in the coop-plan family (src/pretrain/plan-data.ts), whose duo is
// then evaluated too, with the share of its plans that pass the plan check.

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { acquireNodeGpu } from '../../gpu/node.ts';
import { DEFAULT_PRECEDENCE } from '../../envs/coop.ts';
import { evaluateTeam } from '../../pretrain/eval.ts';
import { PRETRAIN_TEAMS, type PretrainTeam, corpusTexts, tokenizeTranscript } from '../../pretrain/data.ts';
import { type MixOptions, PRETRAIN_TASKS, type PretrainTask, mixedEpisodeTranscripts, mixedTranscripts } from '../../pretrain/plan-data.ts';
import { DEFAULT_TRAP } from '../../envs/coop-plan.ts';
import { parseModelConfig } from '../../model/config.ts';
import {
  DEFAULT_TINY_DIMS,
  Pretrainer,
  type PretrainExample,
  initWeights,
  modelFolderFiles,
  parameterCount,
  pretrain,
  tinyLlamaConfigJson,
} from '../../pretrain/train.ts';
import { buildTinyTokenizer, DEFAULT_TINY_VOCAB, TINY_IDS } from '../../pretrain/tiny-tokenizer.ts';
import { loadTokenizer } from '../../model/tokenizer.ts';
import { LIMITS_FLAG, UsageError, parse, parseLimits, required } from '../args.ts';

export const usage =
  'marft pretrain --out DIR [--steps 4800] [--seed 0] [--batch 32] [--seq 384] [--lr 1e-3] [--error-rate 0.4] [--plan-error-rate 0.3] ' +
  '[--solo-misread-rate 0.95] [--precedence 0.5] [--teams solo,duo[,orchestrated]] [--skip-plan-rate 0.3] ' +
  '[--tasks coop-arith[,coop-plan]] [--trap 0.5] [--trap-plan-rate 0.6] [--plan-wrong-rate 0.1] [--plan-slip-rate 0.3] [--plan-difficulty 2,3] ' +
  '[--layers 6 --hidden 256 --heads 4 --kv-heads 2 --intermediate 688 --max-pos 512 --vocab 512] [--difficulty 1,2,3] [--warmup N] [--weight-decay 0.1] ' +
  '[--log-every 50] [--eval-every 500] [--eval-n 128] [--corpus 4000] [--bf16] [--limits default|adapter]';

const FLAGS = {
  out: { type: 'string' },
  steps: { type: 'string' },
  seed: { type: 'string' },
  batch: { type: 'string' },
  seq: { type: 'string' },
  lr: { type: 'string' },
  'error-rate': { type: 'string' },
  'plan-error-rate': { type: 'string' },
  'solo-misread-rate': { type: 'string' },
  precedence: { type: 'string' },
  teams: { type: 'string' },
  'skip-plan-rate': { type: 'string' },
  tasks: { type: 'string' },
  trap: { type: 'string' },
  'trap-plan-rate': { type: 'string' },
  'plan-wrong-rate': { type: 'string' },
  'plan-slip-rate': { type: 'string' },
  'plan-difficulty': { type: 'string' },
  layers: { type: 'string' },
  hidden: { type: 'string' },
  heads: { type: 'string' },
  'kv-heads': { type: 'string' },
  intermediate: { type: 'string' },
  'max-pos': { type: 'string' },
  vocab: { type: 'string' },
  difficulty: { type: 'string' },
  warmup: { type: 'string' },
  'weight-decay': { type: 'string' },
  'log-every': { type: 'string' },
  'eval-every': { type: 'string' },
  'eval-n': { type: 'string' },
  corpus: { type: 'string' },
  bf16: { type: 'boolean' },
  ...LIMITS_FLAG,
} as const;

function num(
  v: string | boolean | undefined,
  flag: string,
  dflt: number,
  opts: { int?: boolean; min?: number; max?: number } = {},
): number {
  if (v === undefined) return dflt;
  const x = Number(v);
  if (
    typeof v !== 'string' ||
    !Number.isFinite(x) ||
    (opts.int && !Number.isInteger(x)) ||
    (opts.min !== undefined && x < opts.min) ||
    (opts.max !== undefined && x > opts.max)
  ) {
    throw new UsageError(
      `--${flag} must be ${opts.int ? 'an integer' : 'a number'}${opts.min !== undefined ? ` >= ${opts.min}` : ''}${opts.max !== undefined ? ` <= ${opts.max}` : ''}, got "${String(v)}"`,
    );
  }
  return x;
}

/** --teams solo,duo,orchestrated: the teams whose transcripts the corpus mixes (default solo, duo). */
function teamsOf(v: string | boolean | undefined): PretrainTeam[] {
  if (v === undefined) return ['solo', 'duo'];
  const teams = String(v)
    .split(',')
    .map((t) => t.trim());
  const bad = teams.filter((t) => !PRETRAIN_TEAMS.includes(t as PretrainTeam));
  if (typeof v !== 'string' || bad.length || !teams.length)
    throw new UsageError(`--teams must list ${PRETRAIN_TEAMS.join(', ')} (comma-separated), got "${String(v)}"`);
  return teams as PretrainTeam[];
}

/** --tasks coop-arith,coop-plan: the families the corpus mixes (default coop-arith). */
function tasksOf(v: string | boolean | undefined): PretrainTask[] {
  if (v === undefined) return ['coop-arith'];
  const tasks = String(v)
    .split(',')
    .map((t) => t.trim());
  const bad = tasks.filter((t) => !PRETRAIN_TASKS.includes(t as PretrainTask));
  if (typeof v !== 'string' || bad.length || !tasks.length || new Set(tasks).size !== tasks.length)
    throw new UsageError(`--tasks must list ${PRETRAIN_TASKS.join(', ')} (comma-separated, each once), got "${String(v)}"`);
  return tasks as PretrainTask[];
}

const fmtTime = (s: number): string =>
  s >= 3600
    ? `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`
    : s >= 60
      ? `${Math.floor(s / 60)}m${String(Math.round(s % 60)).padStart(2, '0')}s`
      : `${s.toFixed(0)}s`;

export async function pretrainCommand(argv: string[]): Promise<void> {
  const a = parse(argv, FLAGS);
  const out = required(a.out, 'out');
  const int = (f: keyof typeof FLAGS, d: number, min = 1, max?: number): number => num(a[f], f, d, { int: true, min, max });
  const steps = int('steps', 4800);
  const seed = int('seed', 0, 0);
  const B = int('batch', 32);
  const seq = int('seq', 384, 16);
  const lr = num(a.lr, 'lr', 1e-3, { min: 0 });
  const difficulty =
    typeof a.difficulty === 'string'
      ? a.difficulty.split(',').map((x) => num(x.trim(), 'difficulty', 0, { int: true, min: 1, max: 4 }))
      : [1, 2, 3];
  const planDifficulty =
    typeof a['plan-difficulty'] === 'string'
      ? a['plan-difficulty'].split(',').map((x) => num(x.trim(), 'plan-difficulty', 0, { int: true, min: 2, max: 4 }))
      : [2, 3];
  const data: MixOptions = {
    errorRate: num(a['error-rate'], 'error-rate', 0.4, { min: 0, max: 1 }),
    planErrorRate: num(a['plan-error-rate'], 'plan-error-rate', 0.3, { min: 0, max: 1 }),
    soloMisreadRate: num(a['solo-misread-rate'], 'solo-misread-rate', 0.95, { min: 0, max: 1 }),
    precedence: num(a.precedence, 'precedence', DEFAULT_PRECEDENCE, { min: 0, max: 1 }),
    difficulty,
    teams: teamsOf(a.teams),
    skipPlanRate: num(a['skip-plan-rate'], 'skip-plan-rate', 0.3, { min: 0, max: 1 }),
    tasks: tasksOf(a.tasks),
    trap: num(a.trap, 'trap', DEFAULT_TRAP, { min: 0, max: 1 }),
    trapPlanRate: num(a['trap-plan-rate'], 'trap-plan-rate', 0.6, { min: 0, max: 1 }),
    planWrongRate: num(a['plan-wrong-rate'], 'plan-wrong-rate', 0.1, { min: 0, max: 1 }),
    planSlipRate: num(a['plan-slip-rate'], 'plan-slip-rate', 0.3, { min: 0, max: 1 }),
    planDifficulty,
  };
  const withPlan = data.tasks!.includes('coop-plan');
  const dims = {
    layers: int('layers', DEFAULT_TINY_DIMS.layers),
    hidden: int('hidden', DEFAULT_TINY_DIMS.hidden),
    heads: int('heads', DEFAULT_TINY_DIMS.heads),
    kvHeads: int('kv-heads', DEFAULT_TINY_DIMS.kvHeads),
    intermediate: int('intermediate', DEFAULT_TINY_DIMS.intermediate),
    maxPositions: int('max-pos', DEFAULT_TINY_DIMS.maxPositions, 16),
  };
  const vocab = int('vocab', DEFAULT_TINY_VOCAB, 128);
  const evalEvery = int('eval-every', 500, 0);
  const evalN = int('eval-n', 128, 0);
  const logEvery = int('log-every', 50);

  // 1. The tokenizer, learned on transcripts of episodes outside the training stream's seeds.
  const corpus = mixedTranscripts(int('corpus', 4000), 1_000_000_000 + seed, data);
  const tokFiles = buildTinyTokenizer(corpusTexts(corpus), { vocabSize: vocab });
  const tok = loadTokenizer(tokFiles.tokenizerJson, tokFiles.tokenizerConfig);
  const configJson = tinyLlamaConfigJson({ ...dims, vocabSize: vocab, eosTokenId: TINY_IDS.imEnd, padTokenId: TINY_IDS.pad });
  const config = parseModelConfig(configJson);
  console.error(
    `pretrain: tokenizer ${tokFiles.vocabSize} tokens; model ${(parameterCount(config) / 1e6).toFixed(2)}M parameters (L ${dims.layers}, C ${dims.hidden}, NH ${dims.heads}, NKV ${dims.kvHeads}, I ${dims.intermediate}, V ${vocab})`,
  );

  // 2. The training stream: episodes seed*1e7, seed*1e7 + 1, ... (train split), longer ones than --seq skipped.
  const maxT = Math.min(seq, dims.maxPositions);
  let episode = seed * 10_000_000;
  let skipped = 0;
  const queue: PretrainExample[] = [];
  const nextBatch = (): PretrainExample[] => {
    while (queue.length < B) {
      for (const t of mixedEpisodeTranscripts(episode++, data)) {
        const x = tokenizeTranscript(tok, t);
        if (x.ids.length > maxT) skipped++;
        else queue.push(x);
      }
    }
    return queue.splice(0, B);
  };

  const gpu = await acquireNodeGpu({ log: (l) => console.error(l), limits: parseLimits(a.limits) });
  const trainer = new Pretrainer(gpu, config, initWeights(config, seed));
  const teams = ['solo', 'duo'] as const; // the static chains evaluateTeam runs
  const evaluate = async (_d: unknown, _step: number, temperature = 0): Promise<Record<string, number>> => {
    const m: Record<string, number> = {};
    for (const team of teams)
      m[team] = (
        await evaluateTeam(trainer.decoder, tok, { team, n: evalN, temperature, seed: 0, difficulty, precedence: data.precedence })
      ).accuracy;
    if (withPlan) {
      const r = await evaluateTeam(trainer.decoder, tok, {
        team: 'duo',
        task: 'coop-plan',
        n: evalN,
        temperature,
        seed: 0,
        difficulty: planDifficulty,
        trap: data.trap,
      });
      m.planDuo = r.accuracy;
      m.planCheck = r.planAccuracy ?? 0;
    }
    return m;
  };
  const planLine = (m: Record<string, number>): string =>
    withPlan ? `  coop-plan duo ${(m.planDuo * 100).toFixed(1)}% (plans right ${(m.planCheck * 100).toFixed(1)}%)` : '';
  const res = await pretrain(trainer, nextBatch, {
    steps,
    seqLen: maxT,
    lr,
    padId: TINY_IDS.pad,
    logEvery,
    warmup: a.warmup === undefined ? undefined : int('warmup', 0, 0),
    weightDecay: num(a['weight-decay'], 'weight-decay', 0.1, { min: 0 }),
    evalEvery: evalN > 0 ? evalEvery : 0,
    evaluate: evalN > 0 ? (d, s) => evaluate(d, s) : undefined,
    onLog: (p) =>
      console.log(
        `step ${p.step}/${p.steps}  loss ${p.loss.toFixed(4)}  lr ${p.lr.toExponential(2)}  |g| ${p.gradNorm.toFixed(3)}  ${(p.tokensPerSec / 1000).toFixed(1)}k tok/s  elapsed ${fmtTime(p.elapsedSec)}  eta ${fmtTime(p.etaSec)}`,
      ),
    onEval: (s, m) =>
      console.log(
        `eval step ${s}: held-out greedy accuracy (${evalN} test problems) solo ${(m.solo * 100).toFixed(1)}%  duo ${(m.duo * 100).toFixed(1)}%${planLine(m)}`,
      ),
  });
  if (skipped) console.error(`pretrain: ${skipped} transcripts longer than ${maxT} tokens were skipped`);

  // 3. The folder.
  const files = await modelFolderFiles(gpu, trainer.decoder.weights, {
    config: configJson,
    tokenizerJson: tokFiles.tokenizerJson,
    tokenizerConfig: tokFiles.tokenizerConfig,
    dtype: a.bf16 ? 'BF16' : 'F32',
    metadata: { marft_pretrain: argv.join(' '), steps: String(steps), seed: String(seed) },
  });
  await mkdir(out, { recursive: true });
  for (const [name, body] of Object.entries(files)) await writeFile(join(out, name), body);
  if (evalN > 0) {
    const sampled = await evaluate(null, steps, 1);
    const last = res.evals[res.evals.length - 1]?.metrics ?? {};
    console.log(
      `final held-out accuracy (${evalN} test problems): greedy solo ${(last.solo * 100).toFixed(1)}% duo ${(last.duo * 100).toFixed(1)}%${planLine(last)}; sampled (T=1) solo ${(sampled.solo * 100).toFixed(1)}% duo ${(sampled.duo * 100).toFixed(1)}%${planLine(sampled)}`,
    );
  }
  console.log(`wrote ${out} (${Object.keys(files).join(', ')}) after ${fmtTime(res.seconds)}`);
}
