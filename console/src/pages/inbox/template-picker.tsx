// Outside the 24-hour window: pick an approved template (select Plantilla), fill one textbox per
// variable (labelled with the variable's label) and send it as the team's reply.
import { useEffect, useState } from 'preact/hooks';
import { ApiError, call } from '../../api/client';
import { texts } from '../../texts';
import { inboxTexts as t } from './texts';

interface Template {
  id: string;
  name: string;
  body: string;
  variables: { name: string; label: string }[];
}

export function TemplatePicker({ accountId, base, onDone }: { accountId: string; base: string; onDone: (sent: boolean) => void }) {
  const [templates, setTemplates] = useState<Template[] | null>(null);
  const [id, setId] = useState('');
  const [values, setValues] = useState<Record<string, string>>({});
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    call<{ data: Template[] }>('GET', `/admin/v1/accounts/${accountId}/templates?status=APPROVED`)
      .then((r) => {
        setTemplates(r.data);
        setId(r.data[0]?.id ?? '');
      })
      .catch((e: unknown) => setError(e instanceof ApiError ? e.message : texts.offline));
  }, [accountId]);

  const chosen = templates?.find((x) => x.id === id);
  // A button's click inside the reply's form: handled here, never submitting that form.
  const send = async (e: Event) => {
    e.preventDefault();
    if (!chosen || busy) return;
    setBusy(true);
    try {
      await call('POST', `${base}/messages`, { template: { id: chosen.id, variables: values } });
      onDone(true);
    } catch (err) {
      setError(err instanceof ApiError ? err.message : texts.offline);
    } finally {
      setBusy(false);
    }
  };

  return (
    <fieldset class="picker">
      <legend>{t.sendTemplate}</legend>
      {templates?.length === 0 && <p class="hint">{t.noTemplates}</p>}
      {templates && templates.length > 0 && (
        <>
          <label for="picker-template">{t.template}</label>
          <select
            id="picker-template"
            value={id}
            onChange={(e) => {
              setId((e.target as HTMLSelectElement).value);
              setValues({});
            }}
          >
            {templates.map((x) => (
              <option key={x.id} value={x.id}>
                {x.name}
              </option>
            ))}
          </select>
          {chosen && <p class="hint">{chosen.body}</p>}
          {chosen?.variables.map((v) => (
            <div class="field" key={v.name}>
              <label for={`picker-var-${v.name}`}>{v.label || v.name}</label>
              <input
                id={`picker-var-${v.name}`}
                value={values[v.name] ?? ''}
                onInput={(e) => setValues({ ...values, [v.name]: (e.target as HTMLInputElement).value })}
              />
            </div>
          ))}
        </>
      )}
      {error && (
        <p role="alert" class="field-error">
          {error}
        </p>
      )}
      <div class="actions">
        <button type="button" onClick={send} disabled={!chosen || busy}>
          {busy ? t.sending : t.send}
        </button>
        <button type="button" class="secondary" onClick={() => onDone(false)}>
          {t.cancel}
        </button>
      </div>
    </fieldset>
  );
}
