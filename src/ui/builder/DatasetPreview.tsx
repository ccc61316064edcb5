// The first records of an uploaded dataset, so the user sees what the agents will be asked. Dataset text
// is the user's (or a stranger's) file: it is rendered only as React text children, never as markup, so
// "<script>" or "<img onerror>" in a problem shows as those characters (hostile-ui.test.ts checks it).

import { messageWithoutHint } from '../../common/errors.ts';
import { parseCodeTasks, parseDataset } from '../../config/envs.ts';
import type { DatasetState } from '../store.ts';

const PARSERS = { dataset: parseDataset, code: parseCodeTasks };
export type DatasetEnv = keyof typeof PARSERS;

/** Records shown; long fields are cut so one huge record cannot flood the page. */
export const PREVIEW_RECORDS = 3;
const MAX_CHARS = 400;
const cut = (s: string): string => (s.length > MAX_CHARS ? `${s.slice(0, MAX_CHARS)}…` : s);

/** Reads a dataset (or the code env's tasks) as the environment will: its record count and first records, or why it cannot. */
export function readDataset(text: string, name: string, env: DatasetEnv): DatasetState {
  try {
    const records = PARSERS[env](text, name);
    // the first records as plain text (a code task: its prompt and the function it asks for)
    const sample = records
      .slice(0, PREVIEW_RECORDS)
      .map((r) => ('prompt' in r ? { problem: r.prompt, answer: r.entryPoint } : { problem: r.problem, answer: r.answer }));
    return { name, records: records.length, sample, error: null };
  } catch (e) {
    const err = e as { code?: string; message: string; hint?: string };
    return {
      name,
      records: 0,
      sample: [],
      error: { code: err.code ?? 'DATASET_PARSE', message: messageWithoutHint(err.message), hint: err.hint },
    };
  }
}

/** Why bytes picked as a dataset are an archive (zip, gzip) rather than JSON text; null when they are not one. */
export function archiveKind(b: Uint8Array): string | null {
  if (b[0] === 0x50 && b[1] === 0x4b && (b[2] === 3 || b[2] === 5) && (b[3] === 4 || b[3] === 6)) return 'a zip archive';
  if (b[0] === 0x1f && b[1] === 0x8b) return 'gzip-compressed';
  return null;
}

export function DatasetPreview({ dataset, inUse = false }: { dataset: DatasetState; inUse?: boolean }) {
  return (
    <div data-testid="dataset-preview">
      <p data-testid="dataset-status">
        {dataset.name}: {dataset.records} records{inUse ? ' (in use)' : ''}
      </p>
      <table className="dataset-preview">
        <tbody>
          {dataset.sample.map((r, i) => (
            <tr key={i} data-testid="dataset-record">
              <td className="problem">{cut(r.problem)}</td>
              <td className="answer">{cut(r.answer)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
