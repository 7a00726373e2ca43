// Schemas of the template routes (api.md §2 "Template"; decisions.md "Resources"; operator.md).
import { z } from 'zod';
import { textFor } from '../http/messages.es-AR.js';
import { Timestamp, Uuid } from '../http/schemas.js';

export const TEMPLATE_STATUSES = ['APPROVED', 'PENDING', 'REJECTED', 'PAUSED', 'DISABLED'] as const;
export const TEMPLATE_CATEGORIES = ['MARKETING', 'UTILITY', 'AUTHENTICATION'] as const;

/** `{{name}}` placeholders of a body, spaces inside the braces allowed (as the channel does). */
export const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g;
export const placeholders = (body: string): string[] => [...new Set([...body.matchAll(PLACEHOLDER)].map((m) => m[1]!))];

export const TemplateStatus = z.enum(TEMPLATE_STATUSES).describe(TEMPLATE_STATUSES.join(' | '));
export const TemplateCategory = z.enum(TEMPLATE_CATEGORIES).describe(TEMPLATE_CATEGORIES.join(' | '));

export const TemplateVariableView = z.object({
  name: z.string().describe('The key used in `template.variables` when sending').meta({ example: 'nombre' }),
  label: z.string().meta({ example: 'Nombre del cliente' }),
  example: z.string().describe('Sent when the variable is missing and the contact has no attribute of that name').meta({ example: 'Ana' }),
});

export const TemplateView = z
  .object({
    id: Uuid,
    name: z.string().meta({ example: 'confirmacion_pedido' }),
    category: z.string().describe(TEMPLATE_CATEGORIES.join(' | ')),
    language: z.string().meta({ example: 'es_AR' }),
    status: z.string().describe(TEMPLATE_STATUSES.join(' | ')),
    body: z.string().describe('Text with {{variable}} placeholders').meta({ example: 'Hola {{nombre}}, tu pedido {{pedido}} está listo.' }),
    variables: z.array(TemplateVariableView),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .describe('Template (docs/api.md §2)');

export const TemplateList = z.object({ data: z.array(TemplateView) });

export const TemplateQuery = z.object({
  status: TemplateStatus.optional().describe('Only templates in this status'),
  category: TemplateCategory.optional().describe('Only templates of this category'),
});

const VariableInput = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_]{1,64}$/, { message: textFor('attribute_key_invalid') }),
  label: z.string().max(200).optional(),
  example: z.string().max(1000).optional(),
});

/**
 * The operator creates a template. Its body's `{{x}}` placeholders and its `variables` must be
 * the same set of names: a placeholder without a variable could never be filled, and a
 * variable absent from the body would be sent for nothing (the channel rejects both).
 */
export const TemplateInput = z
  .strictObject({
    name: z.string().trim().min(1).max(512),
    category: TemplateCategory,
    language: z
      .string()
      .regex(/^[A-Za-z]{2,3}([_-][A-Za-z0-9]{2,8})?$/, { message: textFor('template_language_invalid') })
      .default('es_AR'),
    body: z.string().min(1).max(4096),
    variables: z.array(VariableInput).max(100).default([]),
    status: TemplateStatus.default('PENDING'),
  })
  .superRefine((t, ctx) => {
    const seen = new Set<string>();
    t.variables.forEach((v, i) => {
      if (seen.has(v.name))
        ctx.addIssue({ code: 'custom', path: ['variables', i, 'name'], message: textFor('template_variable_duplicate', { name: v.name }) });
      seen.add(v.name);
    });
    const inBody = placeholders(t.body);
    const missing = inBody.filter((n) => !seen.has(n));
    const unused = [...seen].filter((n) => !inBody.includes(n));
    if (missing.length > 0 || unused.length > 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['variables'],
        message: textFor('template_variables_mismatch', { names: [...missing, ...unused].join(', ') }),
      });
    }
  });

export const TemplatePatch = z.strictObject({ status: TemplateStatus });

export const TemplateParams = z.object({ id: Uuid, tid: Uuid });
