// Saving a worker's Download as a file. Its name is built from run ids, checkpoint and role names (all
// validated upstream), but the browser takes a download name as given; keeping it to [A-Za-z0-9_.-] here
// means no name can carry a path, a leading dot or markup, whatever produced it.

import type { Download } from '../worker/api.ts';

/** `name` with every run of other characters replaced by "_", leading dots and underscores dropped. */
export const safeDownloadName = (name: string): string => name.replace(/[^\w.-]+/g, '_').replace(/^[._]+/, '') || 'download';

const MIME: Record<string, string> = { '.jsonl': 'application/jsonl', '.csv': 'text/csv', '.png': 'image/png' };

export function saveDownload(d: Download): void {
  const url = URL.createObjectURL(new Blob([d.bytes as BlobPart], { type: MIME[/\.\w+$/.exec(d.name)?.[0] ?? ''] ?? 'application/zip' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = safeDownloadName(d.name);
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
