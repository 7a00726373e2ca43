// A contact's page (/console/contactos/<id>): phone, opt-out, the name and attributes editable
// (PATCH …/contacts/{contactId}, the limits of POST /api/v1/contacts; the server's errors next to
// their field) and the contact's conversations, each a link to /console/conversaciones/<id>;
// for owners and admins, the person's data on request (privacy.tsx).
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, call } from '../../api/client';
import { useFocusOnChange } from '../../focus';
import { BASE, Link } from '../../router';
import { texts } from '../../texts';
import { Field } from '../../ui/field';
import { ContactPrivacy } from './privacy';
import { formatDate, contactsTexts as t } from './texts';
import type { ContactWithConversations } from './types';

const messageOf = (e: unknown): string => (e instanceof ApiError ? e.message : texts.offline);

export function ContactDetail({ base, id, manager }: { base: string; id: string; manager: boolean }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useFocusOnChange(heading, `contactos/${id}`);
  const [contact, setContact] = useState<ContactWithConversations | null>(null);
  const [loadError, setLoadError] = useState('');
  const [name, setName] = useState('');
  const [values, setValues] = useState<Record<string, string>>({});
  const [removed, setRemoved] = useState<Set<string>>(new Set());
  const [newKey, setNewKey] = useState('');
  const [newValue, setNewValue] = useState('');
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState('');
  const [status, setStatus] = useState('');
  const [busy, setBusy] = useState(false);
  const [erased, setErased] = useState(false);

  const show = (c: ContactWithConversations) => {
    setContact(c);
    setName(c.name);
    setValues(c.attributes);
    setRemoved(new Set());
    setNewKey('');
    setNewValue('');
  };

  useEffect(() => {
    let live = true;
    call<ContactWithConversations>('GET', `${base}/contacts/${encodeURIComponent(id)}`)
      .then((c) => live && show(c))
      .catch((e: unknown) => live && setLoadError(messageOf(e)));
    return () => {
      live = false;
    };
  }, [base, id]);

  const save = async (e: SubmitEvent) => {
    e.preventDefault();
    if (!contact) return;
    const patch: Record<string, string | null> = {};
    for (const [k, v] of Object.entries(values)) if (!removed.has(k) && contact.attributes[k] !== v) patch[k] = v;
    for (const k of removed) patch[k] = null;
    const key = newKey.trim();
    if (key) patch[key] = newValue;
    setBusy(true);
    setFieldErrors({});
    setFormError('');
    setStatus('');
    try {
      const body = { ...(name !== contact.name ? { name } : {}), attributes: patch };
      const saved = await call<ContactWithConversations>('PATCH', `${base}/contacts/${contact.id}`, body);
      show({ ...saved, conversations: contact.conversations });
      setStatus(t.saved);
    } catch (err) {
      const fields = err instanceof ApiError ? err.fields : {};
      const mine: Record<string, string> = {};
      for (const [path, message] of Object.entries(fields)) {
        const k = path.startsWith('attributes.') ? path.slice('attributes.'.length) : path;
        mine[k === key ? 'new-key' : k] = message;
      }
      setFieldErrors(mine);
      // What matches no field of the form is said above the button.
      if (Object.keys(mine).length === 0 || mine.attributes) setFormError(mine.attributes ?? messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  const back = (
    <p>
      <Link href={`${BASE}/contactos`}>← {t.back}</Link>
    </p>
  );
  if (erased)
    return (
      <div class="contacts contact">
        {back}
        <h1 ref={heading} tabIndex={-1}>
          {t.title}
        </h1>
        <p role="status" class="notice">
          {t.erased}
        </p>
      </div>
    );
  if (!contact)
    return (
      <div class="contacts contact">
        {back}
        <h1 ref={heading} tabIndex={-1}>
          {t.title}
        </h1>
        {loadError ? (
          <p role="alert" class="form-error">
            {loadError}
          </p>
        ) : (
          <p role="status">{t.loading}</p>
        )}
      </div>
    );

  const keys = Object.keys(values).sort();
  return (
    <div class="contacts contact">
      {back}
      <h1 ref={heading} tabIndex={-1}>
        {contact.name || (contact.phone ? `+${contact.phone}` : t.noName)}
      </h1>
      <dl class="contact-facts">
        <dt>{t.phone}</dt>
        <dd class="phone">{contact.phone ? `+${contact.phone}` : t.noPhone}</dd>
        <dt>{t.state}</dt>
        <dd>
          {contact.optedOut ? <strong>{t.optedOutLong}</strong> : t.receivesLong}
          {contact.marketingOptOut && <> {t.marketingOptOutLong}</>}
        </dd>
      </dl>

      <form class="contact-form" onSubmit={save} noValidate>
        <Field
          id="contact-name"
          label="Nombre"
          value={name}
          maxLength={120}
          error={fieldErrors.name}
          onInput={(e) => setName(e.currentTarget.value)}
        />
        <fieldset>
          <legend>{t.attributes}</legend>
          <p class="hint">{t.attributesHint}</p>
          {keys.length === 0 && <p>{t.noAttributes}</p>}
          {keys.map((k) => (
            <div class="attribute" key={k}>
              <Field
                id={`attr-${k}`}
                label={k}
                value={values[k] ?? ''}
                disabled={removed.has(k)}
                error={fieldErrors[k]}
                onInput={(e) => setValues({ ...values, [k]: e.currentTarget.value })}
              />
              <button
                type="button"
                class="secondary"
                aria-pressed={removed.has(k)}
                onClick={() => {
                  const next = new Set(removed);
                  if (next.has(k)) next.delete(k);
                  else next.add(k);
                  setRemoved(next);
                }}
              >
                {removed.has(k) ? t.undo(k) : t.remove(k)}
              </button>
            </div>
          ))}
          <div class="attribute new">
            <Field
              id="attr-new-key"
              label={t.newKey}
              value={newKey}
              maxLength={64}
              autocomplete="off"
              error={fieldErrors['new-key']}
              onInput={(e) => setNewKey(e.currentTarget.value)}
            />
            <Field id="attr-new-value" label={t.newValue} value={newValue} onInput={(e) => setNewValue(e.currentTarget.value)} />
          </div>
          <p class="hint">{t.newKeyHint}</p>
        </fieldset>
        {formError && (
          <p role="alert" class="form-error">
            {formError}
          </p>
        )}
        <div class="actions">
          <button type="submit" disabled={busy}>
            {t.save}
          </button>
        </div>
        <p role="status" class="notice">
          {status}
        </p>
      </form>

      <section aria-labelledby="contact-conversations">
        <h2 id="contact-conversations">{t.conversations}</h2>
        {contact.conversations.length === 0 ? (
          <p>{t.noConversations}</p>
        ) : (
          <ul class="contact-conversations">
            {contact.conversations.map((c) => (
              <li key={c.id}>
                <Link href={`${BASE}/conversaciones/${c.id}`}>{t.conversationOn(c.channel, formatDate(c.createdAt))}</Link>
              </li>
            ))}
          </ul>
        )}
      </section>
      {manager && (
        <ContactPrivacy
          base={base}
          id={contact.id}
          who={contact.name || (contact.phone ? `+${contact.phone}` : t.noName)}
          onErased={() => {
            setErased(true);
            heading.current?.focus();
          }}
        />
      )}
    </div>
  );
}
