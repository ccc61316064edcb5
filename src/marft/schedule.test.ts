import { describe, expect, it } from 'vitest';
import { agentTrainMask, trainingAgents } from './schedule.ts';

describe('schedule', () => {
  it('trains every agent in "all" mode after the warm-up', () => {
    const s = { mode: 'all' as const, interval: 1, criticWarmup: 2 };
    expect(trainingAgents(0, 3, s)).toEqual([]);
    expect(trainingAgents(1, 3, s)).toEqual([]);
    expect(trainingAgents(2, 3, s)).toEqual([0, 1, 2]);
  });
  it('rotates agents every K iterations, counting from the end of the warm-up', () => {
    // K = 2, N = 3, warm-up 1: iterations 1,2 -> agent 0; 3,4 -> 1; 5,6 -> 2; 7 -> 0.
    const s = { mode: 'agent_by_agent' as const, interval: 2, criticWarmup: 1 };
    expect([0, 1, 2, 3, 4, 5, 6, 7].map((i) => trainingAgents(i, 3, s))).toEqual([[], [0], [0], [1], [1], [2], [2], [0]]);
    expect(Array.from(agentTrainMask(3, 3, s))).toEqual([0, 1, 0]);
  });
});
