// Operator API: a team member replies in a conversation; the conversation's internal notes.
import { z } from 'zod';
import { memberBy } from '../admin/auth.js';
import { invalid } from '../http/errors.js';
import { textFor } from '../http/messages.es-AR.js';
import { errors, type RoutesFn, Timestamp, Uuid } from '../http/schemas.js';
import { MessageRecord } from '../messages/view.js';
import { listNotes } from './service.js';
import { sendTeamReply } from './team.js';

const ConversationParams = z.object({ id: Uuid, cid: Uuid });

const TeamReplyBody = z
  .strictObject({
    text: z
      .string()
      .min(1)
      .max(4096)
      .optional()
      .describe('Free text: only within 24 h of the contact’s last inbound message; on Instagram at most 1,000 bytes of UTF-8'),
    template: z
      .strictObject({
        id: Uuid.describe('An APPROVED template of the account'),
        variables: z.record(z.string(), z.string()).optional().describe('Variable name → text (fallbacks as POST /api/v1/messages)'),
      })
      .optional(),
    by: z
      .strictObject({ id: z.string().min(1).max(200).optional(), name: z.string().min(1).max(200) })
      .optional()
      .describe('The team member who writes (required with the operator token; a console session is the member itself)'),
  })
  .superRefine((b, ctx) => {
    if (b.text !== undefined && b.template !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['template'], message: textFor('send_not_both') });
    } else if (b.text === undefined && b.template === undefined) {
      ctx.addIssue({ code: 'custom', path: ['text'], message: textFor('send_text_or_template') });
    } else if (b.text !== undefined && b.text.trim() === '') {
      ctx.addIssue({ code: 'custom', path: ['text'], message: textFor('text_blank') });
    }
  });

const NotesPage = z.object({
  data: z.array(
    z.object({
      id: Uuid,
      text: z.string(),
      by: z.object({ type: z.string(), id: z.string().nullable(), name: z.string() }).describe('Who wrote it (automation, agent or team)'),
      caseId: Uuid.nullable(),
      createdAt: Timestamp,
    }),
  ),
});

export const conversationAdminRoutes: RoutesFn = (app, s) => {
  app.post(
    '/accounts/:id/conversations/:cid/messages',
    {
      schema: {
        summary: 'A team member replies in the conversation (source team)',
        description:
          'Sent to the contact from the conversation’s number with the rules of POST /api/v1/messages. The open case becomes handled by a person, a running automation execution is cancelled and the conversation shows the team as handling it while the case stays open.',
        tags: ['Operator'],
        params: ConversationParams,
        body: TeamReplyBody,
        response: { 201: MessageRecord, ...errors(400, 401, 404, 409, 502) },
      },
    },
    async (req, reply) => {
      const by = memberBy(req) ?? req.body.by;
      if (!by) throw invalid(['by'], textFor('team_reply_by_required'));
      const record = await sendTeamReply(s, req.params.id, req.params.cid, { ...req.body, by });
      return reply.code(201).send(record);
    },
  );

  app.get(
    '/accounts/:id/conversations/:cid/notes',
    {
      schema: {
        summary: "The conversation's internal notes for the team, oldest first",
        tags: ['Operator'],
        params: ConversationParams,
        response: { 200: NotesPage, ...errors(401, 404) },
      },
    },
    async (req) => {
      return listNotes(s.db, req.params.id, req.params.cid);
    },
  );
};
