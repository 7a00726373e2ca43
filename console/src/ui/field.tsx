// A labelled input: visible label, aria-invalid and aria-describedby to the full error text.
import type { InputHTMLAttributes } from 'preact';

type FieldProps = InputHTMLAttributes<HTMLInputElement> & { id: string; label: string; error?: string };

export function Field({ id, label, error, ...input }: FieldProps) {
  const errorId = `${id}-error`;
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input id={id} aria-invalid={error ? 'true' : undefined} aria-describedby={error ? errorId : undefined} {...input} />
      {error && (
        <p id={errorId} class="field-error">
          {error}
        </p>
      )}
    </div>
  );
}
