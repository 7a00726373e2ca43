// Claves de API: the account's keys (name, prefix, created, state), `Revocar` with a confirmation,
// and `Crear clave` → `Nombre`, `Crear` → the key shown once (console.md "Configuración").
import { useLayoutEffect, useState } from 'preact/hooks';
import { ApiError, call } from '../../api/client';
import { Field } from '../../ui/field';
import { messageOf, useLoad } from './load';
import { ShownOnce, useFocusBack } from './once';
import { formatTime, configTexts as t } from './texts';

interface Key {
  id: string;
  name: string;
  prefix: string;
  createdAt: string;
  revokedAt: string | null;
}

export function KeysSection({ base, onDenied, onChange }: { base: string; onDenied: () => void; onChange: () => void }) {
  const keys = useLoad<{ data: Key[] }>(`${base}/keys`, onDenied);
  const [creating, setCreating] = useState(false);
  const [nameError, setNameError] = useState('');
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<string | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);
  const [rowError, setRowError] = useState('');
  const opener = useFocusBack(creating || created !== null);
  useLayoutEffect(() => {
    if (creating) document.getElementById('key-name')?.focus();
  }, [creating]);

  const create = async (e: SubmitEvent) => {
    e.preventDefault();
    const name = String(new FormData(e.currentTarget as HTMLFormElement).get('name') ?? '');
    setBusy(true);
    setNameError('');
    try {
      const res = await call<Key & { key: string }>('POST', `${base}/keys`, { name });
      setCreated(res.key);
      setCreating(false);
      keys.reload();
      onChange();
    } catch (err) {
      if (err instanceof ApiError && err.status === 403) onDenied();
      setNameError(err instanceof ApiError ? (err.fields.name ?? err.message) : messageOf(err));
      document.getElementById('key-name')?.focus();
    } finally {
      setBusy(false);
    }
  };

  const revoke = async (id: string) => {
    setRowError('');
    try {
      await call('DELETE', `${base}/keys/${id}`);
      setConfirming(null);
      keys.reload();
      onChange();
    } catch (err) {
      setRowError(messageOf(err));
    }
  };

  const list = keys.data?.data ?? [];
  return (
    <section aria-labelledby="claves">
      <h2 id="claves">Claves de API</h2>
      {keys.error && (
        <p role="alert" class="form-error">
          {keys.error}
        </p>
      )}
      {keys.data && list.length === 0 && <p class="hint">{t.keysEmpty}</p>}
      {list.length > 0 && (
        <div class="table-wrap">
          <table>
            <caption class="visually-hidden">Claves de API</caption>
            <thead>
              <tr>
                <th scope="col">Nombre</th>
                <th scope="col">Prefijo</th>
                <th scope="col">Creada</th>
                <th scope="col">Estado</th>
                <th scope="col">
                  <span class="visually-hidden">Acciones</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.map((k) => (
                <tr key={k.id}>
                  <td>{k.name}</td>
                  <td>
                    <code>{k.prefix}…</code>
                  </td>
                  <td>{formatTime(k.createdAt)}</td>
                  <td>{k.revokedAt ? `${t.revoked} (${formatTime(k.revokedAt)})` : t.active}</td>
                  <td>
                    {!k.revokedAt &&
                      (confirming === k.id ? (
                        <div class="confirm">
                          <p>{t.revokeAsk(k.name)}</p>
                          <button type="button" class="danger" onClick={() => revoke(k.id)}>
                            Sí, revocar
                          </button>
                          <button type="button" class="secondary" onClick={() => setConfirming(null)}>
                            Cancelar
                          </button>
                        </div>
                      ) : (
                        <button type="button" class="secondary" onClick={() => setConfirming(k.id)}>
                          Revocar
                        </button>
                      ))}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {rowError && (
        <p role="alert" class="form-error">
          {rowError}
        </p>
      )}
      {created ? (
        <ShownOnce id="new-key" label="Clave nueva" value={created} note={t.keyOnce} onDone={() => setCreated(null)} />
      ) : creating ? (
        <form class="inline-form" onSubmit={create}>
          <Field id="key-name" name="name" label="Nombre" required maxLength={200} error={nameError} />
          <div class="actions">
            <button type="submit" disabled={busy}>
              Crear
            </button>
            <button type="button" class="secondary" onClick={() => setCreating(false)}>
              Cancelar
            </button>
          </div>
        </form>
      ) : (
        <button type="button" ref={opener} onClick={() => setCreating(true)}>
          Crear clave
        </button>
      )}
    </section>
  );
}
