// Plantillas (console.md "Pages"): the account's templates with their category and review status;
// admins and owners create one (the variable rows come from the body's {{placeholders}}) through
// POST …/templates and, with a WhatsApp Cloud number, `Sincronizar` (POST …/templates/sync) brings
// Meta's review status. The list is read again every 15 s while a template is under review.
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { ApiError, call } from '../../api/client';
import { useFocusOnChange } from '../../focus';
import type { Role } from '../../sections';
import { texts } from '../../texts';
import { Field } from '../../ui/field';
import { categoryNames, placeholders, statusNames, templateTexts as t } from './texts';
import '../campaigns/campaigns.css';
import './templates.css';

interface Template {
  id: string;
  name: string;
  category: string;
  language: string;
  status: string;
  body: string;
  variables: { name: string; label: string; example: string }[];
}

const POLL_MS = 15_000;
const messageOf = (e: unknown): string => (e instanceof ApiError ? e.message : texts.offline);

export function TemplatesPage({ accountId, role }: { accountId: string; role: Role }) {
  const base = `/admin/v1/accounts/${encodeURIComponent(accountId)}`;
  const manager = role !== 'agent';
  const heading = useRef<HTMLHeadingElement>(null);
  useFocusOnChange(heading, 'plantillas');
  const [items, setItems] = useState<Template[] | null>(null);
  const [error, setError] = useState('');
  const [tick, setTick] = useState(0);
  const [cloud, setCloud] = useState(false);
  const [creating, setCreating] = useState(false);
  const [note, setNote] = useState('');
  const [syncing, setSyncing] = useState(false);
  const [syncError, setSyncError] = useState('');
  const opener = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    let live = true;
    call<{ data: Template[] }>('GET', `${base}/templates`)
      .then((r) => {
        if (!live) return;
        setItems(r.data);
        setError('');
      })
      .catch((e: unknown) => live && setError(messageOf(e)));
    return () => {
      live = false;
    };
  }, [base, tick]);
  useEffect(() => {
    call<{ phoneNumbers: { provider: string }[] }>('GET', base)
      .then((a) => setCloud(a.phoneNumbers.some((n) => n.provider === 'cloud')))
      .catch(() => setCloud(false));
  }, [base]);
  // Under review: read again every POLL_MS while the page is visible.
  const reviewing = items?.some((x) => x.status === 'PENDING') ?? false;
  useEffect(() => {
    if (!reviewing) return;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') setTick((n) => n + 1);
    }, POLL_MS);
    return () => clearInterval(timer);
  }, [reviewing]);

  const sync = async () => {
    setSyncing(true);
    setSyncError('');
    setNote('');
    try {
      const r = await call<{ imported: number; updated: number }>('POST', `${base}/templates/sync`);
      setNote(t.synced(r.imported, r.updated));
      setTick((n) => n + 1);
    } catch (e) {
      setSyncError(messageOf(e));
    } finally {
      setSyncing(false);
    }
  };

  return (
    <div class="cmp">
      <div class="cmp-head">
        <h1 ref={heading} tabIndex={-1}>
          {t.title}
        </h1>
        {manager && (
          <div class="cmp-actions">
            {!creating && (
              <button type="button" ref={opener} onClick={() => setCreating(true)}>
                {t.create}
              </button>
            )}
            {cloud && (
              <button type="button" class="secondary" disabled={syncing} onClick={sync}>
                {t.sync}
              </button>
            )}
          </div>
        )}
      </div>
      {manager && cloud && <p class="hint">{t.syncHint}</p>}
      <p role="status" class="notice">
        {note}
      </p>
      {syncError && (
        <p role="alert" class="form-error">
          {syncError}
        </p>
      )}
      {creating && (
        <TemplateForm
          base={base}
          cloud={cloud}
          onDone={(name) => {
            setCreating(false);
            if (name) {
              setNote(t.created(name));
              setTick((n) => n + 1);
            }
            requestAnimationFrame(() => opener.current?.focus());
          }}
        />
      )}
      {error && <p role="alert">{error}</p>}
      {items === null && !error && <p role="status">{t.loading}</p>}
      {items?.length === 0 && <p class="hint">{t.empty}</p>}
      {reviewing && cloud && <p class="hint">{t.pendingHint}</p>}
      {items && items.length > 0 && (
        <ul aria-label={t.title} class="cmp-list">
          {items.map((x) => (
            <li key={x.id} class="cmp-item">
              <div class="cmp-item-top">
                <strong>{x.name}</strong>
                <span class={`cmp-status cmp-${x.status}`}>{statusNames[x.status] ?? x.status}</span>
              </div>
              <p class="tpl-meta">
                {categoryNames[x.category] ?? x.category} · {x.language}
                {x.variables.length > 0 ? ` · ${x.variables.map((v) => v.label || v.name).join(', ')}` : ''}
              </p>
              <p class="tpl-body">{x.body}</p>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** The new template's form; onDone(name) after a 201, onDone(null) on Cancelar. */
function TemplateForm({ base, cloud, onDone }: { base: string; cloud: boolean; onDone: (name: string | null) => void }) {
  const [name, setName] = useState('');
  const [category, setCategory] = useState('UTILITY');
  const [language, setLanguage] = useState('es_AR');
  const [body, setBody] = useState('');
  const [labels, setLabels] = useState<Record<string, { label: string; example: string }>>({});
  const [fields, setFields] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState('');
  const [busy, setBusy] = useState(false);
  useLayoutEffect(() => document.getElementById('tpl-name')?.focus(), []);
  const names = placeholders(body);
  const row = (n: string) => labels[n] ?? { label: '', example: '' };
  const setRow = (n: string, v: Partial<{ label: string; example: string }>) => setLabels({ ...labels, [n]: { ...row(n), ...v } });

  const submit = async (e: SubmitEvent) => {
    e.preventDefault();
    setBusy(true);
    setFields({});
    setFormError('');
    const variables = names.map((n) => ({ name: n, label: row(n).label || n, example: row(n).example }));
    try {
      await call('POST', `${base}/templates`, { name, category, language, body, variables });
      onDone(name.trim());
    } catch (err) {
      if (err instanceof ApiError && Object.keys(err.fields).length > 0) {
        setFields(err.fields);
        const byField = ['name', 'category', 'language', 'body'];
        const rest = Object.entries(err.fields).filter(([k]) => !byField.includes(k) && !k.startsWith('variables'));
        setFormError(rest.map(([, m]) => m).join(' '));
        const first = byField.find((k) => err.fields[k]);
        document.getElementById(first ? `tpl-${first}` : 'tpl-body')?.focus();
      } else setFormError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  const varError = (i: number) => fields[`variables.${i}.name`] ?? fields[`variables.${i}.label`] ?? fields[`variables.${i}.example`];
  const bodyError = [fields.body, fields.variables].filter(Boolean).join(' ') || undefined;
  return (
    <form class="cmp-form cmp-item" onSubmit={submit} noValidate>
      {cloud && <p class="hint">{t.cloudCreate}</p>}
      <Field
        id="tpl-name"
        label="Nombre"
        value={name}
        maxLength={512}
        onInput={(e) => setName(e.currentTarget.value)}
        error={fields.name}
      />
      <div class="field">
        <label for="tpl-category">Categoría</label>
        <select id="tpl-category" value={category} onChange={(e) => setCategory(e.currentTarget.value)}>
          {Object.entries(categoryNames).map(([v, label]) => (
            <option key={v} value={v}>
              {label}
            </option>
          ))}
        </select>
        {fields.category && <p class="field-error">{fields.category}</p>}
      </div>
      <Field
        id="tpl-language"
        label="Idioma"
        value={language}
        maxLength={12}
        onInput={(e) => setLanguage(e.currentTarget.value)}
        error={fields.language}
      />
      <div class="field">
        <label for="tpl-body">Texto</label>
        <p id="tpl-body-hint" class="hint">
          {t.bodyHint}
        </p>
        <textarea
          id="tpl-body"
          value={body}
          maxLength={4096}
          onInput={(e) => setBody(e.currentTarget.value)}
          aria-invalid={bodyError ? 'true' : undefined}
          aria-describedby={bodyError ? 'tpl-body-hint tpl-body-error' : 'tpl-body-hint'}
        />
        {bodyError && (
          <p id="tpl-body-error" class="field-error">
            {bodyError}
          </p>
        )}
      </div>
      <fieldset>
        <legend>Variables</legend>
        {names.length === 0 && <p class="hint">{t.noVariables}</p>}
        {names.map((n, i) => (
          <div key={n} class="tpl-var">
            <Field
              id={`tpl-label-${n}`}
              label={`Etiqueta de ${n}`}
              value={row(n).label}
              maxLength={200}
              onInput={(e) => setRow(n, { label: e.currentTarget.value })}
              error={varError(i)}
            />
            <Field
              id={`tpl-example-${n}`}
              label={`Ejemplo de ${n}`}
              value={row(n).example}
              maxLength={1000}
              onInput={(e) => setRow(n, { example: e.currentTarget.value })}
            />
          </div>
        ))}
      </fieldset>
      {formError && (
        <p role="alert" class="form-error">
          {formError}
        </p>
      )}
      <div class="cmp-actions">
        <button type="submit" disabled={busy}>
          Guardar
        </button>
        <button type="button" class="secondary" onClick={() => onDone(null)}>
          Cancelar
        </button>
      </div>
    </form>
  );
}
