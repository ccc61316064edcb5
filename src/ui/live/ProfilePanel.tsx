// The Profile panel of the Train tab: an opt-in "Profile next iteration" switch (profiling puts every GPU
// dispatch in a pass of its own, so it is off by default), then the profiled iteration's phase wall times
// and its per-kernel GPU time (timestamp queries) as a sortable table with bars, per kernel or per op.
// Without the timestamp-query feature the panel says so and shows the phase times alone.

import { useMemo, useState } from 'react';
import {
  type KernelGrouping,
  type KernelSortKey,
  type KernelTime,
  kernelRows,
  phaseRows,
  sortKernelRows,
  totalMs,
} from '../../common/profile-table.ts';
import { profileNextIteration } from '../actions.ts';
import { selectProfile, selectRun, selectTimestampQuery, useLab } from '../store.ts';

const COLUMNS: Array<[KernelSortKey, string]> = [
  ['key', 'kernel'],
  ['calls', 'calls'],
  ['ms', 'GPU ms'],
  ['meanMs', 'ms / call'],
  ['share', '% of total'],
];

function Bar({ share }: { share: number }) {
  return (
    <div className="pbar">
      <div className="pfill" style={{ width: `${Math.min(100, share * 100)}%` }} />
    </div>
  );
}

function KernelTable({ kernels }: { kernels: KernelTime[] }) {
  const [by, setBy] = useState<KernelGrouping>('kernel');
  const [sort, setSort] = useState<{ key: KernelSortKey; dir: 'asc' | 'desc' }>({ key: 'ms', dir: 'desc' });
  const rows = useMemo(() => sortKernelRows(kernelRows(kernels, by), sort.key, sort.dir), [kernels, by, sort]);
  const max = Math.max(0, ...rows.map((r) => r.share));
  const click = (key: KernelSortKey) =>
    setSort((s) => ({ key, dir: s.key === key ? (s.dir === 'asc' ? 'desc' : 'asc') : key === 'key' ? 'asc' : 'desc' }));
  return (
    <>
      <div className="row spread">
        <h3>
          GPU time per {by} · {totalMs(rows).toFixed(1)} ms in {rows.reduce((a, r) => a + r.calls, 0)} dispatches
        </h3>
        <label className="field inline">
          <span>rows</span>
          <select data-testid="profile-group" value={by} onChange={(e) => setBy(e.target.value as KernelGrouping)}>
            <option value="kernel">per kernel (program / entry point)</option>
            <option value="op">per op (summed)</option>
          </select>
        </label>
      </div>
      <table className="profile-table" data-testid="kernel-table" data-rows={rows.length}>
        <thead>
          <tr>
            {COLUMNS.map(([key, label]) => (
              <th
                key={key}
                className={key === 'key' ? '' : 'num'}
                aria-sort={sort.key === key ? (sort.dir === 'asc' ? 'ascending' : 'descending') : 'none'}
              >
                <button type="button" data-testid={`sort-${key}`} onClick={() => click(key)}>
                  {label}
                  {sort.key === key ? (sort.dir === 'asc' ? ' ▲' : ' ▼') : ''}
                </button>
              </th>
            ))}
            <th />
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.key} data-testid="kernel-row" data-kernel={r.key} data-calls={r.calls} data-ms={r.ms}>
              <td className="mono">{r.key}</td>
              <td className="num">{r.calls}</td>
              <td className="num">{r.ms.toFixed(2)}</td>
              <td className="num">{r.meanMs.toFixed(3)}</td>
              <td className="num">{(r.share * 100).toFixed(1)}%</td>
              <td className="bar-cell">
                <Bar share={max > 0 ? r.share / max : 0} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

export function ProfilePanel() {
  const profile = useLab(selectProfile);
  const timestamps = useLab(selectTimestampQuery);
  const run = useLab(selectRun);
  const last = profile.last;
  const running = run.status === 'running';
  return (
    <section className="card profile" data-testid="profile-panel" data-armed={String(profile.armed)}>
      <div className="row spread">
        <h2>Profile</h2>
        <label className="check">
          <input
            type="checkbox"
            data-testid="profile-next"
            checked={profile.armed}
            disabled={timestamps === null}
            onChange={(e) => void profileNextIteration(e.target.checked)}
          />{' '}
          Profile next iteration
        </label>
      </div>
      <p className="hint">
        {profile.armed
          ? running
            ? 'The next iteration of this run will be profiled.'
            : 'Press Step (or Train) to profile the next iteration.'
          : 'Times every GPU dispatch of one iteration by kernel. Off by default: profiling puts each dispatch in a compute pass of its own, so the profiled iteration runs slower than the others.'}{' '}
        Chrome rounds GPU timestamps to 0.1 ms unless chrome://flags/#enable-webgpu-developer-features is on.
      </p>
      {timestamps === false && (
        <p className="warn-text" data-testid="profile-unsupported">
          This GPU adapter does not expose the WebGPU feature <code>timestamp-query</code>, so per-kernel GPU times cannot be measured here;
          a profiled iteration shows its phase wall times only.
        </p>
      )}
      {last && (
        <div data-testid="profile-result" data-iteration={last.iteration}>
          <h3>
            Iteration {last.iteration} · {last.seconds.total.toFixed(2)} s wall while profiled · {last.adapter}
          </h3>
          <table className="profile-table phases" data-testid="phase-table">
            <tbody>
              {phaseRows(last.seconds).map((r) => (
                <tr key={r.phase} data-testid="phase-row" data-phase={r.phase} data-seconds={r.seconds}>
                  <td>{r.phase}</td>
                  <td className="num">{r.seconds.toFixed(3)} s</td>
                  <td className="num">{(r.share * 100).toFixed(1)}%</td>
                  <td className="bar-cell">
                    <Bar share={r.share} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {last.kernels ? (
            <KernelTable kernels={last.kernels} />
          ) : (
            <p className="warn-text" data-testid="profile-kernels-unavailable">
              {last.unavailable ?? 'no per-kernel times for this iteration'}
            </p>
          )}
        </div>
      )}
    </section>
  );
}
