// The AgBOM serializations this Guardian renders (ServerHello agbom_serializations_supported, ACS Inspect), and
// the profiles it honours besides acs-crypto (which depends on the signing keys present, docs/keys.md).
export const AGBOM_SERIALIZATIONS = ['canonical', 'cyclonedx-1.6', 'spdx-3.0', 'swid'] as const;
export type AgbomSerialization = (typeof AGBOM_SERIALIZATIONS)[number];

export function isAgbomSerialization(v: unknown): v is AgbomSerialization {
  return typeof v === 'string' && (AGBOM_SERIALIZATIONS as readonly string[]).includes(v);
}

/** Each is tested requirement by requirement (docs/conformance.md, "Profiles"). */
export const GUARDIAN_PROFILES = ['acs-core', 'acs-inspect', 'acs-inspect-dynamic', 'acs-provenance', 'acs-audit'];
