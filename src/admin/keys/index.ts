// The Guardian's keys (docs/keys.md): ids, algorithms, status, fingerprints and the public halves — never a
// private key, and nothing at all of an HMAC key but that it exists (its fingerprint is "secret").
import { OpenAPIHono, z } from '@hono/zod-openapi';
import type { KeyObject } from 'node:crypto';
import type { KeyringEntry } from '../../crypto/keyring.ts';
import { type AdminDeps, type AdminEnv, adminRoute, jsonContent, unavailable } from '../api/index.ts';

const Key = z
  .object({
    key_id: z.string(),
    algorithm: z.string(),
    status: z.string(),
    created_at: z.string(),
    agent_id: z.string().nullable(),
    can_sign: z.boolean(),
    fingerprint: z.string(),
    public_key: z
      .object({ pqc: z.string().optional(), classical: z.string().optional(), key: z.string().optional() })
      .nullable()
      .openapi({ description: 'Standard base64: raw FIPS 204/205 key or SPKI DER; hybrids both; HMAC null' }),
  })
  .openapi('Key');

function publicHalf(e: KeyringEntry): z.infer<typeof Key>['public_key'] {
  const m = e.material;
  const spki = (k: KeyObject): string => k.export({ format: 'der', type: 'spki' }).toString('base64');
  switch (m.kind) {
    case 'hmac':
      return null;
    case 'pqc':
      return { key: Buffer.from(m.publicKey).toString('base64') };
    case 'classical':
      return { key: spki(m.publicKey) };
    case 'hybrid':
      return { pqc: Buffer.from(m.pqc.publicKey).toString('base64'), classical: spki(m.classical.publicKey) };
  }
}

const keysRoute = adminRoute(
  {
    method: 'get',
    path: '/keys',
    operationId: 'listKeys',
    tags: ['keys'],
    summary: 'Signing and verification keys: public halves and fingerprints',
    responses: { 200: jsonContent(z.object({ keys: z.array(Key) }), 'Keys') },
  },
  { role: 'viewer' },
);

export function keyRoutes(deps: AdminDeps): OpenAPIHono<AdminEnv> {
  const app = new OpenAPIHono<AdminEnv>();
  app.openapi(keysRoute, (c) => {
    const keyring = deps.signatures?.keyring;
    if (!keyring) return unavailable('the key registry');
    const byId = new Map(keyring.entries().map((e) => [e.keyId, e]));
    return c.json(
      {
        keys: keyring.summaries().map((s) => ({
          key_id: s.keyId,
          algorithm: s.algorithm,
          status: s.status,
          created_at: s.createdAt,
          agent_id: s.agentId ?? null,
          can_sign: s.canSign,
          fingerprint: s.fingerprint,
          public_key: publicHalf(byId.get(s.keyId) as KeyringEntry),
        })),
      },
      200,
    );
  });
  return app;
}
