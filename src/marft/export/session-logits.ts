// An agent's logits on the session's model (the lab's ONNX export checks its graph against them): the
// model its checkpoint names, loaded on the session's device, held for the export (a Step or another
// export is refused meanwhile). A device lost mid-way fails with a clear GpuError DEVICE_LOST; nothing
// was written, and a retry loads the model on a new device (Session.load replaces a lost one).

import { GpuError } from '../../gpu/errors.ts';
import type { VerifiedCheckpoint } from '../checkpoint/checkpoint.ts';
import { lostReason } from '../run-loop.ts';
import type { Session } from '../session.ts';
import { agentAdapter, agentLogits } from './agent.ts';

export interface SessionLogits {
  logits: Float32Array;
  vocabSize: number;
}

export function sessionAgentLogits(session: Session, ck: VerifiedCheckpoint, role: string, ids: readonly number[]): Promise<SessionLogits> {
  return session.exclusive(`an export computing ${role}'s logits`, async () => {
    const m = await session.load(agentAdapter(ck, role).config.model.path);
    try {
      return { logits: await agentLogits(ck, role, m.decoder, m.summary.name, ids), vocabSize: m.model.vocabSize };
    } catch (e) {
      const reason = await lostReason(m.gpu, e);
      if (reason === null) throw e;
      throw new GpuError(
        'DEVICE_LOST',
        `computing ${role}'s logits for the export stopped: the GPU device was lost (${reason}). Nothing was written; the run is unchanged.`,
        'Export again: the model loads on a new device.',
      );
    }
  });
}
