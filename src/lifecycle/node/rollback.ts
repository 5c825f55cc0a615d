// Which bundle a rollback re-activates.
import { LifecycleError } from '../errors.ts';
import type { ActivationEntry, BundleRegistry } from '../registry.ts';

/** The bundle active before the current one (the newest earlier activation of a different bundle). */
export async function findRollbackTarget(registry: BundleRegistry): Promise<ActivationEntry> {
  const history = await registry.activations(1000);
  if (history.length === 0) throw new LifecycleError('nothing_to_roll_back', 'no activation recorded');
  const target = history.find((a) => a.sha256 !== history[0].sha256);
  if (!target) throw new LifecycleError('nothing_to_roll_back', `only ${history[0].revision} was ever active`);
  return target;
}
