// What each credit method does to a turn's team reward R, in one sentence naming the settings in force:
// the sandbox's paragraph and the Inspect tab's columns (the run's own method and the one compared) say it
// the same way. per_step names each role's helper and says so when they all pay R (then its numbers are
// step_discount's with d = 1).

import type { RunConfig } from '../../config/run-config.ts';
import type { StepRewardName } from '../../config/run-config-schema.ts';
import type { CreditMethod } from '../../worker/api.ts';

export interface MethodSettings {
  method: CreditMethod;
  discount: number;
  rewardSharing: boolean;
  /** Every acting role's per_step helper (the config's, or its fallback). */
  perStep: Record<string, StepRewardName | 'none'>;
  /** The roles in acting order, and the last one of a turn (who gets R under equal). */
  roles: string[];
  last: string;
}

const HELPER: Record<StepRewardName, string> = {
  planner: '0.5·min(plan steps/2, 1) + 0.5·R',
  solver: 'R with a \\boxed{} answer when the team is right (0.1 when wrong, 0 with no answer)',
  verifier: 'R',
  team: 'R',
  coder: 'the share of the tests its own code passes',
  tester: '0.5·min(test cases/2, 1) + 0.5·R',
  reviewer: '1 when its verdict (approve / reject) matches whether the code passed, else 0',
  'plan-check': "the environment's rule check of its plan: 1 for a right plan, else the share of its leading steps that are right",
};

/** The per_step helper of each role under `config` (its perStep entry, else the fallback). */
export function helpersOf(config: RunConfig, roles: readonly string[]): Record<string, StepRewardName | 'none'> {
  return Object.fromEntries(
    roles.map((r) => [r, (config.credit.perStep[r] ?? config.credit.fallback ?? 'none') as StepRewardName | 'none']),
  );
}

/** The settings of `config` for `method`, for an episode whose turns are acted by `roles` (last: the turn's last). */
export function methodSettings(config: RunConfig, method: CreditMethod, roles: string[]): MethodSettings {
  return {
    method,
    discount: config.credit.discount,
    rewardSharing: config.credit.rewardSharing,
    perStep: helpersOf(config, roles),
    roles,
    last: roles[roles.length - 1] ?? 'the last agent',
  };
}

/** One sentence (no final full stop) on where each agent's reward comes from under the method. */
export function explainMethod(m: MethodSettings): string {
  const sharing = m.rewardSharing ? ' (reward sharing is on: every method gives one team reward on the last action, as equal)' : '';
  if (m.method === 'equal' || m.rewardSharing) {
    return `${m.method}${sharing}: each turn's team reward R goes whole to the turn's last action (${m.last}); every earlier agent gets r = 0 and learns of R only through the chain`;
  }
  if (m.method === 'step_discount') {
    return `step_discount: agent i of the turn's N gets R·d^(N−1−i) with d = ${m.discount}, so the last agent gets R and each earlier one a further discounted share${m.discount === 1 ? ' (with d = 1 every agent gets R)' : ''}`;
  }
  const roles = m.roles.length ? m.roles : Object.keys(m.perStep);
  const each = roles
    .map((r) => {
      const h = m.perStep[r] ?? 'team';
      return h === 'none' ? `${r}: no helper` : `${r} (helper ${h}): ${HELPER[h]}`;
    })
    .join('; ');
  const allR = roles.every((r) => m.perStep[r] === 'team' || m.perStep[r] === 'verifier');
  return `per_step: each role's helper turns R into its own reward — ${each}${allR ? ". Every helper here pays R, so the numbers are step_discount's with d = 1; pick the planner or solver helper for a reward of the role's own" : ''}`;
}
