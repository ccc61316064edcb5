// The Runs tab: the demo run to open, every run kept in this browser (OPFS) with its checkpoints; resume any
// checkpoint, download one as a zip, its adapters (PEFT) or an agent as ONNX, overlay its curves on the Train
// charts, delete a run, import a checkpoint zip, download the built-in base model as a zip.

import {
  deleteRun,
  downloadBaseModel,
  downloadCheckpoint,
  importCheckpoint,
  openRun,
  overlayLog,
  refreshRuns,
  toggleOverlay,
} from '../actions.ts';
import { BUILTIN_MODEL } from '../../config/run-config.ts';
import { selectOverlays, selectRun, selectRunActive, selectRuns, useLab } from '../store.ts';
import { OnnxExport } from './OnnxExport.tsx';
import { OpenDemo } from './OpenDemo.tsx';

export function RunsView() {
  const runs = useLab(selectRuns);
  const loaded = useLab((s) => s.runsLoaded);
  const active = useLab(selectRunActive);
  const current = useLab(selectRun).runId;
  const overlays = useLab(selectOverlays);
  return (
    <section className="card" data-testid="runs-view">
      <div className="row spread">
        <h2>Saved runs</h2>
        <div className="row">
          <OpenDemo where="runs" />
          <button type="button" onClick={() => void refreshRuns()}>
            Refresh
          </button>
          <button
            type="button"
            data-testid="download-base-model"
            onClick={() => void downloadBaseModel('')}
            title="the built-in base model's folder (config, tokenizer, safetensors): unzip it beside the adapters for PeftModel.from_pretrained"
          >
            Download base model ({BUILTIN_MODEL}.zip)
          </button>
          <label className="button">
            Import checkpoint zip…
            <input
              type="file"
              accept=".zip,application/zip"
              className="sr-only"
              data-testid="import-checkpoint"
              onChange={(e) => {
                const f = e.target.files?.[0];
                if (f) void importCheckpoint(f);
                e.target.value = '';
              }}
            />
          </label>
          <label
            className="button"
            title="the JSON lines of marft train --json (e.g. a learning-matrix row's <row>-s<seed>.jsonl) or a checkpoint's state.json: its curves go on the Train charts"
          >
            Overlay a training log…
            <input
              type="file"
              accept=".jsonl,.json,application/json"
              className="sr-only"
              data-testid="overlay-log"
              onChange={(e) => {
                const f = e.target.files?.[0];
                if (f) void overlayLog(f);
                e.target.value = '';
              }}
            />
          </label>
        </div>
      </div>
      <p className="hint">
        Runs live in this browser's private storage (OPFS): they survive a reload. A checkpoint is saved after every iteration.
      </p>
      {overlays.some((o) => o.runId.startsWith('log: ')) && (
        <p className="row" data-testid="overlaid-logs">
          {overlays
            .filter((o) => o.runId.startsWith('log: '))
            .map((o) => (
              <label key={o.runId} className="button">
                <input type="checkbox" checked onChange={() => void toggleOverlay(o.runId)} /> {o.runId} ({o.history.length} iterations)
              </label>
            ))}
        </p>
      )}
      {!loaded && <p className="hint">Reading the browser storage…</p>}
      {loaded && !runs.length && <p className="hint">No saved runs yet.</p>}
      <table className="runs" data-testid="runs-table">
        <tbody>
          {runs.map((r) => {
            const latest = r.checkpoints.find((c) => c.latest) ?? r.checkpoints[r.checkpoints.length - 1];
            return (
              <tr key={r.id} data-testid={`run-${r.id}`} className={r.id === current ? 'current' : ''}>
                <td>
                  <b>{r.id}</b>
                  {r.id === current && <span className="tag">loaded</span>}
                  {r.demo && (
                    <span className="tag" title="continuing it trains a copy">
                      demo · read-only
                    </span>
                  )}
                  <br />
                  <span className="hint">
                    {r.roles.join(' → ')} · {r.env} · model {r.model} · {r.createdAt.slice(0, 19).replace('T', ' ')}
                  </span>
                  {r.problem && <p className="bad-text">{r.problem}</p>}
                </td>
                <td>
                  {latest ? `iteration ${latest.iteration}` : '—'}
                  {r.lastAccuracy !== null ? ` · accuracy ${(r.lastAccuracy * 100).toFixed(0)}%` : ''}
                </td>
                <td className="run-actions">
                  <button type="button" data-testid="resume-run" disabled={active || !latest} onClick={() => void openRun(r.id)}>
                    Resume latest
                  </button>
                  {r.checkpoints.length > 1 && (
                    <select
                      data-testid="resume-checkpoint"
                      disabled={active}
                      value=""
                      onChange={(e) => e.target.value && void openRun(r.id, e.target.value)}
                    >
                      <option value="">resume from…</option>
                      {r.checkpoints.map((c) => (
                        <option key={c.name} value={c.name}>
                          {c.name}
                        </option>
                      ))}
                    </select>
                  )}
                  <label className="button">
                    <input
                      type="checkbox"
                      data-testid="overlay-run"
                      disabled={!latest}
                      checked={overlays.some((o) => o.runId === r.id)}
                      onChange={() => void toggleOverlay(r.id)}
                    />{' '}
                    overlay on charts
                  </label>
                  <button type="button" data-testid="download-checkpoint" disabled={!latest} onClick={() => void downloadCheckpoint(r.id)}>
                    Download checkpoint zip
                  </button>
                  <button
                    type="button"
                    className="danger"
                    disabled={active && r.id === current}
                    onClick={() => {
                      if (confirm(`Delete run ${r.id} and its checkpoints?`)) void deleteRun(r.id);
                    }}
                  >
                    Delete
                  </button>
                  <OnnxExport run={r} />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}
