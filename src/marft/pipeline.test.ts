// The CPU pieces together on one scripted episode: graph -> prompts -> environment -> credit -> GAE.
import { describe, expect, it } from 'vitest';
import { createEnv } from '../envs/registry.ts';
import type { Env } from '../envs/types.ts';
import { gae, tokenLevelGae } from './advantages.ts';
import { assignCredit } from './credit.ts';
import { compileGraph } from '../config/graph.ts';
import { presetGraph } from '../config/presets.ts';
import { buildMessages, type AgentOutput, type PastTurn } from './prompt.ts';

describe('a scripted duo episode', () => {
  it('flows from prompts to advantages', () => {
    const g = compileGraph(presetGraph('duo'));
    const env = createEnv('arithmetic', { difficulty: 1 }) as Env;
    const { observation, info } = env.reset(11);
    const history: PastTurn[] = [];
    const rewards: number[][] = [];
    const scripted = ['\\boxed{-99999}', `\\boxed{${info.answer}}`]; // wrong on turn 1, right on turn 2
    let done = false;
    for (let turn = 0; !done; turn++) {
      const outputs: AgentOutput[] = [];
      for (const role of g.order) {
        const visible = outputs.filter((o) => g.ancestors(role).includes(o.role));
        const messages = buildMessages({ profile: g.profile(role), task: observation.task, visible, history });
        expect(messages[0].role).toBe('system');
        if (role === 'solver') expect(messages[messages.length - 1].content).toContain('planner: 1. do it');
        if (turn === 1) expect(messages.some((m) => m.content.includes('judge: the answer is incorrect'))).toBe(true);
        outputs.push({ role, text: role === 'planner' ? '1. do it' : scripted[turn] });
      }
      const step = env.step(Object.fromEntries(outputs.map((o) => [o.role, o.text])), { answerRoles: g.answerers });
      rewards.push(assignCredit(step.teamReward, outputs, { method: 'equal' }));
      history.push({ outputs, feedback: step.feedback });
      done = step.done;
    }
    expect(rewards).toEqual([
      [0, 0],
      [0, 1],
    ]);
    const values = [
      [0.1, 0.2],
      [0.3, 0.4],
    ];
    const a = gae(rewards.flat(), values.flat(), ['agent', 'turn', 'agent', 'end'], { gamma: 1, lambda: 1 });
    // gamma = lambda = 1: A = (sum of later rewards) - V = 1 - V.
    expect(Array.from(a.advantages, (x) => +x.toFixed(12))).toEqual([0.9, 0.8, 0.7, 0.6]);
    // The same episode at token level (each action two tokens, prompts between) gives the same A on the
    // last token of each action when the critic's values are constant within an action.
    const lossMask = [0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1];
    const agentIds = [-1, 0, 0, -1, 1, 1, -1, 0, 0, -1, 1, 1];
    const tv = [0, 0.1, 0.1, 0, 0.2, 0.2, 0, 0.3, 0.3, 0, 0.4, 0.4];
    const t = tokenLevelGae({ values: tv, lossMask, agentIds, actionRewards: rewards.flat(), gamma: 1, lambda: 1 });
    expect([2, 5, 8, 11].map((k) => +t.advantages[k].toFixed(12))).toEqual([0.9, 0.8, 0.7, 0.6]);
  });
});
