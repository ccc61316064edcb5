// The kernel warm-up, the worker's side: after the model loads, the page asks for the builder's config to be
// warmed up (src/marft/warm-up.ts) so that the first Step does not wait for pipelines. Skipped where it
// would buy nothing: a run training, a model whose kernels the cache already prepared, a user's module, and
// by default a CPU adapter (its iterations cost far more than its compiles; ?warmup=on|off decides instead).
// It holds the model while it runs; what needs the model for anything else calls makeWay first, and the
// warm-up stops within a decode step. A new request replaces the one in flight (the builder's latest config).

import { type RunConfig, parseRunConfig } from '../config/run-config.ts';
import type { Run } from '../marft/run.ts';
import type { Session } from '../marft/session.ts';
import { type WarmUpResult, warmUpKernels, warmUpRefusal } from '../marft/warm-up.ts';
import type { WarmUpMode } from './page-params.ts';

export class KernelWarmUp {
  private current: { ctl: { stop: boolean }; done: Promise<WarmUpResult | null> } | null = null;

  constructor(
    private readonly session: Session,
    private readonly run: Run,
  ) {}

  /**
   * Warms up the kernels of `draft` on its model (the loaded run's config if a run is loaded), stopping the
   * one in flight first; null when skipped (see above). `onMade` gets the pipelines made and asked for as
   * they come (a comlink proxy: its answers are not awaited).
   */
  async prepare(draft: RunConfig, mode: WarmUpMode, onMade: (made: number, asked: number) => unknown): Promise<WarmUpResult | null> {
    await this.makeWay();
    if (mode === 'off' || this.run.busy) return null;
    const config = this.run.team?.config ?? parseRunConfig(draft);
    if (warmUpRefusal(config)) return null;
    const ctl = { stop: false };
    const done = (async () => {
      const m = await this.session.load(config.model.path);
      if (m.summary.kernelsPrepared > 0 || (mode === 'auto' && m.gpu.cpu) || ctl.stop) return null;
      const r = await this.session.exclusive('preparing kernels', () =>
        warmUpKernels(m, config, {
          interrupt: () => {
            if (ctl.stop) throw new Error('stopped');
          },
          onMade: (made, asked) => void Promise.resolve(onMade(made, asked)).catch(() => {}),
        }),
      );
      await this.session.keepKernels();
      return r;
    })();
    this.current = { ctl, done };
    try {
      return await done;
    } finally {
      this.current = null;
    }
  }

  /** Stops the warm-up in flight and waits until it has let go of the model. */
  async makeWay(): Promise<void> {
    const c = this.current;
    if (!c) return;
    c.ctl.stop = true;
    await c.done.catch(() => {});
  }
}
