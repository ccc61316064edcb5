// The scalar series the live view plots, extracted from each iteration's metrics.

import type { IterationMetrics } from '../../config/metrics.ts';

export const agentKey = (role: string, what: 'reward' | 'accuracy'): string => `agent.${role}.${what}`;

/** key -> value of one iteration (NaN where a metric does not apply). */
export function metricValues(m: IterationMetrics): Record<string, number> {
  const out: Record<string, number> = {
    'team.reward': m.teamReward,
    'team.accuracy': m.accuracy,
    'loss.policy': m.policyLoss,
    'loss.value': m.valueLoss,
    entropy: m.entropy,
    'kl.approx': m.approxKl,
    'kl.ref': m.klToRef,
    clip: m.clipFraction,
    tps: m.tokensPerSecond,
    seconds: m.seconds.total,
  };
  for (const [role, a] of Object.entries(m.agents)) {
    out[agentKey(role, 'reward')] = a.reward;
    out[agentKey(role, 'accuracy')] = a.accuracy;
  }
  return out;
}

/**
 * Seconds left: the mean of the last (up to) 5 iterations (before the first one: `estimate`, the device
 * probe's) times the iterations to go, less `elapsed` seconds of the iteration in flight (never below the
 * iterations after it), so it counts down between iterations.
 */
export function timeLeft(
  history: readonly IterationMetrics[],
  iteration: number,
  total: number,
  estimate: number | null = null,
  elapsed = 0,
): number | null {
  const recent = history.slice(-5);
  if ((!recent.length && estimate === null) || total <= iteration) return null;
  const mean = recent.length ? recent.reduce((s, m) => s + m.seconds.total, 0) / recent.length : estimate!;
  return Math.max(0, mean - elapsed) + mean * (total - iteration - 1);
}

export function formatDuration(s: number | null): string {
  if (s === null || !Number.isFinite(s)) return '–';
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
}
