// The MCP tools that read (mcp.md "Tools"): each calls the service function of its REST route,
// so its structuredContent is that route's JSON for the same account.
import { z } from 'zod';
import { listAutomationRows } from '../automations/service.js';
import { publicAutomationView } from '../automations/view.js';
import { listCampaigns } from '../campaigns/service.js';
import { getPipeline, listPipelines } from '../cases/pipelines.js';
import { getCaseView, listPipelineCases } from '../cases/service.js';
import { contactView, getContact, listContacts } from '../contacts/service.js';
import { listConversationMessages, listConversations } from '../conversations/service.js';
import { Uuid } from '../http/schemas.js';
import { getMessage } from '../messages/service.js';
import { TemplateCategory, TemplateStatus } from '../templates/schemas.js';
import { listTemplates } from '../templates/service.js';
import { answer, tool } from './kit.js';

const Id = (what: string) => Uuid.describe(what);
const Limit = z.number().int().min(1).max(200).default(50).describe('Cuántos traer, de 1 a 200 (50 si no lo mandás)');
const After = Uuid.optional().describe('Para la página siguiente: el nextCursor de la respuesta anterior');
const Page = { limit: Limit, after: After };

const count = (n: number, one: string, many: string) => `${n === 0 ? 'No hay' : n} ${n === 1 ? one : many}.`;
const NEXT_CURSOR = ' Hay más: pedí la página siguiente con after = nextCursor.';
const counted = (p: { data: unknown[]; hasMore: boolean }, one: string, many: string, next = NEXT_CURSOR) =>
  count(p.data.length, one, many) + (p.hasMore ? next : '');

export const readTools = [
  tool({
    name: 'get_account',
    description:
      'Muestra la cuenta: plan, límites, uso del mes y números de WhatsApp conectados (con su phoneNumberId). Usala para saber desde qué número se envía y cuánto cupo queda.',
    input: z.strictObject({}),
    readOnly: true,
    run: async ({ s, account }) => {
      const view = JSON.parse(await s.accountViews.json(account)) as { name: string; plan: string };
      return answer(`Cuenta "${view.name}", plan ${view.plan}.`, view);
    },
  }),
  tool({
    name: 'list_templates',
    description:
      'Lista las plantillas de WhatsApp de la cuenta con su estado, categoría, cuerpo y variables. Solo las APPROVED se pueden enviar; usala antes de send_message con template para elegir el id y ver qué variables lleva.',
    input: z.strictObject({
      status: TemplateStatus.optional().describe('Solo las de este estado (APPROVED para las que se pueden enviar)'),
      category: TemplateCategory.optional().describe('Solo las de esta categoría'),
    }),
    readOnly: true,
    run: async ({ s, account }, q) => {
      const data = await listTemplates(s.db, account.id, q);
      return answer(count(data.length, 'plantilla', 'plantillas'), { data });
    },
  }),
  tool({
    name: 'list_contacts',
    description: 'Lista los contactos de la cuenta, del más viejo al más nuevo, de a páginas (limit, after).',
    input: z.strictObject(Page),
    readOnly: true,
    run: async ({ s, account }, q) => {
      const p = await listContacts(s.db, account.id, q);
      return answer(counted(p, 'contacto', 'contactos'), p);
    },
  }),
  tool({
    name: 'get_contact',
    description: 'Trae un contacto por su id: teléfono, nombre, atributos y si pidió no recibir mensajes (optedOut).',
    input: z.strictObject({ id: Id('El id del contacto') }),
    readOnly: true,
    run: async ({ s, account }, { id }) => {
      const c = contactView(await getContact(s.db, account.id, id));
      return answer(`Contacto ${c.name || c.phone || c.id}.`, c);
    },
  }),
  tool({
    name: 'get_message',
    description:
      'Trae un mensaje por su id con su estado de entrega (sent, delivered, read o failed, con el motivo si falló). Usala para seguir un mensaje enviado con send_message.',
    input: z.strictObject({ id: Id('El id del mensaje (el que devolvió send_message)') }),
    readOnly: true,
    run: async ({ s, account }, { id }) => {
      const m = await getMessage(s.db, account.id, id);
      return answer(`Mensaje en estado ${m.status}.`, m);
    },
  }),
  tool({
    name: 'list_conversations',
    description:
      'Lista las conversaciones de la cuenta (una por contacto y número), de la más vieja a la más nueva, de a páginas. Cada una dice si la ventana de 24 horas para texto libre está abierta y quién la atiende.',
    input: z.strictObject({
      ...Page,
      contactId: Uuid.optional().describe('Solo las conversaciones de este contacto'),
      channel: z.enum(['whatsapp', 'socialchat']).optional().describe('Solo las de este canal'),
    }),
    readOnly: true,
    run: async ({ s, account }, q) => {
      const p = await listConversations(s.db, account.id, q);
      return answer(counted(p, 'conversación', 'conversaciones'), p);
    },
  }),
  tool({
    name: 'get_conversation_messages',
    description:
      'Lista los mensajes de una conversación en los dos sentidos, del más viejo al más nuevo, de a páginas. `from` dice quién escribió: contact, o el origen del envío (api, campaign, automation, agent, team).',
    input: z.strictObject({ conversationId: Id('El id de la conversación (de list_conversations)'), ...Page }),
    readOnly: true,
    run: async ({ s, account }, { conversationId, ...q }) => {
      const p = await listConversationMessages(s.db, account.id, conversationId, q);
      return answer(counted(p, 'mensaje', 'mensajes'), p);
    },
  }),
  tool({
    name: 'list_campaigns',
    description: 'Lista las últimas 100 campañas de la cuenta, de la más nueva a la más vieja, con sus contadores de envío.',
    input: z.strictObject({}),
    readOnly: true,
    run: async ({ s, account }) => {
      const data = await listCampaigns(s.db, account.id);
      return answer(count(data.length, 'campaña', 'campañas'), { data });
    },
  }),
  tool({
    name: 'list_pipelines',
    description:
      'Lista los embudos de la cuenta con sus etapas (id, nombre, tipo open/won/lost). Usala para conocer los pipelineId de list_cases y los stageId de move_case_stage.',
    input: z.strictObject(Page),
    readOnly: true,
    run: async ({ s, account }, q) => {
      const p = await listPipelines(s.db, account.id, q);
      return answer(counted(p, 'embudo', 'embudos'), p);
    },
  }),
  tool({
    name: 'list_cases',
    description:
      'Lista los casos (consultas de clientes) de un embudo, del más nuevo al más viejo, con filtros por etapa y estado. Para la página siguiente pasá offset = nextOffset.',
    input: z.strictObject({
      pipelineId: Id('El id del embudo (de list_pipelines)'),
      stage: Uuid.optional().describe('Solo los casos en esta etapa (un stageId)'),
      status: z
        .enum(['open', 'closed', 'all'])
        .default('all')
        .describe('open (abiertos), closed (cerrados) o all (todos, si no lo mandás)'),
      limit: Limit,
      offset: z.number().int().min(0).default(0).describe('Cuántos casos saltear (0 si no lo mandás)'),
    }),
    readOnly: true,
    run: async ({ s, account }, { pipelineId, ...q }) => {
      const p = await getPipeline(s.db, account.id, pipelineId);
      const r = await listPipelineCases(s.db, p.id, q);
      return answer(counted(r, 'caso', 'casos', ' Hay más: pedí la página siguiente con offset = nextOffset.'), r);
    },
  }),
  tool({
    name: 'get_case',
    description: 'Trae un caso por su id: contacto, estado, etapa del embudo, motivo, resultado (venta o pérdida) y quién lo atendió.',
    input: z.strictObject({ id: Id('El id del caso') }),
    readOnly: true,
    run: async ({ s, account }, { id }) => {
      const c = await getCaseView(s.db, account.id, id);
      const stage = c.stage ? `, etapa "${c.stage.stage.name}"` : '';
      return answer(`Caso ${c.status === 'open' ? 'abierto' : 'cerrado'}${stage}.`, c);
    },
  }),
  tool({
    name: 'list_automations',
    description:
      'Lista las automatizaciones de la cuenta (sin sus pasos), de la más nueva a la más vieja, con su estado. Solo las active se pueden iniciar con start_automation.',
    input: z.strictObject({}),
    readOnly: true,
    run: async ({ s, account }) => {
      const data = (await listAutomationRows(s.db, account.id)).map(publicAutomationView);
      return answer(count(data.length, 'automatización', 'automatizaciones'), { data });
    },
  }),
] as const;
