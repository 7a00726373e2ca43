// The test chat (POST …/agents/{agentId}/test): what you write as a customer, the agent's replies
// and its decisions (goal reached with its data, handoff with the reason), in a `log`. It keeps
// the test conversation's id to continue it; `Empezar de nuevo` forgets it.
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { call } from '../../api/client';
import { Field } from '../../ui/field';
import { messageOf } from '../config/load';
import { agentTexts as t } from './texts';

interface Turn {
  replies: string[];
  toolCalls: { name: string; arguments: Record<string, unknown> }[];
  testConversationId: string;
}
interface Line {
  who: 'you' | 'agent' | 'decision';
  text: string;
}

const dataText = (d: unknown): string =>
  d && typeof d === 'object'
    ? Object.entries(d as Record<string, unknown>)
        .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`)
        .join(', ')
    : '';

/** The turn as lines: each reply, then each decision the model made. */
function linesOf(turn: Turn): Line[] {
  const out: Line[] = turn.replies.map((text) => ({ who: 'agent' as const, text }));
  for (const c of turn.toolCalls) {
    if (c.name === 'goal_reached') out.push({ who: 'decision', text: t.goalReached(dataText(c.arguments.data)) });
    if (c.name === 'hand_off') out.push({ who: 'decision', text: t.handOff(String(c.arguments.reason ?? '')) });
  }
  if (out.length === 0) out.push({ who: 'decision', text: t.noReply });
  return out;
}

export function TestChat({ path }: { path: string }) {
  const [lines, setLines] = useState<Line[]>([]);
  const [conversation, setConversation] = useState<string | null>(null);
  const [text, setText] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const log = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    if (log.current) log.current.scrollTop = log.current.scrollHeight;
  }, [lines]);

  const send = async (e: SubmitEvent) => {
    e.preventDefault();
    setBusy(true);
    setError('');
    try {
      const turn = await call<Turn>('POST', `${path}/test`, { text, ...(conversation ? { conversationId: conversation } : {}) });
      setLines([...lines, { who: 'you', text }, ...linesOf(turn)]);
      setConversation(turn.testConversationId);
      setText('');
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
      document.getElementById('test-message')?.focus();
    }
  };

  return (
    <div class="test-chat">
      <p class="hint">{t.chatHint}</p>
      <div class="chat" role="log" aria-label="Chat de prueba" ref={log}>
        <ol>
          {lines.length === 0 && <li class="hint">{t.chatEmpty}</li>}
          {lines.map((l, i) => (
            <li key={i} class={`bubble bubble-${l.who}`}>
              <span class="speaker">{l.who === 'you' ? t.you : l.who === 'agent' ? t.agent : t.decision}: </span>
              {l.text}
            </li>
          ))}
        </ol>
      </div>
      <form class="chat-form" onSubmit={send}>
        <Field
          id="test-message"
          label="Mensaje de prueba"
          value={text}
          required
          maxLength={4096}
          autocomplete="off"
          onInput={(e) => setText((e.currentTarget as HTMLInputElement).value)}
          error={error}
        />
        <div class="actions">
          <button type="submit" disabled={busy}>
            Enviar
          </button>
          <button
            type="button"
            class="secondary"
            disabled={busy || lines.length === 0}
            onClick={() => {
              setLines([]);
              setConversation(null);
            }}
          >
            {t.restart}
          </button>
        </div>
      </form>
    </div>
  );
}
