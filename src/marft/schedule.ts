// Training schedules: which agents' policies move at an iteration. One formula for both levels (the
// original codebase had two different ones, a known defect):
// - all: every agent trains;
// - agent_by_agent: only agent (floor((iteration - criticWarmup) / interval) mod N) trains, the others
//   are frozen (counted from the end of the warm-up, so agent 0 goes first; the reference counts from 0);
// the critic always trains, and during the first criticWarmup iterations no policy moves at all.

export interface Schedule {
  mode: 'all' | 'agent_by_agent';
  /** K: iterations per agent turn in agent_by_agent mode (>= 1). */
  interval: number;
  criticWarmup: number;
}

/** Indices of the agents whose policies train at `iteration` (0-based), out of `agentCount`. */
export function trainingAgents(iteration: number, agentCount: number, schedule: Schedule): number[] {
  if (iteration < schedule.criticWarmup || agentCount === 0) return [];
  if (schedule.mode === 'all') return Array.from({ length: agentCount }, (_, i) => i);
  const k = Math.max(1, Math.floor(schedule.interval));
  return [Math.floor((iteration - schedule.criticWarmup) / k) % agentCount];
}

/** 1/0 per agent: the loss mask of a per-agent update at `iteration`. */
export function agentTrainMask(iteration: number, agentCount: number, schedule: Schedule): Uint8Array {
  const mask = new Uint8Array(agentCount);
  for (const a of trainingAgents(iteration, agentCount, schedule)) mask[a] = 1;
  return mask;
}
