// An `ask` step waiting for its answer (docs/automations.md "ask"): the oldest unread input is
// read, matched against the options (their text, normalised, or their number), and the execution
// moves on, asks again (at most twice) or fails; or its deadline passes.
import { executionErrors } from '../http/messages.es-AR.js';
import { nextOf, type StepOf } from './flow.js';
import { end } from './step-end.js';
import { type Ctx, commit, insertLog, lease, moveTo, updateExecution } from './step-writes.js';
import { normalizeText } from './text.js';

/** Re-asks of an `ask` with options before the execution fails (automations.md: at most twice). */
const MAX_REASKS = 2;

/** The execution waits for an answer: read the oldest unread input, or time out, or keep waiting. */
export async function answer(c: Ctx, step: StepOf<'ask'>, now: Date): Promise<'go' | 'rest'> {
  const outcome = await commit(c, async (trx) => {
    const row = await updateExecution(trx, c, { run_at: lease(c) });
    const input = await trx
      .deleteFrom('automation_inputs')
      .where('seq', '=', (eb) =>
        eb.selectFrom('automation_inputs').select('seq').where('execution_id', '=', c.row.id).orderBy('seq').limit(1),
      )
      .returning(['text', 'message_id'])
      .executeTakeFirst();
    if (!input) {
      if (c.row.deadline_at && now < c.row.deadline_at) {
        // Nothing to read yet: wait for the answer or the deadline (an answer that raced in is due now).
        c.row = await updateExecution(trx, c, {
          claim: null,
          run_at: row.inputs_pending > 0 ? now : c.row.deadline_at,
        });
        return 'rest' as const;
      }
      await insertLog(trx, c, { step, outcome: 'timeout', at: now });
      if (step.timeoutNext) {
        c.row = await updateExecution(trx, c, { ...moveTo(step.timeoutNext), run_at: lease(c) });
        return 'go' as const;
      }
      return 'fail-timeout' as const;
    }
    const text = input.text ?? '';
    const pending = Math.max(0, row.inputs_pending - 1);
    const chosen = step.options?.length ? matchOption(step.options, text) : text;
    if (chosen === null) {
      const attempts = row.attempts + 1;
      await insertLog(trx, c, {
        step,
        outcome: attempts > MAX_REASKS ? 'no_option' : 'retry',
        at: now,
        detail: { messageId: input.message_id },
      });
      if (attempts > MAX_REASKS) return 'fail-options' as const;
      c.row = await updateExecution(trx, c, { state: 'ready', deadline_at: null, attempts, inputs_pending: pending, run_at: lease(c) });
      return 'go' as const;
    }
    const variables = { ...c.row.variables, [step.save]: chosen, respuesta: chosen };
    await insertLog(trx, c, { step, outcome: 'answered', at: now, detail: { messageId: input.message_id } });
    c.row = await updateExecution(trx, c, {
      ...moveTo(nextOf(step, c.steps)),
      variables: JSON.stringify(variables),
      attempts: 0,
      inputs_pending: pending,
      run_at: lease(c),
    });
    return 'go' as const;
  });
  if (outcome === 'fail-timeout') return end(c, { status: 'failed', error: executionErrors.noAnswer });
  if (outcome === 'fail-options') return end(c, { status: 'failed', error: executionErrors.noOption });
  return outcome;
}

/** The option an answer names: its text (normalised) or its number in the list; null when none. */
function matchOption(options: string[], text: string): string | null {
  const t = normalizeText(text);
  const byText = options.find((o) => normalizeText(o) === t);
  if (byText !== undefined) return byText;
  const n = /^\d{1,2}$/.test(t) ? Number(t) : 0;
  return n >= 1 && n <= options.length ? (options[n - 1] as string) : null;
}
