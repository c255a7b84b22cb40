/** The server's size limits, and keeping a step within them: an observation is cut at
 * `maxObservationChars`, then a step still too large for one request has its longest text
 * cut, with a marker saying so. */

export interface Limits {
  /** HINDSIGHT_MAX_BODY_BYTES: no request body over it is sent. */
  maxBodyBytes: number;
  /** HINDSIGHT_MAX_STEPS: steps past it are dropped (the last step says how many). */
  maxSteps: number;
  /** HINDSIGHT_MAX_BATCH: traces per `traces/batch` request. */
  maxBatch: number;
  /** HINDSIGHT_OBSERVATION_RAW_CAP: longer observations are cut. */
  maxObservationChars: number;
}

export const DEFAULT_LIMITS: Limits = {
  maxBodyBytes: 5 * 1024 * 1024,
  maxSteps: 2000,
  maxBatch: 500,
  maxObservationChars: 65_536,
};

const encoder = new TextEncoder();

export function byteLength(text: string): number {
  return encoder.encode(text).length;
}

export type Step = Record<string, unknown>;

/** The step encoded in at most `budget` bytes (its longest texts cut), or null. */
export function fitStep(step: Step, budget: number, maxObservationChars: number): string | null {
  const observation = step.observation;
  if (observation !== undefined && observation !== null) {
    let text = typeof observation === "string" ? observation : JSON.stringify(observation);
    if (text.length > maxObservationChars) {
      text = `${text.slice(0, maxObservationChars)}\n[... cut by the client at ${maxObservationChars} chars]`;
      step.observation = text;
    }
  }
  for (let tries = 0; tries < 8; tries++) {
    const encoded = JSON.stringify(step);
    const size = byteLength(encoded);
    if (size <= budget) return encoded;
    const field = longestText(step);
    if (field === null) return null;
    const text = typeof step[field] === "string" ? (step[field] as string) : JSON.stringify(step[field]);
    const keep = Math.max(0, text.length - (size - budget) - 200);
    step[field] = `${text.slice(0, keep)}\n[... cut by the client at ${keep} of ${text.length} chars: over the limit]`;
  }
  return null;
}

function longestText(step: Step): string | null {
  let best: string | null = null;
  let bestLength = 200; // shorter texts are not worth cutting
  for (const field of ["content", "observation", "arguments", "context"]) {
    const value = step[field];
    if (value === undefined || value === null) continue;
    const length = (typeof value === "string" ? value : JSON.stringify(value)).length;
    if (length > bestLength) {
      best = field;
      bestLength = length;
    }
  }
  return best;
}
