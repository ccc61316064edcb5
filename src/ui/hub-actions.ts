// The Hub download panel's actions: list a repo (nothing is fetched before the user types an id and asks),
// download it after the user's yes (with progress), pause (the worker keeps what arrived), resume (the same
// download call: it continues from OPFS) and cancel (the worker removes the partial files). The access
// token is an argument, never kept in the store.

import * as Comlink from 'comlink';
import type { HubProgress } from '../worker/api.ts';
import { getEngine } from '../worker/client.ts';
import { asError, prepareKernels, refreshLocalModels, refreshStorage } from './actions.ts';
import { editDraft, type HubState, patchInternal, useLab } from './store.ts';

const get = useLab.getState;
const set = useLab.setState;
const patch = (h: Partial<HubState>) => set({ hub: { ...get().hub, ...h } });

/** The page's ?hub= setting (the worker honours it only for a loopback origin: the e2e test's local Hub). */
const hubParam = (): string | null => new URLSearchParams(location.search).get('hub');

export async function listHub(repo: string, token: string): Promise<void> {
  patch({ status: 'listing', listing: null, progress: null, error: null });
  const r = await getEngine()
    .hubList(repo, hubParam(), token || undefined)
    .catch((e) => ({ ok: false as const, error: asError(e) }));
  patch(r.ok ? { status: 'listed', listing: r.value } : { status: 'error', error: r.error });
}

/** Downloads the listed repo (or resumes a paused one) and makes it the run's model. */
export async function downloadHub(token: string): Promise<void> {
  const listing = get().hub.listing;
  if (!listing) return;
  patchInternal({ hubPausing: false });
  patch({ status: 'downloading', error: null });
  const progress = Comlink.proxy((p: HubProgress) => {
    if (get().hub.status === 'downloading') patch({ progress: p });
  });
  const r = await getEngine()
    .hubDownload(listing, hubParam(), progress, token || undefined)
    .catch((e) => ({ ok: false as const, error: asError(e) }));
  if (r.ok) {
    editDraft((d) => {
      d.model.path = r.value.path;
    });
    set({ model: { status: 'ready', info: r.value, error: null } });
    void prepareKernels();
    patch({ status: 'idle', listing: null, progress: null });
  } else if (get().internal.hubPausing) patch({ status: 'paused' });
  else if (get().hub.status === 'downloading') patch({ status: 'error', error: r.error });
  void refreshLocalModels();
  void refreshStorage();
}

export async function pauseHub(): Promise<void> {
  patchInternal({ hubPausing: true });
  await getEngine().hubPause();
}

export async function cancelHub(): Promise<void> {
  const listing = get().hub.listing;
  patch({ status: 'idle', listing: null, progress: null, error: null });
  if (listing) {
    const r = await getEngine()
      .hubCancel(listing.repo)
      .catch((e) => ({ ok: false as const, error: asError(e) }));
    if (!r.ok) patch({ status: 'error', error: r.error });
  }
  void refreshStorage();
}
