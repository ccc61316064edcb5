// The Storage panel (Runs tab): how much of the browser's storage this site uses and may use
// (navigator.storage.estimate(), read by the worker), and what each run folder and local model takes,
// biggest first, each with a Delete: the place a STORAGE_FULL or RUN_PAUSED message sends the user to
// free space. Checkpoints within a run are pruned by the run config's runLoop.keepCheckpoints.

import { deleteLocalModel, deleteRun, refreshStorage } from '../actions.ts';
import type { StorageUsage } from '../../worker/api.ts';
import { selectRun, selectRunActive, selectStorage, useLab } from '../store.ts';

/** Bytes in the largest unit that keeps the number >= 1 (B, KiB, MiB, GiB). */
export function formatBytes(b: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (b >= 1024 && i < units.length - 1) {
    b /= 1024;
    i++;
  }
  return `${i === 0 ? b : b.toFixed(b < 10 ? 2 : 1)} ${units[i]}`;
}

export function StoragePanel() {
  const storage = useLab(selectStorage);
  const active = useLab(selectRunActive);
  const current = useLab(selectRun).runId;
  const model = useLab((s) => s.draft.model.path);
  return <StorageView storage={storage} active={active} current={current} model={model} />;
}

/** The panel from its data: `active` a run is training (`current` its id, `model` its model path). */
export function StorageView({
  storage,
  active,
  current,
  model,
}: {
  storage: StorageUsage | null;
  active: boolean;
  current: string | null;
  model: string;
}) {
  if (!storage)
    return (
      <section className="card" data-testid="storage-panel">
        <h2>Storage</h2>
        <p className="hint">Reading the browser storage…</p>
      </section>
    );
  const { usage, quota } = storage;
  const share = usage !== null && quota ? usage / quota : null;
  const rows: Array<{ kind: 'run' | 'model'; name: string; bytes: number }> = [
    ...storage.runs.map((r) => ({ kind: 'run' as const, ...r })),
    ...storage.models.map((m) => ({ kind: 'model' as const, ...m })),
  ].sort((a, b) => b.bytes - a.bytes);
  return (
    <section className="card" data-testid="storage-panel">
      <div className="row spread">
        <h2>Storage</h2>
        <button type="button" onClick={() => void refreshStorage()}>
          Refresh
        </button>
      </div>
      <p data-testid="storage-usage">
        {usage !== null ? `${formatBytes(usage)} used` : 'usage unknown'}
        {quota ? ` of ${formatBytes(quota)} this browser grants the site` : ' (this browser reports no quota)'}
        {share !== null && ` (${(share * 100).toFixed(share < 0.01 ? 2 : 0)}%)`}
      </p>
      {share !== null && <progress data-testid="storage-bar" max={1} value={share} className={share > 0.9 ? 'bad' : ''} />}
      <p className="hint">
        Runs: {formatBytes(storage.runs.reduce((s, r) => s + r.bytes, 0))} in {storage.runs.length} · local models:{' '}
        {formatBytes(storage.models.reduce((s, m) => s + m.bytes, 0))} in {storage.models.length}. Each run keeps its newest checkpoints
        (runLoop.keepCheckpoints); when storage is full, training pauses and nothing is lost: delete what you no longer need here, then
        continue.
      </p>
      <table className="runs" data-testid="storage-table">
        <tbody>
          {rows.map((r) => {
            const inUse = active && ((r.kind === 'run' && r.name === current) || (r.kind === 'model' && r.name === model));
            return (
              <tr key={`${r.kind}:${r.name}`} data-testid={`storage-${r.kind}`}>
                <td>{r.kind}</td>
                <td>
                  <code>{r.name}</code>
                </td>
                <td>{formatBytes(r.bytes)}</td>
                <td>
                  <button
                    type="button"
                    className="danger"
                    disabled={inUse || (active && r.kind === 'model')}
                    onClick={() => {
                      if (confirm(`Delete ${r.kind} ${r.name}?`)) void (r.kind === 'run' ? deleteRun(r.name) : deleteLocalModel(r.name));
                    }}
                  >
                    Delete
                  </button>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}
