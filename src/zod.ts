import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// Every schema module imports z from here, so `.openapi()` is available whatever the import order.
extendZodWithOpenApi(z);

export { z };
