// drizzle-kit: `npx drizzle-kit generate` writes SQL migrations for src/store/schema.ts into migrations/.
// The same folder is applied at start-up by both drivers and by `guardian db migrate`.
import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'postgresql',
  schema: './src/store/schema.ts',
  out: './migrations',
});
