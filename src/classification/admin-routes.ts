// Operator API: the reasons catalogue (docs/operator.md "Reasons").
import { z } from 'zod';
import { IdParams, type RoutesFn, Uuid } from '../http/schemas.js';
import { createReason, deleteReason, getReason, listReasons, ReasonCreate, ReasonPatch, ReasonView, updateReason } from './reasons.js';

const ReasonParams = z.object({ id: Uuid, reasonId: Uuid });

export const reasonAdminRoutes: RoutesFn = (app, s) => {
  app.post(
    '/accounts/:id/reasons',
    {
      schema: {
        summary: 'Add a reason to the catalogue the classifier chooses from (names unique in the account)',
        tags: ['Operator'],
        params: IdParams,
        body: ReasonCreate,
        response: { 201: ReasonView },
      },
    },
    async (req, reply) => reply.code(201).send(await createReason(s, req.params.id, req.body)),
  );

  app.get(
    '/accounts/:id/reasons',
    {
      schema: {
        summary: "The account's reasons, oldest first",
        tags: ['Operator'],
        params: IdParams,
        response: { 200: z.object({ data: z.array(ReasonView) }) },
      },
    },
    async (req) => {
      return { data: await listReasons(s.db, req.params.id) };
    },
  );

  app.get(
    '/accounts/:id/reasons/:reasonId',
    { schema: { summary: 'One reason', tags: ['Operator'], params: ReasonParams, response: { 200: ReasonView } } },
    async (req) => getReason(s.db, req.params.id, req.params.reasonId),
  );

  app.patch(
    '/accounts/:id/reasons/:reasonId',
    {
      schema: {
        summary: 'Change a reason (the fields sent replace the stored ones; sub-reasons keep the ids sent)',
        tags: ['Operator'],
        params: ReasonParams,
        body: ReasonPatch,
        response: { 200: ReasonView },
      },
    },
    async (req) => updateReason(s, req.params.id, req.params.reasonId, req.body),
  );

  app.delete(
    '/accounts/:id/reasons/:reasonId',
    {
      schema: {
        summary: 'Remove a reason from the catalogue (cases keep the reason they carry)',
        tags: ['Operator'],
        params: ReasonParams,
      },
    },
    async (req, reply) => {
      await deleteReason(s, req.params.id, req.params.reasonId);
      return reply.code(204).send();
    },
  );
};
