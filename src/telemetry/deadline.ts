// Shutdown waits bounded by a wall-clock deadline, on both sides of the export channel: the main thread's close()
// and the export thread's last flush each give up at theirs so a collector that never answers cannot hold the
// process (docs/telemetry.md, "Never blocking a decision").

/** Whether `work` fulfils before `until` (epoch ms); false once the deadline passes first. A rejection propagates. */
export async function settlesBy(work: Promise<unknown>, until: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work.then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), Math.max(0, until - Date.now()));
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
