// One case on the board: a link to its conversation named after the contact, the last message's
// time, the score bucket, the amount of a sale, the reason and who answered; an open case can be
// dragged to another column or moved with its `Mover a…` menu.
import { useLayoutEffect, useRef } from 'preact/hooks';
import { BASE, Link } from '../../router';
import { MoveMenu } from './move-menu';
import { casesTexts as t } from './texts';
import { type BoardCase, type Stage, who } from './types';

const when = (iso: string): string => {
  const d = new Date(iso);
  return new Date().toDateString() === d.toDateString()
    ? d.toLocaleTimeString('es-AR', { hour: '2-digit', minute: '2-digit' })
    : d.toLocaleDateString('es-AR', { day: '2-digit', month: '2-digit' });
};

function money(amount: number, currency: string | null): string {
  try {
    return new Intl.NumberFormat('es-AR', { style: 'currency', currency: currency ?? 'ARS', maximumFractionDigits: 2 }).format(amount);
  } catch {
    return `${amount.toLocaleString('es-AR')} ${currency ?? ''}`.trim();
  }
}

/** The sale's amount: the outcome's, or the amount the won stage carries. */
const amountOf = (c: BoardCase): string | null =>
  c.outcomeAmount !== null
    ? money(c.outcomeAmount, c.outcomeCurrency)
    : c.stage?.amount !== undefined && c.stage.stage.kind === 'won'
      ? money(c.stage.amount, 'ARS')
      : null;

export function Card({
  c,
  stages,
  focus,
  onFocused,
  onPick,
}: {
  c: BoardCase;
  stages: Stage[];
  /** Take the focus (after a move): the Mover a… button, or the link of a closed case. */
  focus: boolean;
  onFocused: () => void;
  onPick: (c: BoardCase, s: Stage) => void;
}) {
  const item = useRef<HTMLLIElement>(null);
  const mover = useRef<HTMLButtonElement>(null);
  const open = c.status === 'open';
  useLayoutEffect(() => {
    if (!focus) return;
    (mover.current ?? item.current?.querySelector('a'))?.focus();
    onFocused();
  }, [focus]);
  const nameId = `card-${c.id}-who`;
  const amount = amountOf(c);
  const others = stages.filter((s) => s.id !== c.stage?.stage.id);
  return (
    <li
      ref={item}
      class={`case-card${open ? '' : ' is-closed'}`}
      draggable={open}
      onDragStart={(e) => {
        e.dataTransfer?.setData('text/plain', c.id);
        if (e.dataTransfer) e.dataTransfer.effectAllowed = 'move';
      }}
    >
      <Link id={nameId} class="case-who" href={`${BASE}/conversaciones/${c.conversationId}`}>
        {who(c)}
      </Link>
      <p class="case-meta">
        {c.lastMessageAt && (
          <time dateTime={c.lastMessageAt} title={t.lastMessage}>
            <span class="sr-only">{t.lastMessage}: </span>
            {when(c.lastMessageAt)}
          </time>
        )}
        {c.scoreBucket && (
          <span class={`bucket bucket-${c.scoreBucket}`}>
            <span class="sr-only">{t.scoreLabel}: </span>
            {t.bucket[c.scoreBucket]}
          </span>
        )}
        {amount && <span class="amount">{amount}</span>}
      </p>
      <p class="case-sub">
        {[c.reason, c.handledBy !== 'none' ? t.handledOptions[c.handledBy] : null, open ? null : t.closed].filter(Boolean).join(' · ')}
      </p>
      {open && others.length > 0 && (
        <MoveMenu id={`move-${c.id}`} stages={others} describedBy={nameId} buttonRef={mover} onPick={(s) => onPick(c, s)} />
      )}
    </li>
  );
}
