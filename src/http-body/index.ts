// Reading an HTTP body (request or response) with a byte limit: shared by POST /acs, the admin upload and the
// bundle-service download, so a body is never buffered past its limit whatever its Content-Length says.

/** Reads a stream up to `limit` bytes; null as soon as it is larger (the stream is cancelled early). */
export async function readStreamWithLimit(
  body: ReadableStream<Uint8Array> | null | undefined,
  limit: number,
): Promise<Uint8Array | null> {
  if (!body) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return new Uint8Array(Buffer.concat(chunks, size));
}
