// The MCP tools that change something (mcp.md "Tools"): the service functions of the REST routes,
// with the app as who did it (`{type: "ai_app", id, name}`, outcomeSource `api`). Sending and
// starting an automation count against the account's message minute cap first.
import { z } from 'zod';
import { startAndSettle } from '../automations/executions.js';
import { StartVariables } from '../automations/routes.js';
import { getAutomationRow } from '../automations/service.js';
import { OutcomeBody } from '../cases/routes.js';
import { changeStage, setOutcome } from '../cases/service.js';
import { ContactInput } from '../contacts/schemas.js';
import { saveContactFromApi } from '../contacts/service.js';
import { Uuid } from '../http/schemas.js';
import { sendMessage } from '../messages/send.js';
import { answer, type ToolCaller, tool } from './kit.js';

// The phone rules of each REST body: POST /messages checks the number in the send, an execution start caps its length.
const PHONE = 'Teléfono del cliente en formato internacional, con código de país (ej. +54 9 11 5555-5555)';

/** The account's message minute cap (api.md §8): an ApiError to refuse with, or nothing. */
async function admitMessage(c: ToolCaller): Promise<void> {
  const refused = await c.s.limiter.admitMessage(c.caps);
  if (refused) throw refused;
}

const outcome = OutcomeBody.shape;

export const writeTools = [
  tool({
    name: 'upsert_contact',
    description:
      'Crea un contacto o actualiza el que ya tiene ese teléfono (distintas formas de escribir el mismo número son el mismo contacto). El nombre se reemplaza solo si lo mandás; los atributos se combinan: solo cambian las claves que mandás y null borra una.',
    input: z.strictObject({
      phone: ContactInput.shape.phone.describe('Teléfono en formato internacional, con código de país (ej. +54 9 11 5555-5555)'),
      name: ContactInput.shape.name.describe('Nombre del contacto'),
      attributes: ContactInput.shape.attributes.describe(
        'Campos propios, ej. {"ciudad": "Rosario"}: claves de letras sin acento, números o _; valores de texto; null borra la clave',
      ),
    }),
    readOnly: false,
    run: async ({ s, account }, input) => {
      const { contact, created } = await saveContactFromApi(s, account, input);
      return answer(created ? 'Contacto creado.' : 'Contacto actualizado.', contact);
    },
  }),
  tool({
    name: 'send_message',
    description:
      'Envía un WhatsApp a un teléfono: text (texto libre, solo dentro de las 24 horas desde el último mensaje del cliente) o template (una plantilla APPROVED, en cualquier momento), uno de los dos. Que responda no significa que llegó: seguilo con get_message.',
    input: z.strictObject({
      to: z.string().describe(PHONE),
      text: z.string().min(1).max(4096).optional().describe('Texto libre: solo si el cliente escribió en las últimas 24 horas'),
      template: z
        .strictObject({
          id: Uuid.describe('El id de una plantilla APPROVED (de list_templates)'),
          variables: z
            .record(z.string(), z.string())
            .optional()
            .describe(
              'Nombre de variable → texto; las que falten salen del atributo del contacto con ese nombre o del ejemplo de la plantilla',
            ),
        })
        .optional()
        .describe('La plantilla a enviar'),
      phoneNumberId: z
        .string()
        .max(200)
        .optional()
        .describe('El número desde el que se envía (de get_account); si no lo mandás, el predeterminado'),
    }),
    readOnly: false,
    run: async (c, input) => {
      await admitMessage(c);
      const m = await sendMessage(c.s, c.account, { ...input, app: c.by });
      return answer(`Mensaje enviado al proveedor (estado ${m.status}). Seguí su entrega con get_message id ${m.id}.`, m);
    },
  }),
  tool({
    name: 'set_case_outcome',
    description:
      'Marca el resultado de un caso: venta (won) o pérdida (lost), con monto, moneda, nota y tu referencia si los tenés. Vale también en casos cerrados; una llamada nueva reemplaza el resultado. No cambia el estado del caso.',
    input: z.strictObject({
      caseId: Uuid.describe('El id del caso'),
      result: outcome.result.describe('won (venta) o lost (pérdida)'),
      amount: outcome.amount.describe('Monto de la venta'),
      currency: outcome.currency.describe('Código de moneda ISO 4217 de 3 letras, ej. ARS o USD'),
      note: outcome.note.describe('Una nota sobre el resultado'),
      externalId: outcome.externalId.describe('Tu referencia, ej. el número de pedido'),
    }),
    readOnly: false,
    run: async (c, { caseId, ...input }) => {
      const v = await setOutcome(c.s, c.account.id, caseId, input, 'api', c.by);
      return answer(`Resultado del caso: ${v.outcome === 'won' ? 'venta' : 'pérdida'}.`, v);
    },
  }),
  tool({
    name: 'move_case_stage',
    description:
      'Mueve un caso abierto a otra etapa de su embudo (los stageId salen de list_pipelines). Una etapa de tipo won o lost además cierra el caso. Un caso cerrado no se mueve.',
    input: z.strictObject({
      caseId: Uuid.describe('El id del caso'),
      stageId: Uuid.describe('El id de la etapa destino, del embudo del caso'),
      amount: z.number().min(0).max(99_999_999_999_999).optional().describe('Monto de la venta (en etapas won)'),
    }),
    readOnly: false,
    run: async (c, { caseId, ...input }) => {
      const v = await changeStage(c.s, c.account.id, caseId, input, c.by);
      return answer(`Caso en la etapa "${v.stage?.stage.name}"${v.status === 'closed' ? ' (quedó cerrado)' : ''}.`, v);
    },
  }),
  tool({
    name: 'start_automation',
    description:
      'Inicia una automatización activa (de list_automations) para el teléfono de un cliente. Responde cuando la automatización llega a su primera espera o termina, con su estado.',
    input: z.strictObject({
      automationId: Uuid.describe('El id de la automatización'),
      to: z.string().min(1).max(40).describe(PHONE),
      variables: StartVariables.optional().describe('Textos que la automatización lee como {{nombre}} (hasta 100)'),
      phoneNumberId: Uuid.optional().describe(
        'El número desde el que escribe; si no lo mandás, el de la automatización o el predeterminado',
      ),
    }),
    readOnly: false,
    run: async (c, { automationId, ...input }) => {
      const automation = await getAutomationRow(c.s.db, c.account.id, automationId);
      await admitMessage(c);
      const e = await startAndSettle(c.s, { account: c.account, automation, ...input, trigger: 'api' });
      return answer(`Automatización "${automation.name}" iniciada (estado ${e.status}).`, e);
    },
  }),
] as const;
