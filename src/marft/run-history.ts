// The iterations a run keeps for the inspector since it was loaded: episodes, their scores and targets.

import type { RunConfig } from '../config/run-config.ts';
import type { ActionTargets } from './advantage-targets.ts';
import type { ActionRecord, EpisodeRecord } from './rollout.ts';
import type { ActionScores } from './score.ts';
import type { IterationResult } from './trainer.ts';

/** How many finished iterations a run keeps for the inspector (episodes, scores, targets: small beside the model). */
export const KEPT_ITERATIONS = 10;

/** The last iteration's episodes with what scoring and the advantages gave them (the inspector's data). */
export interface LastIteration {
  iteration: number;
  config: RunConfig;
  episodes: EpisodeRecord[];
  scores: Map<ActionRecord, ActionScores>;
  targets: Map<ActionRecord, ActionTargets>;
}

/** The last KEPT_ITERATIONS iterations, oldest first. */
export class KeptIterations {
  private kept: LastIteration[] = [];

  /** Keeps a finished iteration's episodes with their scores and targets. */
  add(res: IterationResult, config: RunConfig): void {
    const it = {
      iteration: res.metrics.iteration,
      config,
      episodes: res.episodes,
      scores: res.scores ?? new Map(),
      targets: res.targets ?? new Map(),
    };
    this.kept = [...this.kept, it].slice(-KEPT_ITERATIONS);
  }

  clear(): void {
    this.kept = [];
  }

  get last(): LastIteration | null {
    return this.kept[this.kept.length - 1] ?? null;
  }

  get numbers(): number[] {
    return this.kept.map((r) => r.iteration);
  }

  /** A kept iteration (the last when `iteration` is undefined); null when it is not kept. */
  get(iteration?: number): LastIteration | null {
    return iteration === undefined ? this.last : (this.kept.find((r) => r.iteration === iteration) ?? null);
  }
}
