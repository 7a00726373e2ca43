// Schemas shared by many routes: ids, cursor pagination, the error body (for OpenAPI).
import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Services } from '../services.js';

export type ZodApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  ZodTypeProvider
>;

/** A feature's routes: registered inside the /api/v1 (or /admin/v1) plugin with the services. */
export type RoutesFn = (app: ZodApp, services: Services) => void;

// z.guid(): any 8-4-4-4-12 hex id, as PostgreSQL's uuid type accepts (z.uuid() refuses ids
// whose variant bits are not RFC 9562's, e.g. 11111111-1111-1111-1111-111111111111).
export const Uuid = z.guid().describe('UUID').meta({ example: '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e' });
export const IdParams = z.object({ id: Uuid });
export const Timestamp = z.string().describe('ISO 8601 UTC with milliseconds').meta({ example: '2026-11-22T12:00:00.000Z' });

/** The body of an action that takes none: nothing, or an empty object (an unknown field → 400). */
export const NoBody = z.strictObject({}).nullish().describe('No body (or an empty object)');

/** `limit` (1–200) and `after` (a UUID: the last id of the previous page), decisions.md. */
export const CursorQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50).describe('Page size, 1 to 200'),
  after: Uuid.optional().describe('The last id of the previous page'),
});

export const ErrorBody = z
  .object({
    error: z.union([z.string(), z.object({ message: z.string() })]).describe('Argentine Spanish text, meant to be shown as is'),
    cause: z
      .object({
        type: z.literal('upgrade'),
        reason: z.enum(['limit', 'plan']),
        resource: z.string(),
        plan: z.string(),
        limit: z.number().nullable(),
        used: z.number().nullable(),
        suggested: z.string().nullable(),
      })
      .nullable(),
  })
  .describe('Error body (docs/api.md §7)');

/** Standard error responses for the OpenAPI document. */
export const errors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, ErrorBody]));

export const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);

/** Cursor page: fetch limit + 1 rows to know whether more follow. */
export function page<T extends { id: string }>(rows: T[], limit: number): { data: T[]; hasMore: boolean; nextCursor: string | null } {
  const hasMore = rows.length > limit;
  const data = hasMore ? rows.slice(0, limit) : rows;
  return { data, hasMore, nextCursor: hasMore ? (data[data.length - 1]?.id ?? null) : null };
}
