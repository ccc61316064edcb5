// The Try panel's actions: start a try (the worker streams its events into the store's transcript through
// a comlink.proxy), stop it, and preview a held-out task. The team is the worker's choice: the loaded
// run's adapters, or the base model under the builder's config when no run is loaded.

import * as Comlink from 'comlink';
import type { TryEvent, TryProblem, WorkerError } from '../../worker/api.ts';
import { getEngine } from '../../worker/client.ts';
import { asError } from '../actions.ts';
import { patchInternal, useLab } from '../store.ts';
import { type TryView, applyTryEvent, emptyTry } from './transcript.ts';

const get = useLab.getState;
const patch = (f: (v: TryView) => TryView): void => useLab.setState({ tryTeam: f(get().tryTeam) });

/** One episode of the team on `problem`; temperature 0 is greedy. */
export async function startTry(problem: TryProblem, temperature: number): Promise<void> {
  // which try the events belong to: a late event of a stopped try must not land in the next one
  const mine = get().internal.tryRequest + 1;
  patchInternal({ tryRequest: mine });
  const current = (): boolean => mine === get().internal.tryRequest;
  useLab.setState({ tryTeam: { ...emptyTry(), status: 'running' } });
  const onEvent = Comlink.proxy((e: TryEvent) => {
    if (current()) patch((v) => applyTryEvent(v, e));
  });
  const seed = Math.floor(Math.random() * 0x7fffffff); // a sampled try differs each time; greedy ignores it
  const r = await getEngine()
    .tryTeam(get().draft, { problem, temperature, seed }, onEvent)
    .catch((e) => ({ ok: false as const, error: asError(e) }));
  if (!current()) return;
  patch((v) =>
    r.ok ? { ...v, status: r.value.stopped ? 'stopped' : 'done', result: r.value } : { ...v, status: 'error', error: r.error },
  );
}

export function stopTry(): void {
  if (get().tryTeam.status !== 'running') return;
  patch((v) => ({ ...v, status: 'stopping' }));
  void getEngine().tryStop();
}

/** The held-out task `seed` draws, or the error that says why there is none. */
export async function heldOutPreview(seed: number): Promise<{ task: string; gold: string | null } | { error: WorkerError }> {
  const r = await getEngine()
    .tryTask(get().draft, seed)
    .catch((e) => ({ ok: false as const, error: asError(e) }));
  return r.ok ? r.value : { error: r.error };
}
