// vitest global setup: after the whole run, rewrite reliability/RELIABILITY.md from reliability/results/*.json.
import { writeReliabilityReport } from './reliability.ts';

export default function setup(): () => void {
  return () => {
    writeReliabilityReport();
  };
}
