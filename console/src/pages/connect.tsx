// /console/conectar/<uid>: an AI app asks to connect to the member's account (docs/mcp.md
// "Connecting with OAuth"). Without a session → the login, which comes back here. The page names
// the app and the account, says what the app will be able to do, and offers `Permitir` /
// `Cancelar` — only to owners and admins, and nothing to allow at the plan's maximum of apps.
// The answer sends the browser back to the app (its redirect, through the authorization server).
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, call, setCsrf } from '../api/client';
import { useFocusOnChange } from '../focus';
import { BASE, navigate } from '../router';
import { texts } from '../texts';

interface Consent {
  client: { id: string; name: string; uri: string | null };
  account: { id: string; name: string };
  member: { name: string; role: string };
  allowed: boolean;
  atLimit: boolean;
  limit: number | null;
  csrf: string;
}

export function ConnectPage({ uid }: { uid: string }) {
  const heading = useRef<HTMLHeadingElement>(null);
  const [consent, setConsent] = useState<Consent | null>(null);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  useFocusOnChange(heading, consent ? 'ready' : 'loading');
  const base = `${BASE}/conectar/${encodeURIComponent(uid)}`;

  useEffect(() => {
    call<Consent>('GET', `${base}/datos`)
      .then((c) => {
        setCsrf(c.csrf);
        setConsent(c);
      })
      .catch((e: unknown) => {
        if (e instanceof ApiError && e.status === 401) navigate(`${BASE}/login?siguiente=${encodeURIComponent(location.pathname)}`, true);
        else setError(e instanceof ApiError ? e.message : texts.offline);
      });
  }, [uid]);

  const decide = async (allow: boolean) => {
    setBusy(true);
    setError('');
    try {
      const { redirectTo } = await call<{ redirectTo: string }>('POST', `${base}/decision`, { allow });
      location.assign(redirectTo);
    } catch (e) {
      setError(e instanceof ApiError ? e.message : texts.offline);
      setBusy(false);
    }
  };

  if (!consent)
    return (
      <main class="auth">
        <div class="card">
          <p class="brand">Chasqui</p>
          <h1 ref={heading} tabIndex={-1}>
            Conectar una app
          </h1>
          <p role={error ? 'alert' : 'status'}>{error || 'Cargando…'}</p>
        </div>
      </main>
    );

  const { client, account } = consent;
  return (
    <main class="auth">
      <div class="card connect">
        <p class="brand">Chasqui</p>
        <h1 ref={heading} tabIndex={-1}>
          Conectar {client.name} a {account.name}
        </h1>
        <p>
          {client.name} quiere usar tu cuenta de Chasqui desde su chat de IA. Si lo permitís, va a poder, en nombre de {account.name}:
        </p>
        <ul class="connect-list">
          <li>leer tus contactos, conversaciones, mensajes, plantillas, campañas y casos;</li>
          <li>enviar mensajes y plantillas a tus clientes y crear o cambiar contactos;</li>
          <li>mover casos y registrar ventas.</li>
        </ul>
        <p class="hint">
          Podés desconectarla cuando quieras en Configuración → Apps de IA. Solo conectá apps en las que confiás.
          {client.uri && (
            <>
              {' '}
              Sitio de la app: <span class="mono">{client.uri}</span>
            </>
          )}
        </p>
        {!consent.allowed ? (
          <p role="alert">Tu rol no permite conectar apps. Pedíselo a un dueño o administrador de la cuenta.</p>
        ) : consent.atLimit ? (
          <p role="alert">
            Tu plan ya tiene conectadas las {consent.limit} apps de IA que permite. Desconectá una en Configuración → Apps de IA o mejorá el
            plan.
          </p>
        ) : null}
        <p class="form-error" role="alert">
          {error}
        </p>
        <div class="actions">
          {consent.allowed && !consent.atLimit && (
            <button type="button" disabled={busy} onClick={() => decide(true)}>
              Permitir
            </button>
          )}
          <button type="button" class="secondary" disabled={busy} onClick={() => decide(false)}>
            Cancelar
          </button>
        </div>
      </div>
    </main>
  );
}
