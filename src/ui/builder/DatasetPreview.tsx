// The first records of an uploaded dataset, so the user sees what the agents will be asked. Dataset text
// is the user's (or a stranger's) file: it is rendered only as React text children, never as markup, so
// "<script>" or "<img onerror>" in a problem shows as those characters (hostile-ui.test.ts checks it).

import type { DatasetState } from '../store.ts';

/** Records shown; long fields are cut so one huge record cannot flood the page. */
export const PREVIEW_RECORDS = 3;
const MAX_CHARS = 400;
const cut = (s: string): string => (s.length > MAX_CHARS ? `${s.slice(0, MAX_CHARS)}…` : s);

export function DatasetPreview({ dataset }: { dataset: DatasetState }) {
  return (
    <div data-testid="dataset-preview">
      <p data-testid="dataset-status">{dataset.name}: {dataset.records} records</p>
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
