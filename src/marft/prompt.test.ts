import { describe, expect, it } from 'vitest';
import { buildMessages, buildPlainPrompt, transitionText } from './prompt.ts';

const solver = { role: 'solver', systemPrompt: 'You solve.', description: 'Executes the plan.' };

describe('prompt', () => {
  it('builds the first-turn chat observation', () => {
    const m = buildMessages({ profile: solver, task: 'What is 2+3?', visible: [{ role: 'planner', text: ' 1. add ' }] });
    expect(m).toEqual([
      { role: 'system', content: 'You solve.' },
      { role: 'user', content: "What is 2+3?\n\nplanner: 1. add\n\nNow it is solver's turn. Executes the plan." },
    ]);
  });
  it('puts earlier turns and feedback in order, own outputs as assistant turns', () => {
    const m = buildMessages({
      profile: solver,
      task: 'T',
      history: [
        {
          outputs: [
            { role: 'planner', text: 'p1' },
            { role: 'solver', text: 's1' },
          ],
          feedback: 'judge: the answer is incorrect',
        },
      ],
      visible: [{ role: 'planner', text: 'p2' }],
    });
    expect(m.map((x) => x.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(m[1].content).toBe('T\n\nplanner: p1');
    expect(m[2].content).toBe('s1');
    expect(m[3].content).toBe("judge: the answer is incorrect\n\nplanner: p2\n\nNow it is solver's turn. Executes the plan.");
    const flat = buildMessages(
      { profile: solver, task: 'T', history: [{ outputs: [{ role: 'solver', text: 's1' }], feedback: 'f' }], visible: [] },
      { ownTurnsAsAssistant: false, transition: false },
    );
    expect(flat).toEqual([
      { role: 'system', content: 'You solve.' },
      { role: 'user', content: 'T\n\nsolver: s1\n\nf' },
    ]);
  });
  it('builds the plain-text fallback ending in the role header', () => {
    const p = buildPlainPrompt({
      profile: solver,
      task: 'What is 2+3?',
      history: [{ outputs: [{ role: 'solver', text: '\\boxed{6}' }], feedback: 'judge: the answer is incorrect' }],
      visible: [{ role: 'planner', text: 'add' }],
    });
    expect(p).toBe(
      'You solve.\n\nProblem: What is 2+3?\n\nsolver: \\boxed{6}\n\njudge: the answer is incorrect\n\nplanner: add\n\nsolver:',
    );
  });
  it('writes the transition text', () => {
    expect(transitionText('verifier', 'Checks.')).toBe("Now it is verifier's turn. Checks.");
    expect(transitionText('agent_2')).toBe("Now it is agent_2's turn.");
  });
});
