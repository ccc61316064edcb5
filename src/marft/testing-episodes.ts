// Test helpers for the CPU side of an iteration (credit, advantages, the inspector): finished episodes
// and their scores written by hand, so a test can give computeTargets hand-worked numbers without a model.

import { presetGraph } from '../config/presets.ts';
import { type RunConfig, parseRunConfig } from '../config/run-config.ts';
import type { ActionRecord, EpisodeRecord } from './rollout.ts';
import type { ActionScores } from './score.ts';

/** The duo graph (planner -> solver) at `level`, with gamma and lambda; other settings are the defaults. */
export function duoConfig(level: 'action' | 'token', gamma: number, lambda: number): RunConfig {
  return parseRunConfig({ graph: presetGraph('duo'), level, ppo: { gamma, lambda } });
}

export interface HandAction {
  agent: number;
  /** Critic values: one per token at token level, one (V of the action) at action level. */
  values: number[];
  /** Token ids; default one per value. */
  ids?: number[];
}

export interface HandTurn {
  teamReward: number;
  actions: HandAction[];
}

/**
 * A finished episode of `turns` and its scores: values as given, old log-probs -0.9 under behaviour -1
 * (ratio e^0.1), no reference log-probs, entropy 1; token k reads as "t<id>" and an action as its ids.
 */
export function handEpisode(
  config: RunConfig,
  turns: HandTurn[],
  index = 0,
): { episode: EpisodeRecord; scores: Map<ActionRecord, ActionScores> } {
  const scores = new Map<ActionRecord, ActionScores>();
  const actions = turns.flatMap((t, turn) =>
    t.actions.map((h) => {
      const ids = h.ids ?? h.values.map((_, k) => 5 + k);
      const a: ActionRecord = {
        episode: index,
        turn,
        agent: h.agent,
        role: config.graph.agents[h.agent].role,
        promptIds: [1],
        actionIds: ids,
        behaviourLogp: ids.map(() => -1),
        text: ids.join(' '),
        finish: 'length',
        truncated: 0,
      };
      scores.set(a, { oldLogp: ids.map(() => -0.9), refLogp: [], entropy: ids.map(() => 1), values: h.values, criticRow: 0 });
      return a;
    }),
  );
  const last = turns[turns.length - 1];
  const episode: EpisodeRecord = {
    index,
    seed: 1,
    task: '2+2',
    info: {},
    actions,
    done: true,
    correct: last.teamReward > 0,
    turns: turns.map((t) => ({
      teamReward: t.teamReward,
      correct: t.teamReward > 0,
      feedback: t.teamReward > 0 ? 'judge: correct' : 'judge: the answer is incorrect',
      answers: {},
    })),
  };
  return { episode, scores };
}

/** An action of a planner (agent 0) or solver (agent 1) with its prompt and action ids; behaviour log-probs 0. */
export const handAction = (episode: number, agent: number, promptIds: number[], actionIds: number[]): ActionRecord => ({
  episode,
  turn: 0,
  agent,
  role: agent === 0 ? 'planner' : 'solver',
  promptIds,
  actionIds,
  behaviourLogp: actionIds.map(() => 0),
  text: 'x',
  finish: 'stop',
  truncated: 0,
});

/** Two episodes of planner -> solver, as the critic and readback tests score them. */
export const twoEpisodes = (): ActionRecord[] => [
  handAction(0, 0, [5, 9, 12, 7], [20, 21]),
  handAction(0, 1, [5, 9, 3, 20, 21, 8], [14, 15, 16]),
  handAction(1, 0, [5, 9, 12, 11], [22]),
  handAction(1, 1, [5, 9, 4, 22, 8], [17, 18]),
];
