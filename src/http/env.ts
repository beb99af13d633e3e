import type { ApiKeyRow } from '../catalog/snapshot';

/** Variables every route can read from the Hono context. */
export type AppEnv = {
  Variables: {
    requestId: string;
    apiKey: ApiKeyRow;
  };
};
