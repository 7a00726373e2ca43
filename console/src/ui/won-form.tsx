// A sale's amount (console.md "Case panel" and "Casos"): textbox `Monto`, textbox `Moneda` (ARS
// by default), button `Confirmar`. Shared by the inbox's case panel (Ganado) and the Casos board
// (a move to a `won` stage). An empty or unreadable Monto sends no amount; `1.500,50` and
// `1500.50` both read as 1500.5, `1.500` as 1500.
import type { ComponentChildren } from 'preact';
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import './won-form.css';

const words = { amount: 'Monto', currency: 'Moneda', confirm: 'Confirmar' };

export interface Sale {
  amount?: number;
  currency: string;
}

/** "1.500,50" → 1500.5, "1.500" → 1500, "1500.50" → 1500.5, "" → undefined. */
export function parseAmount(text: string): number | undefined {
  const t = text.trim().replace(/\s/g, '');
  if (!t) return undefined;
  // A comma is the decimal mark (dots then group thousands); without one, "1.500" is thousands too.
  const normal = t.includes(',') ? t.replace(/\./g, '').replace(',', '.') : /^\d{1,3}(\.\d{3})+$/.test(t) ? t.replace(/\./g, '') : t;
  const n = Number(normal);
  return Number.isFinite(n) ? n : undefined;
}

export function WonForm({
  idPrefix,
  onConfirm,
  busy = false,
  autoFocus = false,
  children,
}: {
  idPrefix: string;
  onConfirm: (sale: Sale) => void;
  busy?: boolean;
  autoFocus?: boolean;
  /** More buttons next to Confirmar (e.g. Cancelar). */
  children?: ComponentChildren;
}) {
  const [amount, setAmount] = useState('');
  const [currency, setCurrency] = useState('ARS');
  const first = useRef<HTMLInputElement>(null);
  useLayoutEffect(() => {
    if (autoFocus) first.current?.focus();
  }, []);
  return (
    <form
      class="won-form"
      onSubmit={(e) => {
        e.preventDefault();
        const n = parseAmount(amount);
        onConfirm({ ...(n !== undefined ? { amount: n } : {}), currency: currency.trim() || 'ARS' });
      }}
    >
      <div class="field">
        <label for={`${idPrefix}-amount`}>{words.amount}</label>
        <input
          id={`${idPrefix}-amount`}
          ref={first}
          inputMode="decimal"
          value={amount}
          onInput={(e) => setAmount((e.target as HTMLInputElement).value)}
        />
      </div>
      <div class="field">
        <label for={`${idPrefix}-currency`}>{words.currency}</label>
        <input
          id={`${idPrefix}-currency`}
          maxLength={3}
          value={currency}
          onInput={(e) => setCurrency((e.target as HTMLInputElement).value)}
        />
      </div>
      <div class="actions">
        <button type="submit" disabled={busy}>
          {words.confirm}
        </button>
        {children}
      </div>
    </form>
  );
}
