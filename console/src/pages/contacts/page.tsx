// Contactos (console.md "Pages"): the search box `Buscar contactos` (name or phone, searched by the
// server, paged by cursor), `Importar CSV` and `Exportar CSV` for admins and owners, and a
// contact's page at /console/contactos/<id> (with `Exportar datos` and `Borrar datos del contacto`
// for admins and owners). Everything over the operator account routes.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, call } from '../../api/client';
import { useFocusOnChange } from '../../focus';
import { BASE, Link } from '../../router';
import type { Role } from '../../sections';
import { texts } from '../../texts';
import { ContactDetail } from './contact';
import { ImportPanel } from './import';
import { contactsTexts as t } from './texts';
import type { Contact } from './types';
import './contacts.css';

const SEARCH_DELAY_MS = 250;
const PAGE = 50;

export function ContactsPage({ accountId, role, openId }: { accountId: string; role: Role; openId: string | null }) {
  const base = `/admin/v1/accounts/${encodeURIComponent(accountId)}`;
  if (openId) return <ContactDetail base={base} id={openId} manager={role !== 'agent'} />;
  return <ContactList base={base} manager={role !== 'agent'} />;
}

function ContactList({ base, manager }: { base: string; manager: boolean }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useFocusOnChange(heading, 'contactos');
  const [query, setQuery] = useState('');
  const [asked, setAsked] = useState('');
  const [rows, setRows] = useState<Contact[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState('');
  const [importing, setImporting] = useState(false);
  const [tick, setTick] = useState(0);
  const importButton = useRef<HTMLButtonElement>(null);

  // The search runs on the server a moment after the last key.
  useEffect(() => {
    const timer = setTimeout(() => setAsked(query.trim()), SEARCH_DELAY_MS);
    return () => clearTimeout(timer);
  }, [query]);

  useEffect(() => {
    let live = true;
    const q = asked ? `&q=${encodeURIComponent(asked)}` : '';
    call<{ data: Contact[]; nextCursor: string | null }>('GET', `${base}/contacts?limit=${PAGE}${q}`)
      .then((r) => {
        if (!live) return;
        setRows(r.data);
        setNext(r.nextCursor);
        setError('');
      })
      .catch((e: unknown) => live && setError(e instanceof ApiError ? e.message : texts.offline));
    return () => {
      live = false;
    };
  }, [base, asked, tick]);

  const more = async () => {
    if (!next) return;
    const q = asked ? `&q=${encodeURIComponent(asked)}` : '';
    try {
      const r = await call<{ data: Contact[]; nextCursor: string | null }>('GET', `${base}/contacts?limit=${PAGE}&after=${next}${q}`);
      setRows((old) => [...(old ?? []), ...r.data]);
      setNext(r.nextCursor);
    } catch (e) {
      setError(e instanceof ApiError ? e.message : texts.offline);
    }
  };

  const exportCsv = () => {
    // A link to the attachment: the browser downloads it with the session's cookie.
    const a = document.createElement('a');
    a.href = `${base}/contacts/export`;
    a.download = '';
    document.body.appendChild(a);
    a.click();
    a.remove();
  };

  const closeImport = () => {
    setImporting(false);
    importButton.current?.focus();
  };

  return (
    <div class="contacts">
      <h1 ref={heading} tabIndex={-1}>
        {t.title}
      </h1>
      <div class="contacts-bar">
        <form
          class="field contacts-search"
          onSubmit={(e) => {
            e.preventDefault();
            setAsked(query.trim());
          }}
        >
          <label for="contacts-q">{t.search}</label>
          <input
            id="contacts-q"
            type="search"
            value={query}
            autocomplete="off"
            aria-describedby="contacts-q-hint"
            onInput={(e) => setQuery((e.currentTarget as HTMLInputElement).value)}
          />
          <p id="contacts-q-hint" class="hint">
            {t.searchHint}
          </p>
        </form>
        {manager && (
          <div class="actions">
            <button type="button" ref={importButton} aria-expanded={importing} onClick={() => setImporting(true)}>
              Importar CSV
            </button>
            <button type="button" class="secondary" onClick={exportCsv}>
              Exportar CSV
            </button>
          </div>
        )}
      </div>
      {importing && <ImportPanel base={base} onClose={closeImport} onImported={() => setTick((n) => n + 1)} />}
      {error && (
        <p role="alert" class="form-error">
          {error}
        </p>
      )}
      {rows === null && !error && <p role="status">{t.loading}</p>}
      {rows?.length === 0 && <p>{asked ? t.noMatch(asked) : t.empty}</p>}
      {rows && rows.length > 0 && (
        <div class="table-wrap">
          <table class="contacts-table">
            <caption class="visually-hidden">{t.title}</caption>
            <thead>
              <tr>
                <th scope="col">Nombre</th>
                <th scope="col">{t.phone}</th>
                <th scope="col">{t.state}</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((c) => (
                <tr key={c.id}>
                  <td>
                    <Link href={`${BASE}/contactos/${c.id}`}>{c.name || t.noName}</Link>
                  </td>
                  <td class="phone" data-label={t.phone}>
                    {c.phone ? `+${c.phone}` : (c.socialchat?.username ?? '—')}
                  </td>
                  <td data-label={t.state}>{c.optedOut ? t.optedOut : c.marketingOptOut ? t.marketingOptOut : t.receives}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {next && (
        <button type="button" class="secondary" onClick={more}>
          {t.more}
        </button>
      )}
    </div>
  );
}
