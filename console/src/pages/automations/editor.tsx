// The flow as JSON (console.md: "Editing flows stays JSON, with the validation errors of the
// operator API shown next to the field"): a labelled monospace textarea; a failed save lists
// every problem of the server's 400 under it with its path, the first one focused; each problem
// selects its place in the text.
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../../api/client';
import { messageOf } from '../config/load';
import { lineColumn, locate } from './json-path';
import { autoTexts as t } from './texts';

interface Problem {
  path: string;
  message: string;
  /** Where to put the caret (a client-side JSON error), else found by path. */
  at?: number;
}

/** The offset a JSON.parse error points at (V8: "… at position 42 (line 3 column 5)"). */
function errorOffset(text: string, e: unknown): number {
  const m = /position (\d+)/.exec(String((e as Error)?.message ?? ''));
  return m ? Math.min(Number(m[1]), text.length) : text.length;
}

export function FlowEditor({
  initial,
  submitLabel,
  onSave,
}: {
  initial: string;
  submitLabel: string;
  /** Sends the parsed object; rejects with the server's ApiError. */
  onSave: (flow: Record<string, unknown>) => Promise<void>;
}) {
  const [text, setText] = useState(initial);
  const [problems, setProblems] = useState<Problem[]>([]);
  const [formError, setFormError] = useState('');
  const [busy, setBusy] = useState(false);
  const area = useRef<HTMLTextAreaElement>(null);
  const first = useRef<HTMLButtonElement>(null);
  const [shown, setShown] = useState(0);
  useLayoutEffect(() => {
    if (shown > 0) first.current?.focus();
  }, [shown]);

  const select = (p: Problem) => {
    const el = area.current;
    if (!el) return;
    const span = p.at !== undefined ? ([p.at, p.at] as const) : locate(el.value, p.path);
    el.focus();
    if (span) el.setSelectionRange(span[0], span[1]);
  };

  const save = async (e: SubmitEvent) => {
    e.preventDefault();
    setFormError('');
    let flow: unknown;
    try {
      flow = JSON.parse(text);
    } catch (err) {
      const at = errorOffset(text, err);
      const { line, column } = lineColumn(text, at);
      setProblems([{ path: '', message: t.badJson(line, column), at }]);
      setShown((n) => n + 1);
      return;
    }
    if (!flow || typeof flow !== 'object' || Array.isArray(flow)) {
      setProblems([{ path: '', message: t.notObject, at: 0 }]);
      setShown((n) => n + 1);
      return;
    }
    setBusy(true);
    try {
      await onSave(flow as Record<string, unknown>);
      setProblems([]);
    } catch (err) {
      const fields = err instanceof ApiError ? Object.entries(err.fields) : [];
      if (fields.length > 0) {
        setProblems(fields.map(([path, message]) => ({ path, message })));
        setShown((n) => n + 1);
      } else {
        setProblems([]);
        setFormError(messageOf(err));
      }
    } finally {
      setBusy(false);
    }
  };

  const described = problems.length > 0 ? 'flow-json-hint flow-json-errors' : 'flow-json-hint';
  return (
    <form class="flow-form" onSubmit={save}>
      <div class="field">
        <label for="flow-json">Flujo (JSON)</label>
        <p id="flow-json-hint" class="hint">
          {t.editorHint}
        </p>
        <textarea
          id="flow-json"
          ref={area}
          class="json"
          rows={18}
          spellcheck={false}
          autocomplete="off"
          aria-invalid={problems.length > 0 ? 'true' : undefined}
          aria-describedby={described}
          value={text}
          onInput={(e) => setText((e.currentTarget as HTMLTextAreaElement).value)}
        />
        {problems.length > 0 && (
          <div id="flow-json-errors" class="problems">
            <p class="field-error">{t.problems(problems.length)}</p>
            <ul>
              {problems.map((p, i) => (
                <li key={`${p.path}-${i}`}>
                  <button type="button" class="problem" ref={i === 0 ? first : undefined} onClick={() => select(p)}>
                    <code>{p.path || t.whole}</code>
                    <span class="field-error">{p.message}</span>
                  </button>
                </li>
              ))}
            </ul>
          </div>
        )}
      </div>
      {formError && (
        <p role="alert" class="form-error">
          {formError}
        </p>
      )}
      <div class="actions">
        <button type="submit" disabled={busy}>
          {submitLabel}
        </button>
      </div>
    </form>
  );
}
