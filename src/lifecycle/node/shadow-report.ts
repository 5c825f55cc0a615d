// What the shadow candidate decided differently (docs/bundle-lifecycle.md, shadow mode), from the stored differences.
import type { DurableStore, ShadowStore } from '../../store/types.ts';

export interface ShadowReport {
  shadowRevision: string | null;
  shadowSha256: string | null;
  differences: number;
  byMethod: { method: string; enforcing: string | null; shadow: string | null; count: number }[];
  samples: {
    method: string;
    enforcingRevision: string;
    enforcing: unknown;
    shadow: unknown;
    shadowError: string | null;
    at: Date;
  }[];
}

/** Differences stored for the current shadow target (or a given sha256), grouped by method and decisions. */
export async function shadowReport(
  store: ShadowStore & Pick<DurableStore, 'getPolicyBundleInfo'>,
  sha256?: string,
  sampleLimit = 20,
): Promise<ShadowReport> {
  const target = sha256 ?? (await store.getShadowTarget());
  if (!target) return { shadowRevision: null, shadowSha256: null, differences: 0, byMethod: [], samples: [] };
  const rev = (await store.getPolicyBundleInfo(target))?.revision ?? null;
  const byMethod = await store.countShadowDifferences(target);
  const samples = await store.listShadowDifferences(target, sampleLimit);
  return {
    shadowRevision: rev,
    shadowSha256: target,
    differences: byMethod.reduce((a, b) => a + b.count, 0),
    byMethod,
    samples: samples.map((s) => ({
      method: s.method,
      enforcingRevision: s.enforcingRevision,
      enforcing: s.enforcing,
      shadow: s.shadow,
      shadowError: s.shadowError,
      at: s.at,
    })),
  };
}
