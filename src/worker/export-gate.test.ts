import { describe, expect, it } from 'vitest';
import { ExportGate } from './export-gate.ts';

describe('ExportGate', () => {
  it('refuses a second export and a training action while an export runs, naming it; frees itself after', async () => {
    const gate = new ExportGate();
    let finish!: () => void;
    const first = gate.run(
      'the export of solver.onnx from run-a',
      () =>
        new Promise<string>((r) => {
          finish = () => r('zip');
        }),
    );
    expect(gate.busy).toBe('the export of solver.onnx from run-a');
    expect(() => gate.check('Step')).toThrow(/^Step cannot start now: the export of solver\.onnx from run-a is running\./);
    await expect(gate.run('the checkpoint export of run-a', async () => 'other')).rejects.toMatchObject({
      code: 'MODEL_IN_USE',
      message: expect.stringMatching(/^The checkpoint export of run-a cannot start now: the export of solver\.onnx/),
    });
    finish();
    await expect(first).resolves.toBe('zip');
    expect(gate.busy).toBeNull();
    expect(() => gate.check('Step')).not.toThrow();
  });

  it('is freed when the export fails', async () => {
    const gate = new ExportGate();
    await expect(
      gate.run('an export', async () => {
        throw new Error('read failed');
      }),
    ).rejects.toThrow('read failed');
    await expect(gate.run('the next export', async () => 1)).resolves.toBe(1);
  });
});
