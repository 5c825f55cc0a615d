// One entry point for every serialization of a version (ServerHello agbom_serializations_supported): `canonical`
// is the document itself (with the facts of its version), the others derive from it.
import type { AgbomSerialization } from '../formats.ts';
import type { RenderInput } from './common.ts';
import { renderCycloneDx } from './cyclonedx.ts';
import { renderSpdx } from './spdx.ts';
import { renderSwid } from './swid.ts';

export type { RenderInput } from './common.ts';
export { renderCycloneDx, renderSpdx, renderSwid };

export interface Rendered {
  /** Media type of `body`. */
  contentType: string;
  body: string;
}

/** The canonical export: the document, its agbom_hash and the chain entry it is bound to. */
export function renderCanonical(input: RenderInput): Record<string, unknown> {
  return {
    agbom: { agent_id: input.document.agent_id, components: input.document.components },
    agbom_hash: input.agbomHash,
    metadata: { session_id: input.sessionId, chain_seq: input.seq, generated_at: input.timestamp },
  };
}

export function renderAgbom(format: AgbomSerialization, input: RenderInput): Rendered {
  switch (format) {
    case 'canonical':
      return { contentType: 'application/json', body: `${JSON.stringify(renderCanonical(input), null, 2)}\n` };
    case 'cyclonedx-1.6':
      return {
        contentType: 'application/vnd.cyclonedx+json; version=1.6',
        body: `${JSON.stringify(renderCycloneDx(input), null, 2)}\n`,
      };
    case 'spdx-3.0':
      return { contentType: 'application/ld+json', body: `${JSON.stringify(renderSpdx(input), null, 2)}\n` };
    case 'swid':
      return { contentType: 'application/swid+xml', body: renderSwid(input) };
  }
}
