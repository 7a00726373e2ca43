// /console/login: Email, Contraseña, Ingresar (console.md "Pages"). A failure is announced in a
// live region; 429 says to wait; success goes to the inbox, or back to the console page that sent
// the member here (`siguiente`, only a path of the console itself).
import { useRef, useState } from 'preact/hooks';
import { ApiError, call } from '../api/client';
import { useFocusOnChange } from '../focus';
import { BASE, navigate } from '../router';
import { texts } from '../texts';
import { Field } from '../ui/field';

const notices: Record<string, string> = {
  'contrasena-guardada': texts.passwordSaved,
  'sesion-cerrada': texts.sessionEnded,
  'sesion-vencida': texts.sessionLost,
};

export function LoginPage({ notice, next }: { notice: string | null; next?: string | null }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useFocusOnChange(heading, 'login');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  const onSubmit = async (e: SubmitEvent) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    setBusy(true);
    setError('');
    try {
      await call('POST', `${BASE}/api/login`, { email: String(form.get('email')), password: String(form.get('password')) });
      navigate(next && /^\/console\/[\w/-]+$/.test(next) ? next : `${BASE}/conversaciones`);
    } catch (err) {
      const e = err instanceof ApiError ? err : new ApiError(0, texts.offline);
      if (e.status === 401) setError(texts.loginFailed);
      else if (e.status === 429) setError(texts.tooManyAttempts(e.retryAfter));
      else setError(e.message);
      setBusy(false);
    }
  };

  return (
    <main class="auth">
      <form class="card" onSubmit={onSubmit} noValidate={false}>
        <p class="brand">Chasqui</p>
        <h1 ref={heading} tabIndex={-1}>
          Ingresá a la consola
        </h1>
        {notice && notices[notice] && (
          <p class="notice" role="status">
            {notices[notice]}
          </p>
        )}
        <Field id="email" name="email" label="Email" type="email" autoComplete="username" required />
        <Field id="password" name="password" label="Contraseña" type="password" autoComplete="current-password" required />
        <p class="form-error" role="alert" aria-live="assertive">
          {error}
        </p>
        <button type="submit" disabled={busy}>
          Ingresar
        </button>
      </form>
    </main>
  );
}
