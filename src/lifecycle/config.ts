// Signature verification settings from the environment (CLI and `guardian serve` share them):
//   GUARDIAN_BUNDLE_VERIFY_KEY      PEM file of the public key (or the HS* secret file)
//   GUARDIAN_BUNDLE_VERIFY_ALG      JWS algorithm (default RS256)
//   GUARDIAN_BUNDLE_VERIFY_KEY_ID   key id (default "default"); also pinned, so the JWS `kid` is not trusted
//   GUARDIAN_BUNDLE_VERIFY_SCOPE    required scope (optional)
import { readFileSync } from 'node:fs';
import type { BundleVerificationConfig } from './signing.ts';

export function verificationFromEnv(
  env: Readonly<Record<string, string | undefined>> = process.env,
): BundleVerificationConfig | undefined {
  const file = env.GUARDIAN_BUNDLE_VERIFY_KEY;
  if (!file) return undefined;
  const algorithm = env.GUARDIAN_BUNDLE_VERIFY_ALG || 'RS256';
  const raw = readFileSync(file);
  const key = /^HS\d+$/.test(algorithm) ? new Uint8Array(raw) : raw.toString('utf8');
  const keyId = env.GUARDIAN_BUNDLE_VERIFY_KEY_ID || 'default';
  return {
    keys: { [keyId]: { algorithm, key } },
    keyId,
    ...(env.GUARDIAN_BUNDLE_VERIFY_SCOPE ? { scope: env.GUARDIAN_BUNDLE_VERIFY_SCOPE } : {}),
  };
}
