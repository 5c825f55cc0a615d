// The fleet as the store sees it: every replica's last heartbeat.
import type { ReplicaStore } from '../../store/types.ts';
import type { ReplicaStatus } from './types.ts';

export async function listReplicas(store: ReplicaStore, staleAfterMs = 6000): Promise<ReplicaStatus[]> {
  const { replicas, now } = await store.listReplicaHeartbeats();
  return replicas.map(({ status: _status, ...r }) => ({
    ...r,
    stale: now.getTime() - r.heartbeatAt.getTime() > staleAfterMs,
  }));
}
