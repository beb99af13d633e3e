import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { z } from '../zod';

export { OpenAPIRegistry };

export const ErrorBodySchema = z.object({ error: z.string() }).openapi('ErrorBody');

/** An error response of a documented route: its description, and the ErrorBody it carries. */
export const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: ErrorBodySchema } },
});

/** Builds the OpenAPI 3.1 document once (never per request). */
export function buildOpenApiDocument(registry: OpenAPIRegistry): unknown {
  registry.registerComponent('securitySchemes', 'ApiKey', {
    type: 'apiKey',
    in: 'header',
    name: 'X-API-KEY',
  });
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Laurel',
      version: '1',
      description:
        'Self-hosted gamification service. Application API under /v1 (Trophy SDK compatible), admin API under /admin/v1.',
    },
    security: [{ ApiKey: [] }],
  });
}
