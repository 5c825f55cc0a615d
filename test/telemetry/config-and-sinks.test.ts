// Telemetry configuration from the standard OTEL_* and GUARDIAN_* variables, and the OCSF sinks on their own:
// real files (rotation), a named pipe with a reader, a real HTTP collector (retry on 503, no retry on 400, give up
// after the attempts).
import { execFileSync } from 'node:child_process';
import { constants, existsSync, lstatSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createOcsfEmitter, fileSink, httpSink } from '../../src/telemetry/events/index.ts';
import { ocsfSinksFrom, openLogger, otlpSettingsFrom, TelemetryConfigError } from '../../src/telemetry/index.ts';
import { BoundedQueue } from '../../src/telemetry/queue.ts';
import { eventually, startSiemCollector } from './receivers.ts';

const dir = mkdtempSync(join(tmpdir(), 'acs-telemetry-sinks-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('OTLP settings from the standard variables', () => {
  it('off without an endpoint or when disabled; the base endpoint gets /v1/traces, the traces endpoint is used as is', () => {
    expect(otlpSettingsFrom({})).toBeNull();
    expect(otlpSettingsFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' })).toBeNull();
    expect(otlpSettingsFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' })).toBeNull();
    const base = otlpSettingsFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/', OTEL_SERVICE_NAME: 'g1' });
    expect(base).toMatchObject({
      url: 'http://c:4318/v1/traces',
      protocol: 'http/protobuf',
      serviceName: 'g1',
      maxQueueSize: 2048,
    });
    // The traces-specific protocol wins over the general one (OTel SDK environment specification).
    const json = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' };
    expect(otlpSettingsFrom(json)?.protocol).toBe('http/json');
    expect(otlpSettingsFrom({ ...json, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' })?.protocol).toBe(
      'http/protobuf',
    );
    const traces = otlpSettingsFrom({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t:9/x',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-token=a%3Db,other=2',
    });
    expect(traces).toMatchObject({ url: 'http://t:9/x', headers: { 'x-token': 'a=b', other: '2' } });
  });

  it('refuses what it cannot honour: another exporter or protocol, a bad URL, a bad number', () => {
    const e = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    expect(() => otlpSettingsFrom({ ...e, OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(TelemetryConfigError);
    expect(() => otlpSettingsFrom({ ...e, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(
      /http\/protobuf or http\/json/,
    );
    expect(() => otlpSettingsFrom({ ...e, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/xml' })).toThrow(
      TelemetryConfigError,
    );
    expect(() => otlpSettingsFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' })).toThrow(/not a URL/);
    expect(() => otlpSettingsFrom({ ...e, OTEL_BSP_MAX_QUEUE_SIZE: '-1' })).toThrow(/positive integer/);
    // Every step is traced: a sampler that would leave steps out is refused, not ignored.
    expect(otlpSettingsFrom(e)?.sampler).toBe('parentbased_always_on');
    expect(otlpSettingsFrom(e)?.maxExportBatchSize).toBe(512);
    expect(otlpSettingsFrom({ ...e, OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '2048' })?.maxExportBatchSize).toBe(2048);
    expect(() => otlpSettingsFrom({ ...e, OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '0' })).toThrow(/positive integer/);
    expect(otlpSettingsFrom({ ...e, OTEL_TRACES_SAMPLER: 'always_on' })?.sampler).toBe('always_on');
    for (const sampler of ['traceidratio', 'parentbased_traceidratio', 'always_off', 'parentbased_always_off'])
      expect(() => otlpSettingsFrom({ ...e, OTEL_TRACES_SAMPLER: sampler })).toThrow(/traces every step/);
    expect(otlpSettingsFrom({ ...e, OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT: '64' })?.attributeValueLengthLimit).toBe(64);
    expect(
      otlpSettingsFrom({ ...e, OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT: '64', OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT: '8' })
        ?.attributeValueLengthLimit,
    ).toBe(8);
  });
});

describe('OCSF sinks', () => {
  it('stdout is refused in stdio mode (stdout carries the protocol); no variable → no sink', () => {
    expect(ocsfSinksFrom({}, false)).toEqual([]);
    expect(ocsfSinksFrom({ GUARDIAN_OCSF_STDOUT: '1' }, false).map((s) => s.kind)).toEqual(['stdout']);
    expect(() => ocsfSinksFrom({ GUARDIAN_OCSF_STDOUT: '1' }, true)).toThrow(/--stdio/);
    expect(() => ocsfSinksFrom({ GUARDIAN_OCSF_HTTP_URL: '::' }, false)).toThrow(/not a URL/);
  });

  it('the file sink rotates before passing its size and keeps the newest N files, every line intact', async () => {
    const path = join(dir, 'events.jsonl');
    const sink = fileSink({ path, maxBytes: 1000, keep: 2 });
    const lines = Array.from({ length: 60 }, (_, i) => JSON.stringify({ n: i, pad: 'x'.repeat(60) }));
    for (let i = 0; i < lines.length; i += 5) await sink.write(lines.slice(i, i + 5));
    expect(existsSync(`${path}.1`)).toBe(true);
    expect(existsSync(`${path}.2`)).toBe(true);
    expect(existsSync(`${path}.3`)).toBe(false);
    const kept = [`${path}.2`, `${path}.1`, path].flatMap((f) => readFileSync(f, 'utf8').trim().split('\n'));
    for (const f of [path, `${path}.1`, `${path}.2`]) expect(readFileSync(f).length).toBeLessThanOrEqual(1000);
    // The newest lines survive, in order, whole.
    expect(kept).toEqual(lines.slice(lines.length - kept.length));
  });

  it('the file sink writes to a named pipe a log shipper reads, and never rotates the pipe away', async () => {
    const path = join(dir, 'events.pipe');
    execFileSync('mkfifo', [path]);
    // The shipper's end, read the way Node reads a pipe (non-blocking, through the event loop), and opened for
    // writing too, as shippers open one: the sink opens the pipe per batch, and its close is not an end of input.
    const fd = openSync(path, constants.O_RDWR | constants.O_NONBLOCK);
    const shipper = new Socket({ fd, readable: true, writable: false });
    let read = '';
    shipper.on('data', (chunk: Buffer) => (read += chunk.toString('utf8')));
    try {
      // Each batch alone would take a regular file past maxBytes, which rotates it.
      const sink = fileSink({ path, maxBytes: 100, keep: 2 });
      const lines = Array.from({ length: 5 }, (_, i) => JSON.stringify({ n: i, pad: 'x'.repeat(60) }));
      for (const line of lines) await sink.write([line]);
      await vi.waitFor(() => expect(read.split('\n').filter(Boolean)).toEqual(lines), { timeout: 5000 });
      expect(lstatSync(path).isFIFO()).toBe(true);
      expect(existsSync(`${path}.1`)).toBe(false);
    } finally {
      shipper.destroy();
    }
  });

  it('the HTTP sink retries 503 with backoff, gives up after its attempts, and does not retry a 400', async () => {
    const flaky = await startSiemCollector({ failFirst: 2 });
    const down = await startSiemCollector({ failFirst: 100 });
    const refusing = await startSiemCollector({ failFirst: 100, failStatus: 400 });
    try {
      await httpSink({ url: flaky.url, timeoutMs: 2000, maxAttempts: 5, backoffMs: 5 }).write(['{"a":1}', '{"a":2}']);
      expect(flaky.bodies.length).toBe(3);
      expect(flaky.events).toEqual([{ a: 1 }, { a: 2 }]);
      await expect(
        httpSink({ url: down.url, timeoutMs: 2000, maxAttempts: 3, backoffMs: 5 }).write(['{}']),
      ).rejects.toThrow(/HTTP 503/);
      expect(down.bodies.length).toBe(3);
      await expect(
        httpSink({ url: refusing.url, timeoutMs: 2000, maxAttempts: 5, backoffMs: 5 }).write(['{}']),
      ).rejects.toThrow(/HTTP 400/);
      expect(refusing.bodies.length).toBe(1);
    } finally {
      await flaky.close();
      await down.close();
      await refusing.close();
    }
  });
  it('the HTTP sink asks to keep its connection; a batch waits to fill, what is short goes at flush', async () => {
    const collector = await startSiemCollector();
    const sink = httpSink({ url: collector.url, timeoutMs: 2000, maxAttempts: 1, backoffMs: 5 });
    // A flush interval no test waits out: only full batches go before flush().
    const emitter = createOcsfEmitter({
      sinks: [sink],
      queueSize: 1000,
      batchSize: 100,
      flushIntervalMs: 600_000,
      onDropped: (kind, n, why) => {
        throw new Error(`dropped ${n} for ${kind}: ${why}`);
      },
    });
    try {
      for (let i = 0; i < 250; i++) emitter.emit([{ n: i }]);
      await eventually(() => collector.batches === 2);
      expect(emitter.depths()).toEqual({ http: 50 });
      await emitter.flush();
      expect(collector.bodies.map((b) => (JSON.parse(b) as unknown[]).length)).toEqual([100, 100, 50]);
      expect(collector.events).toEqual(Array.from({ length: 250 }, (_, n) => ({ n })));
      // Posted through a keep-alive Agent: every POST asks the collector to keep the connection open.
      expect(collector.headers.map((h) => h.connection)).toEqual(['keep-alive', 'keep-alive', 'keep-alive']);
    } finally {
      sink.close?.();
      await collector.close();
    }
  });
});

describe('logger', () => {
  it('JSON lines off a terminal, pino-pretty on one (or GUARDIAN_LOG_FORMAT=pretty); secrets censored in both', async () => {
    const sink = () => {
      const lines: string[] = [];
      return Object.assign(
        new Writable({
          write(chunk: Buffer, _encoding, done) {
            lines.push(chunk.toString());
            done();
          },
        }),
        { lines },
      );
    };
    const json = sink();
    (await openLogger({}, { terminal: false, destination: json })).info({ token: 'sekrit-1', n: 1 }, 'hello');
    expect(JSON.parse(json.lines[0])).toMatchObject({ level: 'info', msg: 'hello', token: '[redacted]', n: 1 });
    const pretty = sink();
    const p = await openLogger({}, { terminal: true, destination: pretty });
    p.warn({ nested: { signature: 'sekrit-2' } }, 'careful');
    const text = pretty.lines.join('');
    expect(text).toMatch(/WARN.*careful/);
    expect(text).toContain('[redacted]');
    expect(text).not.toContain('sekrit-2');
    expect(() => JSON.parse(text)).toThrow();
    const forced = sink();
    (await openLogger({ GUARDIAN_LOG_FORMAT: 'json' }, { terminal: true, destination: forced })).info('x');
    expect(JSON.parse(forced.lines[0]).msg).toBe('x');
    await expect(openLogger({ GUARDIAN_LOG_LEVEL: 'loud' })).rejects.toThrow(/GUARDIAN_LOG_LEVEL/);
    await expect(openLogger({ GUARDIAN_LOG_FORMAT: 'xml' })).rejects.toThrow(/GUARDIAN_LOG_FORMAT/);
  });
});

describe('bounded queue', () => {
  it('never holds more than its capacity; each refused push is reported once', () => {
    let dropped = 0;
    const q = new BoundedQueue<number>(3, (n) => (dropped += n));
    for (let i = 0; i < 10; i++) q.push(i);
    expect(q.size).toBe(3);
    expect(dropped).toBe(7);
    expect(q.take(2)).toEqual([0, 1]);
    expect(q.push(10)).toBe(true);
    expect(q.take(10)).toEqual([2, 10]);
    expect(q.size).toBe(0);
  });

  it('keep() appends past the capacity (what a bound upstream limited already), unreported; peek() leaves the oldest', () => {
    let dropped = 0;
    const q = new BoundedQueue<number>(2, (n) => (dropped += n));
    for (let i = 0; i < 5; i++) q.keep(i);
    expect(q.size).toBe(5);
    expect(q.push(5)).toBe(false);
    expect(dropped).toBe(1);
    expect(q.peek()).toBe(0);
    expect(q.take(1)).toEqual([0]);
    expect(q.peek()).toBe(1);
    expect(q.take(10)).toEqual([1, 2, 3, 4]);
    expect(q.peek()).toBeUndefined();
  });
});
