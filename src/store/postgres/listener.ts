// LISTEN on a connection of its own (a pooled connection cannot stay subscribed), through the same node-postgres
// driver as the store. A lost connection is replaced after a pause; the listener then reports one notification,
// since it may have missed some while it was gone.
import pg from 'pg';
import type { StopListening } from '../types.ts';

const RECONNECT_MS = 1000;

export async function listenOn(
  config: pg.ClientConfig,
  channel: string,
  onNotify: () => void,
  onError: (err: Error) => void,
): Promise<StopListening> {
  let current: pg.Client | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;

  const drop = (client: pg.Client): void => {
    if (current !== client) return;
    current = undefined;
    client.end().catch(() => {});
    if (!stopped) reconnectLater();
  };

  const connect = async (): Promise<void> => {
    const client = new pg.Client(config);
    client.on('error', (err) => {
      onError(err);
      drop(client);
    });
    client.on('end', () => drop(client));
    client.on('notification', (n) => {
      if (n.channel === channel) onNotify();
    });
    try {
      await client.connect();
      await client.query(`listen ${client.escapeIdentifier(channel)}`);
    } catch (err) {
      await client.end().catch(() => {});
      throw err;
    }
    if (stopped) await client.end().catch(() => {});
    else current = client;
  };

  const reconnectLater = (): void => {
    retry = setTimeout(() => {
      retry = undefined;
      connect().then(onNotify, (err: unknown) => {
        onError(err instanceof Error ? err : new Error(String(err)));
        if (!stopped) reconnectLater();
      });
    }, RECONNECT_MS);
    retry.unref();
  };

  await connect();
  return async () => {
    stopped = true;
    if (retry) clearTimeout(retry);
    const client = current;
    current = undefined;
    await client?.end().catch(() => {});
  };
}
