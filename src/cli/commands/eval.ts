// marft eval --checkpoint DIR [--episodes N] [--split test|train] [--sampled] [--seed S]
// marft eval --config FILE --base ...     (the untuned base model: no adapters)
// Held-out accuracy of the team and of each answering agent. Greedy decoding unless --sampled.
// --env-options '{"difficulty": 3}' overrides the environment's options (e.g. a harder level, or coop-arith's
// precedence share) for this evaluation only; the result is checked like any run config.

import { loadCheckpoint, readCheckpointFiles } from '../../marft/checkpoint/checkpoint.ts';
import { type RunConfig, parseRunConfig } from '../../config/run-config.ts';
import { evaluate } from '../../marft/evaluate.ts';
import type { CheckpointSource } from '../../marft/run.ts';
import { LIMITS_FLAG, UsageError, parse, parseLimits } from '../args.ts';
import { checkpointSource, nodeSession, readRunConfig } from '../platform.ts';

export const usage =
  'marft eval (--checkpoint DIR | --config FILE --base) [--episodes N] [--split test|train] [--sampled] [--seed S] [--env-options JSON] [--json] [--limits default|adapter]';

export async function evalCommand(argv: string[]): Promise<void> {
  const a = parse(argv, {
    checkpoint: { type: 'string' },
    config: { type: 'string' },
    base: { type: 'boolean' },
    episodes: { type: 'string' },
    split: { type: 'string' },
    sampled: { type: 'boolean' },
    seed: { type: 'string' },
    json: { type: 'boolean' },
    'env-options': { type: 'string' },
    ...LIMITS_FLAG,
  });
  const limits = parseLimits(a.limits);
  if (!a.checkpoint && !a.base) throw new UsageError('give --checkpoint DIR, or --base to evaluate the untuned model');
  const log = (l: string) => console.error(l);
  let config: RunConfig;
  let ckpt: CheckpointSource | null = null;
  if (typeof a.checkpoint === 'string') {
    ckpt = checkpointSource(a.checkpoint);
    config = parseRunConfig(new TextDecoder().decode((await readCheckpointFiles(ckpt.store, ckpt.dir)).files['config.json']));
  } else {
    config = readRunConfig(a.config as string | undefined);
  }
  if (typeof a['env-options'] === 'string') {
    let extra: unknown;
    try {
      extra = JSON.parse(a['env-options']);
    } catch (e) {
      throw new UsageError(`--env-options must be a JSON object, got ${a['env-options']} (${(e as Error).message})`);
    }
    if (!extra || typeof extra !== 'object' || Array.isArray(extra))
      throw new UsageError(`--env-options must be a JSON object, got ${a['env-options']}`);
    config = parseRunConfig({ ...config, env: { ...config.env, options: { ...config.env.options, ...extra } } });
  }
  const split = typeof a.split === 'string' ? a.split : 'test';
  if (split !== 'test' && split !== 'train') throw new UsageError(`--split must be test or train, got ${split}`);
  const episodes = typeof a.episodes === 'string' ? Number(a.episodes) : 100;
  if (!Number.isInteger(episodes) || episodes < 1) throw new UsageError(`--episodes must be a positive integer, got ${a.episodes}`);
  const m = await nodeSession(log, limits).load(config.model.path);
  const state = ckpt ? await loadCheckpoint(m.gpu, ckpt.store, ckpt.dir, m.model) : null;
  const result = await evaluate(m.decoder, m.tokenizer, config, state, {
    envs: m.envs,
    episodes,
    split,
    sampled: Boolean(a.sampled),
    seed: typeof a.seed === 'string' ? Number(a.seed) : undefined,
  });
  const agents = result.agents;
  if (a.json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else
    console.log(
      `${result.split} accuracy (${result.mode}, ${episodes} episodes): ${(result.accuracy * 100).toFixed(1)}% | ${Object.entries(agents)
        .map(([r, x]) => `${r} ${(x * 100).toFixed(1)}%`)
        .join(
          ' | ',
        )}${judgedText(result.judged)}${config.graph.dynamic ? ` | calls per episode: ${callsText(result.calls)}` : ''} | ${result.generatedTokens} tokens in ${result.seconds.toFixed(1)} s`,
    );
}

/** " | planner judged right 45.0%" for each judged role (coop-plan's plan check), else ''. */
const judgedText = (judged: Record<string, number>): string =>
  Object.entries(judged)
    .map(([r, x]) => ` | ${r} judged right ${(x * 100).toFixed(1)}%`)
    .join('');

const callsText = (calls: Record<string, number>): string =>
  Object.entries(calls)
    .map(([r, x]) => `${r} ${x.toFixed(2)}`)
    .join(', ');
