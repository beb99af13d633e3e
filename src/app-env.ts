import type { ApiKeyRow } from './catalog/snapshot';

/** Variables every route can read from the Hono context. */
export type AppEnv = {
  Variables: {
    requestId: string;
    apiKey: ApiKeyRow;
    /** Largest accepted body of this route group (set with the body-limit middleware). */
    bodyLimit: number;
    /** The body, when the body-limit middleware had to read it (no Content-Length). */
    rawBody: Uint8Array;
  };
};
