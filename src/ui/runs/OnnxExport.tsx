// A run's exports from the latest checkpoint or the one picked: its PEFT adapters as a zip (read from storage,
// the run need not be loaded), and its agents as ONNX: one button per role exports the base model with that
// agent's adapter merged (the shared adapter in shared LoRA mode), as a zip of <role>.onnx, the tokenizer
// files and a README (so each button says "ONNX zip", not a bare .onnx). One ONNX export at a time; its
// progress and result show here, a failure also as a notice with its hint.

import { useState } from 'react';
import type { RunSummary } from '../../worker/api.ts';
import { downloadAdapters, downloadOnnx } from '../actions.ts';
import { selectOnnxExport, useLab } from '../store.ts';

export function OnnxExport({ run }: { run: RunSummary }) {
  const exp = useLab(selectOnnxExport);
  const [checkpoint, setCheckpoint] = useState('');
  if (!run.roles.length || !run.checkpoints.length) return null;
  const busy = exp?.status === 'running';
  const mine = exp?.runId === run.id ? exp : null;
  const shared = run.loraMode === 'shared';
  return (
    <div className="onnx-export" data-testid="onnx-export">
      {run.checkpoints.length > 1 && (
        <select
          data-testid="onnx-checkpoint"
          value={checkpoint}
          disabled={busy}
          onChange={(e) => setCheckpoint(e.target.value)}
          aria-label="checkpoint to export"
        >
          <option value="">latest</option>
          {run.checkpoints.map((c) => (
            <option key={c.name} value={c.name}>
              {c.name}
            </option>
          ))}
        </select>
      )}
      <button
        type="button"
        data-testid="download-run-adapters"
        disabled={busy}
        title="the agents' LoRA adapters in PEFT format (agents/<role>/) and the run config, as a zip"
        onClick={() => void downloadAdapters(run.id, checkpoint || undefined)}
      >
        Download adapters
      </button>
      <span
        className="hint"
        title="the base model with an agent's LoRA adapter merged into its weights, for onnxruntime (Python, web, mobile)"
      >
        Export ONNX{shared ? ' (shared adapter)' : ''}:
      </span>
      {run.roles.map((role) => (
        <button
          key={role}
          type="button"
          data-testid={`export-onnx-${role}`}
          disabled={busy}
          title={`download a zip of ${role}.onnx (the base model with ${shared ? 'the shared adapter' : `the ${role} adapter`} merged), the tokenizer files and a README`}
          onClick={() => void downloadOnnx(run.id, role, checkpoint || undefined)}
        >
          {role} (ONNX zip)
        </button>
      ))}
      {mine && (
        <span
          className={`onnx-status ${mine.status === 'error' ? 'bad-text' : 'hint'}`}
          data-testid="onnx-export-status"
          data-state={mine.status}
          data-role={mine.role}
        >
          {mine.message}
        </span>
      )}
    </div>
  );
}
