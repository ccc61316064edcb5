// The Try panel's transcript: events fold into one action per id (its latest text), turns in order, and
// the roles still waiting in the turn in flight, none once a turn is correct or the episode is over.

import { describe, expect, it } from 'vitest';
import type { TryEvent } from '../../worker/api.ts';
import { type TryView, applyTryEvent, emptyTry, waitingRoles } from './transcript.ts';

const fold = (v: TryView, events: TryEvent[]): TryView => events.reduce(applyTryEvent, v);
const turn = (t: number, correct: boolean): TryEvent => ({
  kind: 'turn',
  turn: t,
  texts: { planner: 'p', solver: 's' },
  answer: correct ? '5' : null,
  teamReward: correct ? 1 : 0,
  correct,
  feedback: `judge: the answer is ${correct ? 'correct' : 'incorrect'}`,
  answers: { solver: { answer: correct ? '5' : null, correct } },
});

describe('try transcript', () => {
  it('keeps one action per id with its latest text, in first-seen order, and the waiting roles of the turn in flight', () => {
    let v = fold({ ...emptyTry(), status: 'running' }, [
      { kind: 'task', task: 'Compute 2 + 3.', gold: '5', team: 'the base model', order: ['planner', 'solver'], horizon: 2 },
    ]);
    expect(waitingRoles(v)).toEqual(['planner', 'solver']);
    v = fold(v, [
      { kind: 'tokens', id: '0.0', turn: 0, role: 'planner', text: 'Add', tokens: 1 },
      { kind: 'tokens', id: '0.0', turn: 0, role: 'planner', text: 'Add 2', tokens: 3 },
    ]);
    expect(v.actions).toEqual([{ id: '0.0', turn: 0, role: 'planner', text: 'Add 2', tokens: 3 }]);
    expect(waitingRoles(v)).toEqual(['solver']);
    v = fold(v, [{ kind: 'tokens', id: '1.0', turn: 0, role: 'solver', text: '\\boxed{4}', tokens: 2 }, turn(0, false)]);
    expect(v.actions.map((a) => a.role)).toEqual(['planner', 'solver']);
    expect(v.turns.map((t) => t.teamReward)).toEqual([0]);
    expect(waitingRoles(v)).toEqual(['planner', 'solver']); // turn 2 of 2 is next
    v = fold(v, [
      { kind: 'tokens', id: '2.0', turn: 1, role: 'planner', text: 'x', tokens: 1 },
      { kind: 'tokens', id: '3.0', turn: 1, role: 'solver', text: '\\boxed{5}', tokens: 2 },
      turn(1, true),
    ]);
    expect(v.turns.map((t) => [t.turn, t.answer, t.teamReward])).toEqual([
      [0, null, 0],
      [1, '5', 1],
    ]);
    expect(waitingRoles(v)).toEqual([]); // the horizon is reached
    expect(waitingRoles(fold({ ...emptyTry(), status: 'running', horizon: 3, order: ['solver'] }, [turn(0, true)]))).toEqual([]); // a correct turn ends it
    expect(waitingRoles({ ...v, status: 'done', turns: [] })).toEqual([]); // nothing waits once the try is over
  });
});
