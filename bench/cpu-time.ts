// CPU seconds spent by this process and everything it started (Chromium's browser, GPU and renderer
// processes), from /proc: on a shared machine the wall time of a SwiftShader run moves with everyone
// else's load, while the CPU time it consumes does not (much), so before/after comparisons quote both.
// Linux only; elsewhere it returns null and the benches print wall times alone.

import { existsSync, readFileSync, readdirSync } from 'node:fs';

const TICKS = 100; // USER_HZ: /proc/<pid>/stat counts in 1/100 s on Linux

/** utime + stime (fields 14 and 15) and the parent (field 4) of one process; null once it has gone. */
function stat(pid: number): { ppid: number; ticks: number } | null {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' '); // the command name may hold spaces: fields after its ')'
    return { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) };
  } catch {
    return null;
  }
}

/** CPU seconds of `root` (default: this process) and its live descendants. */
export function treeCpuSeconds(root = process.pid): number | null {
  if (!existsSync('/proc/self/stat')) return null;
  const procs = new Map<number, { ppid: number; ticks: number }>();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const st = stat(pid);
    if (st) procs.set(pid, st);
  }
  const children = new Map<number, number[]>();
  for (const [pid, { ppid }] of procs) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  let ticks = 0;
  const todo = [root];
  while (todo.length) {
    const pid = todo.pop()!;
    ticks += procs.get(pid)?.ticks ?? 0;
    todo.push(...(children.get(pid) ?? []));
  }
  return ticks / TICKS;
}
