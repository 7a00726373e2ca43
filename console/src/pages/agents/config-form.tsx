// An agent's configuration (the fields PATCH …/agents/{agentId} takes, docs/agents.md): instructions,
// goal (description and the data to gather), handoff rules and phrases, model, turns. A 400's
// problems go next to their field (`goal.fields.1.name`, `handoff.rules.2`); the first one focused.
import { useLayoutEffect, useState } from 'preact/hooks';
import { ApiError, call } from '../../api/client';
import { Field } from '../../ui/field';
import { messageOf } from '../config/load';
import { agentTexts as t } from './texts';
import type { Agent } from './types';

interface GoalField {
  name: string;
  description: string;
  required: boolean;
}

const lines = (text: string): string[] =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');

/** The problems of `prefix.N` as "Línea N+1: …" (rules and phrases are one per line, blanks dropped). */
const lineErrors = (fields: Record<string, string>, prefix: string): string =>
  Object.entries(fields)
    .filter(([k]) => k.startsWith(`${prefix}.`) || k === prefix)
    .map(([k, v]) => (k === prefix ? v : t.line(Number(k.split('.')[2]) + 1, v)))
    .join(' ');

function Area({ id, label, hint, error, ...rest }: { id: string; label: string; hint?: string; error?: string; [k: string]: unknown }) {
  const ids = [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {hint && (
        <p id={`${id}-hint`} class="hint">
          {hint}
        </p>
      )}
      <textarea id={id} aria-invalid={error ? 'true' : undefined} aria-describedby={ids || undefined} {...rest} />
      {error && (
        <p id={`${id}-error`} class="field-error">
          {error}
        </p>
      )}
    </div>
  );
}

export function AgentForm({ path, agent, onSaved }: { path: string; agent: Agent; onSaved: (a: Agent) => void }) {
  const [fields, setFields] = useState<GoalField[]>(agent.goal?.fields ?? []);
  const [v, setV] = useState({
    instructions: agent.instructions,
    goal: agent.goal?.description ?? '',
    rules: agent.handoff.rules.join('\n'),
    phrases: agent.handoff.phrases.join('\n'),
    model: agent.model ?? '',
    maxTurns: String(agent.maxTurns),
  });
  /** The props of a control bound to v[k]. */
  const bind = (k: keyof typeof v) => ({
    name: k,
    value: v[k],
    onInput: (e: Event) => setV({ ...v, [k]: (e.currentTarget as HTMLInputElement).value }),
  });
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState('');
  const [busy, setBusy] = useState(false);
  const [failed, setFailed] = useState(0);
  useLayoutEffect(() => {
    if (failed > 0) document.querySelector<HTMLElement>('.agent-form [aria-invalid="true"]')?.focus();
  }, [failed]);

  const setField = (i: number, patch: Partial<GoalField>) => setFields(fields.map((f, j) => (j === i ? { ...f, ...patch } : f)));

  const save = async (e: SubmitEvent) => {
    e.preventDefault();
    const goalDescription = v.goal.trim();
    const turns = v.maxTurns.trim();
    const body = {
      instructions: v.instructions,
      goal: goalDescription || fields.length ? { description: goalDescription, fields } : null,
      handoff: { rules: lines(v.rules), phrases: lines(v.phrases) },
      model: v.model.trim() || null,
      maxTurns: turns === '' ? Number.NaN : Number(turns),
    };
    setBusy(true);
    setFormError('');
    try {
      const saved = await call<Agent>('PATCH', path, body);
      setErrors({});
      onSaved(saved);
    } catch (err) {
      const f = err instanceof ApiError ? err.fields : {};
      setErrors(f);
      const known = /^(instructions|goal|handoff|model|maxTurns)/;
      const rest = Object.entries(f).filter(([k]) => !known.test(k));
      setFormError(Object.keys(f).length === 0 ? messageOf(err) : rest.map(([k, v]) => `${k}: ${v}`).join(' '));
      setFailed((n) => n + 1);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="agent-form" onSubmit={save}>
      <Area id="agent-instructions" label="Instrucciones" rows={8} {...bind('instructions')} error={errors.instructions} />
      <Area
        id="agent-goal"
        label="Objetivo"
        hint={t.goalHint}
        rows={3}
        {...bind('goal')}
        error={errors['goal.description'] ?? errors.goal}
      />
      <fieldset class="goal-fields">
        <legend>Datos a obtener</legend>
        {fields.length === 0 && <p class="hint">{t.fieldsEmpty}</p>}
        {fields.map((f, i) => (
          <div class="goal-field" key={i}>
            <Field
              id={`goal-field-${i}-name`}
              label={`Nombre del dato ${i + 1}`}
              value={f.name}
              onInput={(e) => setField(i, { name: (e.currentTarget as HTMLInputElement).value })}
              error={errors[`goal.fields.${i}.name`]}
            />
            <Field
              id={`goal-field-${i}-description`}
              label={`Descripción del dato ${i + 1}`}
              value={f.description}
              onInput={(e) => setField(i, { description: (e.currentTarget as HTMLInputElement).value })}
              error={errors[`goal.fields.${i}.description`]}
            />
            <label class="check">
              <input
                type="checkbox"
                checked={f.required}
                onChange={(e) => setField(i, { required: (e.currentTarget as HTMLInputElement).checked })}
              />{' '}
              Obligatorio
            </label>
            <button type="button" class="secondary" onClick={() => setFields(fields.filter((_, j) => j !== i))}>
              Quitar dato {i + 1}
            </button>
          </div>
        ))}
        {errors['goal.fields'] && <p class="field-error">{errors['goal.fields']}</p>}
        <button type="button" class="secondary" onClick={() => setFields([...fields, { name: '', description: '', required: false }])}>
          Agregar dato
        </button>
      </fieldset>
      <Area
        id="agent-rules"
        label="Reglas para pasar a una persona"
        hint={t.linesHint}
        rows={3}
        {...bind('rules')}
        error={lineErrors(errors, 'handoff.rules') || undefined}
      />
      <Area
        id="agent-phrases"
        label="Frases que pasan a una persona"
        hint={t.phrasesHint}
        rows={4}
        {...bind('phrases')}
        error={lineErrors(errors, 'handoff.phrases') || undefined}
      />
      <div class="field-row">
        <Field id="agent-model" label="Modelo" {...bind('model')} placeholder={t.modelHint} error={errors.model} />
        <Field id="agent-turns" label="Máximo de turnos" type="number" {...bind('maxTurns')} error={errors.maxTurns} />
      </div>
      {formError && (
        <p role="alert" class="form-error">
          {formError}
        </p>
      )}
      <div class="actions">
        <button type="submit" disabled={busy}>
          Guardar
        </button>
      </div>
    </form>
  );
}
