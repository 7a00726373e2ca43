// Automations' http steps keep their header values sealed inside the stored steps (docs/privacy.md
// "Secrets sealed at rest"): every value, since any header may carry a credential (Authorization,
// X-Api-Key, a store's own) and a template in one is no secret but harmless to seal.
import { type Keyring, openOrNull } from './keyring.js';

/** The steps with `fn` applied to every header value of every http step (other steps as they are). */
export function mapHeaderValues(steps: unknown, fn: (value: string) => string): unknown {
  if (!Array.isArray(steps)) return steps;
  return steps.map((step) => {
    if (!step || typeof step !== 'object') return step;
    const { type, headers } = step as { type?: unknown; headers?: unknown };
    if (type !== 'http' || !headers || typeof headers !== 'object') return step;
    const mapped = Object.fromEntries(
      Object.entries(headers as Record<string, unknown>).map(([k, v]) => [k, typeof v === 'string' ? fn(v) : v]),
    );
    return { ...step, headers: mapped };
  });
}

export const sealStepHeaders = <T>(steps: T, ring: Keyring): T =>
  mapHeaderValues(steps, (v) => ring.seal(v, 'automations.steps.headers')) as T;

/**
 * Opened for the operator's view and editor of the flow (docs/automations.md): a value that does
 * not open (a key not in the ring) stays sealed: it reveals nothing, and saving the flow back keeps
 * it as it is. The http step opens each value itself (http-step.ts), failing the step when one does not.
 */
export const viewStepHeaders = <T>(steps: T, ring: Keyring): T =>
  mapHeaderValues(steps, (v) => openOrNull(ring, v, 'automations.steps.headers') ?? v) as T;
