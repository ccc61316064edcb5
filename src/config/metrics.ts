// The metrics of one training iteration, team and per agent: what the trainer records, checkpoints keep
// in state.json's history, the CLI prints and the lab charts. Kept with the run config so that the
// front-ends read them without importing the algorithm.

export interface AgentMetrics {
  /** Mean credited reward of the agent's actions this iteration. */
  reward: number;
  /** Fraction of the agent's answering actions that were correct (NaN when it does not answer). */
  accuracy: number;
  actions: number;
  tokens: number;
}

export interface IterationMetrics {
  iteration: number;
  /** Team: fraction of episodes solved, mean team reward. */
  accuracy: number;
  teamReward: number;
  agents: Record<string, AgentMetrics>;
  policyLoss: number;
  valueLoss: number;
  entropy: number;
  approxKl: number;
  klToRef: number;
  clipFraction: number;
  /** Generated tokens per second of the rollout, and the iteration's phases in seconds. */
  tokensPerSecond: number;
  seconds: { rollout: number; score: number; advantages: number; update: number; total: number };
  /** Steps skipped (non-finite loss or gradient, early stop on KL) with their reason. */
  skipped: string[];
  /** Agents whose adapters trained this iteration (agent-by-agent schedules, critic warm-up). */
  trained: string[];
}
