// An automation as the operator routes answer it, and its Activar / Pausar button (PATCH status;
// pausing cancels its running executions, docs/automations.md).
import { useState } from 'preact/hooks';
import { call } from '../../api/client';
import { messageOf } from '../config/load';
import { autoTexts as t } from './texts';

export interface Automation {
  id: string;
  name: string;
  status: 'draft' | 'active' | 'paused';
  trigger: Record<string, unknown>;
  steps: Record<string, unknown>[];
  phoneNumberId: string | null;
  webhookUrl: string | null;
  /** Only in the list (GET …/automations). */
  executions?: Record<string, number>;
}

export function StatusButton({
  base,
  automation,
  onDone,
  onError,
}: {
  base: string;
  automation: Automation;
  onDone: (text: string) => void;
  onError: (text: string) => void;
}) {
  const [busy, setBusy] = useState(false);
  const active = automation.status === 'active';
  const change = async () => {
    setBusy(true);
    try {
      await call('PATCH', `${base}/automations/${automation.id}`, { status: active ? 'paused' : 'active' });
      onDone(active ? t.paused : t.activated);
    } catch (e) {
      onError(messageOf(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <button type="button" class={active ? 'secondary' : undefined} disabled={busy} onClick={change}>
      {active ? 'Pausar' : 'Activar'}
    </button>
  );
}
