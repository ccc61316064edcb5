// The bundled demo run (public/demo/, made by scripts/make-demo-run.ts): a short real run of the duo preset,
// shipped as its latest checkpoint zip (the run config, adapters, critic and the whole metric history in
// state.json) and this record of its last iteration for Inspect. The record keeps what the inspector showed
// for each episode under every credit method, computed by inspectEpisode from the trainer's own scores and
// targets at record time, so opening the demo needs no GPU and shows the numbers the update used.

import type { RunConfig } from '../config/run-config.ts';
import type { CreditMethod } from './credit.ts';
import { MarftError } from './errors.ts';
import { type InspectInput, type InspectedEpisode, inspectEpisode } from './inspect.ts';
import type { EpisodeSummary } from './run-events.ts';

/** The demo's run folder in the lab's storage; read-only there (continuing it trains a copy). */
export const DEMO_RUN_ID = 'demo-duo';
/** The files under public/demo/. */
export const DEMO_CHECKPOINT_FILE = 'checkpoint.zip';
export const DEMO_EPISODES_FILE = 'episodes.json';

const FORMAT = 'marft-lab-demo-episodes';
const METHODS: readonly CreditMethod[] = ['equal', 'step_discount', 'per_step'];

export interface DemoEpisodes {
  format: typeof FORMAT;
  version: 1;
  iteration: number;
  /** The run's own credit method (what Inspect shows first). */
  method: CreditMethod;
  /** What the Inspect tab lists (the run's IterationEvent episodes). */
  episodes: EpisodeSummary[];
  /** Per credit method the run's config supports, every episode as inspectEpisode gives it. */
  inspected: Partial<Record<CreditMethod, InspectedEpisode[]>>;
}

/**
 * The record of an iteration: the summaries and every episode inspected under each credit method that works
 * on this run (per_step needs a reward function per role: a method computeTargets refuses is left out).
 */
export function recordDemoEpisodes(input: InspectInput, episodes: EpisodeSummary[]): DemoEpisodes {
  const inspected: DemoEpisodes['inspected'] = {};
  for (const m of METHODS) {
    try {
      inspected[m] = input.episodes.map((_, e) => inspectEpisode(input, e, m));
    } catch (e) {
      if (m === input.config.credit.method || !(e instanceof MarftError && e.code === 'CREDIT')) throw e;
    }
  }
  return { format: FORMAT, version: 1, iteration: input.iteration, method: input.config.credit.method, episodes, inspected };
}

/** Parses public/demo/episodes.json; anything else is DEMO_INVALID naming what is wrong. */
export function parseDemoEpisodes(text: string): DemoEpisodes {
  let v: Partial<DemoEpisodes>;
  try {
    v = JSON.parse(text) as Partial<DemoEpisodes>;
  } catch (e) {
    throw new MarftError('DEMO_INVALID', `${DEMO_EPISODES_FILE} is not JSON (${(e as Error).message})`);
  }
  if (v?.format !== FORMAT || v.version !== 1)
    throw new MarftError('DEMO_INVALID', `${DEMO_EPISODES_FILE} is not a version 1 ${FORMAT} file`);
  if (
    !Number.isInteger(v.iteration) ||
    !METHODS.includes(v.method as CreditMethod) ||
    !Array.isArray(v.episodes) ||
    typeof v.inspected !== 'object' ||
    v.inspected === null
  ) {
    throw new MarftError('DEMO_INVALID', `${DEMO_EPISODES_FILE} lacks its iteration, credit method, episodes or inspected episodes`);
  }
  for (const [m, list] of Object.entries(v.inspected)) {
    if (!METHODS.includes(m as CreditMethod) || !Array.isArray(list) || list.length !== v.episodes.length) {
      throw new MarftError(
        'DEMO_INVALID',
        `${DEMO_EPISODES_FILE}: inspected.${m} is not a credit method with one entry per episode (${v.episodes.length})`,
      );
    }
  }
  return v as DemoEpisodes;
}

/** Episode `episode` of the record as the inspector shows it under `method` (default: the run's own). */
export function demoInspect(d: DemoEpisodes, episode: number, method: CreditMethod = d.method): InspectedEpisode {
  const list = d.inspected[method];
  if (!list)
    throw new MarftError(
      'CREDIT',
      `the demo run was recorded without credit "${method}" (it needs a reward function per role); pick another method`,
    );
  const ep = list[episode];
  if (!ep)
    throw Object.assign(new Error(`episode ${episode} is not in the demo's iteration (0..${list.length - 1})`), { code: 'INSPECT_RANGE' });
  return ep;
}

/**
 * The record's episodes in the recorded-episodes format (what the Inspect tab downloads and the credit
 * sandbox opens), read back from the run's own method: each action's token count, text and critic values
 * (one per action or per token, as `config` asks), and the log-probs where a KL penalty joins the rewards.
 */
export function demoEpisodesJsonl(d: DemoEpisodes, config: RunConfig): string {
  const list = d.inspected[d.method];
  if (!list) throw new MarftError('DEMO_INVALID', `${DEMO_EPISODES_FILE} lacks the run's own credit method "${d.method}"`);
  const withKl = config.algo === 'ppo' && config.ppo.klIn === 'reward' && config.ppo.klCoef > 0;
  return (
    list
      .map((ep) =>
        JSON.stringify({
          id: `e${ep.index}`,
          ...(config.algo === 'grpo' ? { group: `g${Math.floor(ep.index / config.rollout.groupSize)}` } : {}),
          turns: ep.teamRewards.map((reward, t) => ({
            reward,
            actions: ep.actions
              .filter((a) => a.turn === t)
              .map((a) => {
                const values = a.tokens.map((k) => k.value ?? 0);
                const critic = config.algo === 'grpo' ? {} : config.level === 'action' ? { value: values[0] } : { values };
                const kl = withKl ? { logp: a.tokens.map((k) => k.oldLogp), refLogp: a.tokens.map((k) => k.oldLogp - (k.kl ?? 0)) } : {};
                return { role: a.role, tokens: a.tokens.length, ...critic, ...kl, text: a.text };
              }),
          })),
        }),
      )
      .join('\n') + '\n'
  );
}
