// The body of the Cloud API's POST /{phone-number-id}/messages, and the wamid of its answer.
import type { SendRequest } from '../types.js';

export interface GraphTextParameter {
  type: 'text';
  text: string;
  /** Only for templates with named parameters ({{first_name}}). */
  parameter_name?: string;
}

export type GraphComponent =
  | { type: 'header' | 'body'; parameters: GraphTextParameter[] }
  | { type: 'button'; sub_type: 'url'; index: string; parameters: GraphTextParameter[] };

export interface GraphSendBody {
  messaging_product: 'whatsapp';
  recipient_type: 'individual';
  to: string;
  /** Our message id: Meta echoes it in the message's status webhooks (docs/cloud.md "Reconciliation"). */
  biz_opaque_callback_data: string;
  type: 'text' | 'template';
  text?: { body: string };
  template?: {
    name: string;
    language: { code: string };
    components?: GraphComponent[];
  };
}

const POSITIONAL = /^\d+$/;
/** Our names for a positional template's header variables (its body keeps `1`, `2`…). */
const HEADER_POSITIONAL = /^header_\d+$/;

/**
 * The documented send body. The template's `variables` come in the order of its parameters,
 * each with the component it fills: header text, body, or the URL of a button (Graph's
 * `components`, in that order). Named templates ({{first_name}}) send `parameter_name` in the header and the body;
 * positional ones ({{1}}, {{2}}) bare parameters in number order; URL buttons take one bare
 * parameter each. Every send carries our message id in `biz_opaque_callback_data`, so a status of
 * a send whose wamid was never stored still finds its message (messages/status.ts).
 */
export function buildSendBody(req: SendRequest): GraphSendBody {
  const base = {
    messaging_product: 'whatsapp' as const,
    recipient_type: 'individual' as const,
    to: req.to,
    biz_opaque_callback_data: req.messageId,
  };
  if (req.template) {
    const t = req.template;
    const { variables } = t;
    const named = variables.some((v) => v.component !== 'button' && !POSITIONAL.test(v.name) && !HEADER_POSITIONAL.test(v.name));
    const header: GraphTextParameter[] = [];
    const body: GraphTextParameter[] = [];
    const buttons = new Map<number, GraphTextParameter[]>();
    t.parameters.forEach((text, i) => {
      const v = variables[i];
      if (v?.component === 'button') {
        const list = buttons.get(v.button ?? 0) ?? [];
        list.push({ type: 'text', text });
        buttons.set(v.button ?? 0, list);
        return;
      }
      // The header's positional names are ours (header_1…): Graph only needs their order.
      const param: GraphTextParameter = named && v ? { type: 'text', parameter_name: v.name, text } : { type: 'text', text };
      (v?.component === 'header' ? header : body).push(param);
    });
    const components: GraphComponent[] = [
      ...(header.length > 0 ? [{ type: 'header' as const, parameters: header }] : []),
      ...(body.length > 0 ? [{ type: 'body' as const, parameters: body }] : []),
      ...[...buttons.entries()]
        .sort(([a], [b]) => a - b)
        .map(([index, parameters]) => ({ type: 'button' as const, sub_type: 'url' as const, index: String(index), parameters })),
    ];
    return {
      ...base,
      type: 'template',
      template: {
        name: t.name,
        language: { code: t.language },
        ...(components.length > 0 ? { components } : {}),
      },
    };
  }
  return { ...base, type: 'text', text: { body: req.text ?? '' } };
}

/** The send response: `messages[0].id` is the wamid. */
export function wamidFrom(res: unknown): string | null {
  const id = (res as { messages?: { id?: unknown }[] } | null)?.messages?.[0]?.id;
  return typeof id === 'string' && id.length > 0 ? id : null;
}
