// A new campaign: name, an approved template, each variable from the contact's attribute of that
// name or a fixed value, the audience by attributes, now or at a time, and the number. Sent to
// POST …/campaigns as it is: the server's validation is the only one, and each problem of its 400
// is shown next to its field (a path no field has stays above the button).
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, call } from '../../api/client';
import { useFocusOnChange } from '../../focus';
import { BASE, Link, navigate } from '../../router';
import { texts } from '../../texts';
import { Field } from '../../ui/field';
import { campaignTexts as t } from './texts';
import type { Campaign, PhoneNumber, Template } from './types';

interface Filter {
  key: string;
  value: string;
}

const messageOf = (e: unknown): string => (e instanceof ApiError ? e.message : texts.offline);

/** The error text of `id`'s field, wired like ui/field.tsx does. */
function FieldError({ id, error }: { id: string; error: string | undefined }) {
  return error ? (
    <p id={`${id}-error`} class="field-error">
      {error}
    </p>
  ) : null;
}
const described = (id: string, error: string | undefined) =>
  error ? { 'aria-invalid': 'true' as const, 'aria-describedby': `${id}-error` } : {};

export function CampaignForm({ base }: { base: string }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useFocusOnChange(heading, 'campanas/nueva');
  const [templates, setTemplates] = useState<Template[] | null>(null);
  const [numbers, setNumbers] = useState<PhoneNumber[] | null>(null);
  const [loadError, setLoadError] = useState('');
  const [name, setName] = useState('');
  const [templateId, setTemplateId] = useState('');
  const [fixed, setFixed] = useState<Record<string, string | null>>({});
  const [filters, setFilters] = useState<Filter[]>([{ key: '', value: '' }]);
  const [later, setLater] = useState(false);
  const [when, setWhen] = useState('');
  const [numberId, setNumberId] = useState('');
  const [fields, setFields] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState('');
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    Promise.all([
      call<{ data: Template[] }>('GET', `${base}/templates?status=APPROVED`),
      call<{ phoneNumbers: PhoneNumber[] }>('GET', base),
    ])
      .then(([tl, acc]) => {
        setTemplates(tl.data);
        if (tl.data[0]) setTemplateId(tl.data[0].id);
        const connected = acc.phoneNumbers.filter((n) => n.status === 'connected');
        setNumbers(connected);
        setNumberId((connected.find((n) => n.default) ?? connected[0])?.id ?? '');
      })
      .catch((e: unknown) => setLoadError(messageOf(e)));
  }, [base]);

  const template = templates?.find((x) => x.id === templateId) ?? null;

  const submit = async (e: SubmitEvent) => {
    e.preventDefault();
    setBusy(true);
    setFields({});
    setFormError('');
    const variables: Record<string, string> = {};
    for (const v of template?.variables ?? []) {
      const value = fixed[v.name];
      if (value !== null && value !== undefined) variables[v.name] = value;
    }
    const attributes: Record<string, string> = {};
    for (const f of filters) if (f.key !== '' || f.value !== '') attributes[f.key] = f.value;
    const body = {
      name,
      templateId,
      variables,
      audience: { attributes },
      ...(numberId ? { phoneNumberId: numberId } : {}),
      ...(later ? { scheduledAt: when ? new Date(when).toISOString() : '' } : {}),
    };
    try {
      const c = await call<Campaign>('POST', `${base}/campaigns`, body);
      navigate(`${BASE}/campanas/${c.id}`);
    } catch (err) {
      if (err instanceof ApiError && Object.keys(err.fields).length > 0) {
        setFields(err.fields);
        const placed = (k: string) => fieldIdOf(k, filters) !== null || k === 'audience' || k === 'audience.attributes';
        const known = Object.keys(err.fields).filter(placed);
        const rest = Object.entries(err.fields).filter(([k]) => !placed(k));
        setFormError(rest.map(([, m]) => m).join(' '));
        const first = known.map((k) => fieldIdOf(k, filters)).find((x) => x !== null);
        if (first) document.getElementById(first)?.focus();
        else if (rest.length > 0) document.querySelector<HTMLElement>('.cmp-form button[type="submit"]')?.focus();
      } else setFormError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  const setFilter = (i: number, f: Partial<Filter>) => setFilters(filters.map((x, j) => (j === i ? { ...x, ...f } : x)));
  const filterError = (f: Filter) => fields[`audience.attributes.${f.key}`];

  return (
    <div class="cmp">
      <p>
        <Link href={`${BASE}/campanas`}>{t.back}</Link>
      </p>
      <h1 ref={heading} tabIndex={-1}>
        {t.newTitle}
      </h1>
      {loadError && <p role="alert">{loadError}</p>}
      {templates === null && !loadError && <p role="status">{t.loading}</p>}
      {templates && templates.length === 0 && <p class="hint">{t.noTemplates}</p>}
      {numbers && numbers.length === 0 && <p class="hint">{t.noNumbers}</p>}
      {templates && templates.length > 0 && (
        <form class="cmp-form" onSubmit={submit} noValidate>
          <Field
            id="cmp-name"
            label="Nombre"
            value={name}
            maxLength={200}
            onInput={(e) => setName(e.currentTarget.value)}
            error={fields.name}
          />
          <div class="field">
            <label for="cmp-template">Plantilla</label>
            <select
              id="cmp-template"
              value={templateId}
              onChange={(e) => setTemplateId(e.currentTarget.value)}
              {...described('cmp-template', fields.templateId)}
            >
              {templates.map((x) => (
                <option key={x.id} value={x.id}>
                  {x.name} ({x.language})
                </option>
              ))}
            </select>
            <FieldError id="cmp-template" error={fields.templateId} />
            {template && <p class="hint cmp-body">{template.body}</p>}
          </div>
          {template && template.variables.length > 0 && (
            <fieldset>
              <legend>Variables</legend>
              <p class="hint">{t.variablesHint}</p>
              {template.variables.map((v) => {
                const id = `cmp-var-${v.name}`;
                const value = fixed[v.name] ?? null;
                const error = fields[`variables.${v.name}`];
                return (
                  <fieldset key={v.name} class="cmp-var">
                    <legend>{v.label || v.name}</legend>
                    <label class="cmp-choice">
                      <input
                        type="radio"
                        name={`${id}-from`}
                        checked={value === null}
                        onChange={() => setFixed({ ...fixed, [v.name]: null })}
                      />
                      {t.fromAttribute(v.name, v.example)}
                    </label>
                    <label class="cmp-choice">
                      <input
                        type="radio"
                        name={`${id}-from`}
                        checked={value !== null}
                        onChange={() => setFixed({ ...fixed, [v.name]: '' })}
                      />
                      {t.fixed}
                    </label>
                    {value !== null && (
                      <Field
                        id={id}
                        label={`Valor fijo de ${v.label || v.name}`}
                        value={value}
                        maxLength={1000}
                        onInput={(e) => setFixed({ ...fixed, [v.name]: e.currentTarget.value })}
                        error={error}
                      />
                    )}
                    {value === null && <FieldError id={id} error={error} />}
                  </fieldset>
                );
              })}
            </fieldset>
          )}
          <fieldset>
            <legend>Audiencia</legend>
            <p class="hint">{t.audienceHint}</p>
            {filters.map((f, i) => {
              const n = i + 1;
              const error = filterError(f);
              return (
                <div class="cmp-filter" key={i}>
                  <Field
                    id={`cmp-attr-${n}`}
                    label={`Atributo ${n}`}
                    value={f.key}
                    onInput={(e) => setFilter(i, { key: e.currentTarget.value })}
                    error={error}
                  />
                  <Field
                    id={`cmp-value-${n}`}
                    label={`Valor ${n}`}
                    value={f.value}
                    onInput={(e) => setFilter(i, { value: e.currentTarget.value })}
                  />
                  <button type="button" class="secondary" onClick={() => setFilters(filters.filter((_, j) => j !== i))}>
                    {t.removeFilter(n)}
                  </button>
                </div>
              );
            })}
            <FieldError id="cmp-audience" error={fields['audience.attributes'] ?? fields.audience} />
            <button type="button" class="secondary" onClick={() => setFilters([...filters, { key: '', value: '' }])}>
              {t.addFilter}
            </button>
          </fieldset>
          <fieldset>
            <legend>Envío</legend>
            <label class="cmp-choice">
              <input type="radio" name="cmp-when" checked={!later} onChange={() => setLater(false)} />
              {t.now}
            </label>
            <label class="cmp-choice">
              <input type="radio" name="cmp-when" checked={later} onChange={() => setLater(true)} />
              {t.later}
            </label>
            {later && (
              <Field
                id="cmp-scheduled"
                type="datetime-local"
                label="Fecha y hora"
                value={when}
                onInput={(e) => setWhen(e.currentTarget.value)}
                error={fields.scheduledAt}
              />
            )}
          </fieldset>
          <div class="field">
            <label for="cmp-number">Número</label>
            <select
              id="cmp-number"
              value={numberId}
              onChange={(e) => setNumberId(e.currentTarget.value)}
              {...described('cmp-number', fields.phoneNumberId)}
            >
              {(numbers ?? []).map((n) => (
                <option key={n.id} value={n.id}>
                  {n.name ? `${n.name} · ${n.phone}` : n.phone}
                </option>
              ))}
            </select>
            <FieldError id="cmp-number" error={fields.phoneNumberId} />
          </div>
          {formError && (
            <p role="alert" class="form-error">
              {formError}
            </p>
          )}
          <div class="cmp-actions">
            <button type="submit" disabled={busy}>
              {t.create}
            </button>
          </div>
        </form>
      )}
    </div>
  );
}

/** The id of the control a 400 problem's path belongs to, or null (then it is shown above the button). */
function fieldIdOf(path: string, filters: Filter[]): string | null {
  if (path === 'name') return 'cmp-name';
  if (path === 'templateId') return 'cmp-template';
  if (path === 'phoneNumberId') return 'cmp-number';
  if (path === 'scheduledAt') return 'cmp-scheduled';
  if (path.startsWith('variables.')) return `cmp-var-${path.slice('variables.'.length)}`;
  if (path === 'audience.attributes' || path === 'audience') return null;
  if (path.startsWith('audience.attributes.')) {
    const key = path.slice('audience.attributes.'.length);
    const i = filters.findIndex((f) => f.key === key);
    return i < 0 ? null : `cmp-attr-${i + 1}`;
  }
  return null;
}
