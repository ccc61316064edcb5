// A loaded run's PEFT adapters as files (per-agent folders, config.json and README.md) with the iteration
// they belong to: from the GPU when the run is idle, from its last checkpoint while it trains (mid-iteration
// the adapters are being updated).

import { GpuError } from '../../gpu/errors.ts';
import type { CheckpointStore } from '../../platform/storage/store.ts';
import { readCheckpointFiles } from '../checkpoint/checkpoint.ts';
import { lostReason } from '../run-loop.ts';
import type { SessionModel } from '../session.ts';
import type { TrainState } from '../state.ts';
import { checkpointAdapterFiles } from './downloads.ts';
import { exportAdapters } from './peft.ts';

export interface AdapterFiles {
  files: Record<string, Uint8Array | string>;
  iteration: number;
}

/** The adapters of the run folder `id`'s latest checkpoint. */
export async function checkpointAdapters(store: CheckpointStore, id: string): Promise<AdapterFiles> {
  const ck = await readCheckpointFiles(store, id);
  return { files: checkpointAdapterFiles(ck), iteration: ck.manifest.iteration };
}

/** The adapters of an idle run's state, read from the GPU; a lost device is named, with nothing written. */
export async function stateAdapters(m: SessionModel, state: TrainState, lastCheckpoint: string | null): Promise<AdapterFiles> {
  try {
    return { files: await exportAdapters(m.gpu, state, { baseModel: m.source.baseModel }), iteration: state.iteration };
  } catch (e) {
    const reason = await lostReason(m.gpu, e);
    if (reason === null) throw e;
    throw new GpuError(
      'DEVICE_LOST',
      `the adapter export stopped: the GPU device was lost (${reason}). Nothing was written; the run is unchanged (last checkpoint ${lastCheckpoint ?? 'none'}).`,
      'Export again: the run reopens on a new device from its last checkpoint.',
    );
  }
}
