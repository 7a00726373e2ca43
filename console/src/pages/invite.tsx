// /console/invite/<token>: the invited member chooses a password (Contraseña, Repetí la
// contraseña, Guardar); then the page sends them to log in.
import { useRef, useState } from 'preact/hooks';
import { ApiError, call } from '../api/client';
import { useFocusOnChange } from '../focus';
import { BASE, navigate } from '../router';
import { texts } from '../texts';
import { Field } from '../ui/field';

interface Errors {
  password?: string;
  repeat?: string;
  form?: string;
}

export function InvitePage({ token }: { token: string }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useFocusOnChange(heading, 'invite');
  const [errors, setErrors] = useState<Errors>({});
  const [busy, setBusy] = useState(false);

  const onSubmit = async (e: SubmitEvent) => {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    const password = String(data.get('password'));
    const repeat = String(data.get('repeat'));
    const found: Errors = {};
    if (password.length < 12 || password.length > 256) found.password = texts.passwordLength;
    else if (password !== repeat) found.repeat = texts.passwordMismatch;
    setErrors(found);
    if (found.password || found.repeat) {
      form.querySelector<HTMLInputElement>(found.password ? '#password' : '#repeat')?.focus();
      return;
    }
    setBusy(true);
    try {
      await call('POST', `${BASE}/api/invites/${encodeURIComponent(token)}`, { password });
      navigate(`${BASE}/login?aviso=contrasena-guardada`);
    } catch (err) {
      const e = err instanceof ApiError ? err : new ApiError(0, texts.offline);
      if (e.fields.password) setErrors({ password: e.fields.password });
      else setErrors({ form: e.message });
      setBusy(false);
    }
  };

  return (
    <main class="auth">
      <form class="card" onSubmit={onSubmit} noValidate>
        <p class="brand">Chasqui</p>
        <h1 ref={heading} tabIndex={-1}>
          Elegí tu contraseña
        </h1>
        <p class="hint">Usá entre 12 y 256 caracteres. Después vas a ingresar con tu email y esta contraseña.</p>
        <Field
          id="password"
          name="password"
          label="Contraseña"
          type="password"
          autoComplete="new-password"
          required
          error={errors.password}
        />
        <Field
          id="repeat"
          name="repeat"
          label="Repetí la contraseña"
          type="password"
          autoComplete="new-password"
          required
          error={errors.repeat}
        />
        <p class="form-error" role="alert">
          {errors.form ?? ''}
        </p>
        <button type="submit" disabled={busy}>
          Guardar
        </button>
      </form>
    </main>
  );
}
