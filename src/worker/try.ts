// Try the team, the worker's side: picks the team (the loaded run's adapters as they stand, or with no run
// loaded the base model under the builder's config), holds the model while the episode runs (a training
// start is refused meanwhile, and a try is refused while a run trains: it does not queue), and stops it
// on request. Actions that need the model for something else (open a run, load a model, train) call
// makeWay first: the try in flight stops within a decode step and they go on.

import { type RunConfig, parseRunConfig } from '../config/run-config.ts';
import { MarftError } from '../marft/errors.ts';
import type { Run } from '../marft/run.ts';
import type { Session } from '../marft/session.ts';
import { type TryEvent, type TryRequest, type TryResult, heldOutTask, tryTeam } from '../marft/try-team.ts';

export class TeamTrial {
  private current: { ctl: { stop: boolean }; done: Promise<TryResult> } | null = null;

  constructor(
    private readonly session: Session,
    private readonly run: Run,
  ) {}

  /** One episode of the team on `req`, streamed to `onEvent` (a comlink proxy: its answers are not awaited). */
  async try(draft: RunConfig, req: TryRequest, onEvent: (e: TryEvent) => unknown): Promise<TryResult> {
    if (this.run.busy)
      throw new MarftError('BUSY', 'a run is training: pause or stop it to try the team (a try does not queue behind training)');
    if (this.current) throw new MarftError('BUSY', 'the team is already answering: stop it or wait until it finishes');
    const ctl = { stop: false };
    const send = (e: TryEvent) => {
      void Promise.resolve(onEvent(e)).catch(() => {});
    };
    const done = (async () => {
      const loaded = this.run.team;
      const config = loaded?.config ?? parseRunConfig(draft);
      const model = loaded?.model ?? (await this.session.load(config.model.path));
      const team = loaded
        ? `run ${this.run.id} at iteration ${loaded.iteration}`
        : `the base model ${model.summary.name}, untrained (no run loaded)`;
      return this.session.exclusive('trying the team', () =>
        tryTeam(
          {
            envs: this.session.envs,
            decoder: model.decoder,
            tokenizer: model.tokenizer,
            config,
            policy: loaded?.policy ?? null,
            team,
            onEvent: send,
            interrupt: () => {
              if (ctl.stop) throw new Error('stopped');
            },
          },
          req,
        ),
      );
    })();
    this.current = { ctl, done };
    try {
      return await done;
    } finally {
      this.current = null;
    }
  }

  /** Stops the try in flight (it ends within a decode step; its result says stopped). */
  stop(): void {
    if (this.current) this.current.ctl.stop = true;
  }

  /** Stops the try in flight and waits until it has let go of the model. */
  async makeWay(): Promise<void> {
    const c = this.current;
    if (!c) return;
    c.ctl.stop = true;
    await c.done.catch(() => {});
  }

  /** The held-out task `seed` draws in the loaded run's environment (or the builder's), with its gold answer. */
  task(draft: RunConfig, seed: number): Promise<{ task: string; gold: string | null }> {
    return heldOutTask(this.session.envs, this.run.team?.config ?? parseRunConfig(draft), seed);
  }
}
