import { describe, expect, it } from 'vitest';
import { gzipSync, gunzipSync } from 'node:zlib';
import { Readable } from 'node:stream';
import { createHash } from 'node:crypto';
import tarStream from 'tar-stream';
import { BundleError, readBundle, writeBundle, type WriteBundleInput } from '../../../src/rego/bundle/index.ts';
import { DecimalText, exactJson } from '../../../src/rego/json.ts';

const wasmBytes = new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);

function sample(): WriteBundleInput {
  return {
    manifest: { roots: ['acs'], wasm: [{ entrypoint: 'acs/guardian/decision', module: '/policy.wasm' }] },
    wasm: wasmBytes,
    plan: { static: { strings: [] }, plans: { plans: [] }, funcs: { funcs: [] } },
    data: { acs: { config: { max: 3 } } },
    sources: [
      { path: 'policies/b.rego', text: 'package acs.b\nx := 1\n' },
      { path: '/policies/a.rego', text: 'package acs.a\ny := 2\n' },
    ],
  };
}

/** Build a tarball with an independent writer (tar-stream), the way `opa build` lays it out. */
async function tarWith(
  entries: { name: string; body: string | Uint8Array; type?: 'file' | 'directory' }[],
): Promise<Uint8Array> {
  const pack = tarStream.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (c: unknown) => {
    chunks.push(c as Buffer);
  });
  const done = new Promise<void>((resolve) => pack.on('end', () => resolve()));
  for (const e of entries) {
    if (e.type === 'directory') pack.entry({ name: e.name, type: 'directory' });
    else pack.entry({ name: e.name }, Buffer.from(e.body));
  }
  pack.finalize();
  await done;
  return new Uint8Array(gzipSync(Buffer.concat(chunks)));
}

async function listWithTarStream(
  gz: Uint8Array,
): Promise<{ name: string; mtime: number; mode: number; uid: number; body: string }[]> {
  const extract = tarStream.extract();
  const out: { name: string; mtime: number; mode: number; uid: number; body: string }[] = [];
  extract.on('entry', (h, stream, next) => {
    const parts: Buffer[] = [];
    stream.on('data', (c: unknown) => {
      parts.push(c as Buffer);
    });
    stream.on('end', () => {
      out.push({
        name: h.name,
        mtime: h.mtime?.getTime() ?? -1,
        mode: h.mode ?? -1,
        uid: h.uid ?? -1,
        body: Buffer.concat(parts).toString('utf8'),
      });
      next();
    });
  });
  const finished = new Promise<void>((resolve, reject) => {
    extract.on('finish', () => resolve());
    extract.on('error', reject);
  });
  Readable.from([Buffer.from(gunzipSync(gz))]).pipe(extract);
  await finished;
  return out;
}

describe('writeBundle / readBundle', () => {
  it('round-trips manifest, wasm, plan, data and sources in OPA layout', () => {
    const b = readBundle(writeBundle(sample()));
    expect(b.files.map((f) => f.path)).toEqual([
      '/.manifest',
      '/data.json',
      '/plan.json',
      '/policies/a.rego',
      '/policies/b.rego',
      '/policy.wasm',
    ]);
    expect(b.wasm).toEqual(wasmBytes);
    expect(b.plan).toEqual(sample().plan);
    expect(b.data).toEqual({ acs: { config: { max: 3 } } });
    expect(b.sources).toEqual([
      { path: '/policies/a.rego', text: 'package acs.a\ny := 2\n' },
      { path: '/policies/b.rego', text: 'package acs.b\nx := 1\n' },
    ]);
    expect(b.manifest.roots).toEqual(['acs']);
    expect(b.manifest.wasm).toEqual([{ entrypoint: 'acs/guardian/decision', module: '/policy.wasm' }]);
  });

  it('is byte-deterministic and the default revision is a content hash', () => {
    const a = writeBundle(sample());
    const reordered = sample();
    reordered.sources.reverse();
    const b = writeBundle(reordered);
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true);
    const rev = readBundle(a).manifest.revision;
    expect(rev).toMatch(/^[0-9a-f]{64}$/);
    const changed = sample();
    changed.sources[0].text += '# edit\n';
    expect(readBundle(writeBundle(changed)).manifest.revision).not.toBe(rev);
    // gzip header carries no timestamp (bytes 4..7 are MTIME).
    expect([...a.subarray(4, 8)]).toEqual([0, 0, 0, 0]);
  });

  it('keeps an explicit revision', () => {
    const input = sample();
    input.manifest.revision = 'r-42';
    expect(readBundle(writeBundle(input)).manifest.revision).toBe('r-42');
  });

  it('writes fixed tar metadata readable by an independent tar reader', async () => {
    const entries = await listWithTarStream(writeBundle(sample()));
    expect(entries.map((e) => e.name)).toEqual([
      '/.manifest',
      '/data.json',
      '/plan.json',
      '/policies/a.rego',
      '/policies/b.rego',
      '/policy.wasm',
    ]);
    for (const e of entries) {
      expect(e.mtime).toBe(0);
      expect(e.mode).toBe(0o644);
      expect(e.uid).toBe(0);
    }
    expect(JSON.parse(entries[0].body).revision).toMatch(/^[0-9a-f]{64}$/);
  });

  it('handles long paths (ustar prefix and PAX)', () => {
    const deep = `/${'d'.repeat(90)}/${'e'.repeat(90)}/p.rego`;
    const huge = `/${'x'.repeat(300)}.rego`;
    const b = readBundle(
      writeBundle({
        manifest: {},
        sources: [
          { path: deep, text: 'package a' },
          { path: huge, text: 'package b' },
        ],
      }),
    );
    expect(b.sources.map((s) => s.path).sort()).toEqual([deep, huge].sort());
  });

  it('reads an opa-build style bundle: ./ prefixes, nested data mounted at its path, signatures kept', async () => {
    const sig = { signatures: ['eyJhbGciOiJIUzI1NiJ9.e30.sig'] };
    const gz = await tarWith([
      { name: './', body: '', type: 'directory' },
      {
        name: './.manifest',
        body: JSON.stringify({
          revision: 'abc',
          roots: [''],
          wasm: [{ entrypoint: 'x/allow', module: '/policy.wasm' }],
        }),
      },
      { name: './data.json', body: JSON.stringify({ top: 1 }) },
      { name: './roles/admins/data.json', body: JSON.stringify({ names: ['a'] }) },
      { name: 'roles/data.yaml', body: 'viewers: [b]\n' },
      { name: '/policy.wasm', body: wasmBytes },
      { name: '/x/x.rego', body: 'package x\nallow := true\n' },
      { name: '/.signatures.json', body: JSON.stringify(sig) },
    ]);
    const b = readBundle(gz);
    expect(b.manifest.revision).toBe('abc');
    expect(b.data).toEqual({ top: 1, roles: { admins: { names: ['a'] }, viewers: ['b'] } });
    expect(b.wasm).toEqual(wasmBytes);
    expect(b.signatures).toEqual(sig);
    expect(b.sources).toEqual([{ path: '/x/x.rego', text: 'package x\nallow := true\n' }]);
    expect(b.files.map((f) => f.path)).toContain('/.signatures.json');
  });

  it('soleDataAsText: a sole /data.json comes back as its text (BOM dropped, not parsed); the other files as without it', async () => {
    const text = '{"acs": {"n": 12345678901234567890123}}';
    const bytes = await tarWith([
      {
        name: '/.manifest',
        body: JSON.stringify({ revision: 'r', roots: [''], wasm: [{ entrypoint: 'x/allow', module: '/policy.wasm' }] }),
      },
      { name: '/data.json', body: new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode(text)]) },
      { name: '/policy.wasm', body: wasmBytes },
      { name: '/x/x.rego', body: 'package x\n' },
    ]);
    const b = readBundle(bytes, undefined, { soleDataAsText: true });
    expect(b.data).toBeUndefined();
    expect(Buffer.from(b.dataText ?? []).toString()).toBe(text);
    const parsed = readBundle(bytes);
    expect(parsed.dataText).toBeUndefined();
    // Decoded as OPA decodes data files (json.Number): the digits a double would change are kept.
    expect(exactJson(parsed.data)).toBe('{"acs":{"n":12345678901234567890123}}');
    expect((parsed.data.acs as { n: unknown }).n).toBeInstanceOf(DecimalText);
    expect(b.manifest).toEqual(parsed.manifest);
    expect(b.wasm).toEqual(parsed.wasm);
    expect(b.sources).toEqual(parsed.sources);
    expect(b.files).toEqual(parsed.files);
  });

  it('soleDataAsText: several data files, or a sole data file elsewhere, are parsed and merged as without it', async () => {
    const two = await tarWith([
      { name: '/data.json', body: JSON.stringify({ top: 1 }) },
      { name: '/roles/data.yaml', body: 'viewers: [b]\n' },
    ]);
    const b = readBundle(two, undefined, { soleDataAsText: true });
    expect(b.dataText).toBeUndefined();
    expect(b.data).toEqual({ top: 1, roles: { viewers: ['b'] } });
    const nested = await tarWith([{ name: '/roles/data.json', body: '{"a":' }]);
    expect(() => readBundle(nested, undefined, { soleDataAsText: true })).toThrow('/roles/data.json: invalid JSON');
  });

  it('soleDataAsText: refuses what needs no parse to see — not UTF-8, a root that is not an object, no value — naming the file', async () => {
    const withData = (body: string | Uint8Array): Promise<Uint8Array> => tarWith([{ name: '/data.json', body }]);
    const read = async (body: string | Uint8Array): Promise<unknown> =>
      readBundle(await withData(body), undefined, { soleDataAsText: true });
    await expect(read(new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]))).rejects.toThrow(
      '/data.json: not valid UTF-8',
    );
    await expect(read(' [1, 2]')).rejects.toThrow('bundle load failed on /data.json: root value must be object');
    await expect(read('"text"')).rejects.toThrow('bundle load failed on /data.json: root value must be object');
    await expect(read(' \n')).rejects.toThrow('/data.json: invalid JSON: no value');
    // The rest of the text is left to the parser the caller hands it to (readBundle without the option refuses it).
    await expect(read('{"a":1,}')).resolves.toMatchObject({ dataText: expect.any(Uint8Array) });
    await expect(withData('{"a":1,}').then((b) => readBundle(b))).rejects.toThrow('/data.json: invalid JSON');
  });

  it('data.json keeps the numbers a double would change, written back as they were; malformed data as JSON.parse words it', async () => {
    const withData = (body: string | Uint8Array): Promise<Uint8Array> => tarWith([{ name: '/data.json', body }]);
    const text = '{"n": 12345678901234567890, "x": 1.50, "small": 7, "list": [1e400]}';
    const b = readBundle(await withData(new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode(text)])));
    expect(b.data.n).toBeInstanceOf(DecimalText);
    expect(b.data.small).toBe(7);
    expect(exactJson(b.data)).toBe('{"n":12345678901234567890,"x":1.50,"small":7,"list":[1e400]}');
    // Written again (writeBundle) and read back: the same digits.
    const again = readBundle(writeBundle({ manifest: {}, data: b.data, sources: [] }));
    expect(exactJson(again.data)).toBe('{"list":[1e400],"n":12345678901234567890,"small":7,"x":1.50}');
    const jsonParseError = (t: string): string => {
      try {
        JSON.parse(t);
      } catch (e) {
        return (e as Error).message;
      }
      throw new Error('parsed');
    };
    for (const bad of ['{"a":1,}', '{"a": 12345678901234567890,', '{"a":1} x']) {
      await expect(withData(bad).then((t) => readBundle(t))).rejects.toThrow(
        `/data.json: invalid JSON: ${jsonParseError(bad)}`,
      );
    }
    await expect(
      withData(new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d])).then((t) => readBundle(t)),
    ).rejects.toThrow('/data.json: invalid JSON: The encoded data was not valid for encoding utf-8');
  });

  it('refuses manifests naming a missing wasm module', async () => {
    const gz = await tarWith([
      { name: '/.manifest', body: JSON.stringify({ wasm: [{ entrypoint: 'a/b', module: '/nope.wasm' }] }) },
    ]);
    expect(() => readBundle(gz)).toThrow(/wasm module \/nope.wasm not found/);
  });

  it('refuses path traversal and conflicting data', async () => {
    await expect(tarWith([{ name: '../evil.rego', body: 'package x' }]).then(readBundle)).rejects.toThrow(BundleError);
    const conflict = await tarWith([
      { name: '/data.json', body: JSON.stringify({ a: 1 }) },
      { name: '/a/data.json', body: JSON.stringify({ b: 2 }) },
    ]);
    // OPA's bundle reader's words (bundle.go insertData), naming the file inserted second (files are read in path
    // order): the root document's key `a` against the object /a/data.json mounted there
    expect(() => readBundle(conflict)).toThrow(
      'bundle load failed on /data.json: failed to insert data file from path ',
    );
    const nested = await tarWith([
      { name: '/x/data.json', body: JSON.stringify({ y: 1 }) },
      { name: '/x/y/data.json', body: JSON.stringify({ z: 2 }) },
    ]);
    expect(() => readBundle(nested)).toThrow(
      'bundle load failed on /x/y/data.json: failed to insert data file from path x/y',
    );
    const notObject = await tarWith([{ name: '/data.json', body: '[1]' }]);
    expect(() => readBundle(notObject)).toThrow('bundle load failed on /data.json: root value must be object');
  });

  it('is zip-bomb safe: decompression stops at the limit', () => {
    const bomb = gzipSync(Buffer.alloc(8 * 1024 * 1024));
    expect(bomb.length).toBeLessThan(100_000);
    expect(() => readBundle(bomb, { maxUncompressedBytes: 1024 * 1024 })).toThrow(/too large when decompressed/);
  });

  it('limits entry count and entry size', async () => {
    const many = await tarWith(Array.from({ length: 20 }, (_, i) => ({ name: `/f${i}.rego`, body: 'package x' })));
    expect(() => readBundle(many, { maxEntries: 10 })).toThrow(/too many/);
    const big = await tarWith([{ name: '/big.rego', body: 'x'.repeat(5000) }]);
    expect(() => readBundle(big, { maxEntryBytes: 1000 })).toThrow(/too large/);
  });

  it('rejects garbage and corrupted headers with a BundleError', () => {
    expect(() => readBundle(new Uint8Array([1, 2, 3]))).toThrow(BundleError);
    const tar = gunzipSync(writeBundle(sample()));
    tar[10] ^= 0xff; // inside the first header's name field → checksum mismatch
    expect(() => readBundle(gzipSync(tar))).toThrow(/checksum/);
  });

  it('revision covers every input (sha256 over sorted paths and content hashes)', () => {
    const base = sample();
    const r1 = readBundle(writeBundle(base)).manifest.revision;
    const withData = sample();
    withData.data = { acs: { config: { max: 4 } } };
    expect(readBundle(writeBundle(withData)).manifest.revision).not.toBe(r1);
    const otherWasm = sample();
    otherWasm.wasm = new Uint8Array([...wasmBytes, 0]);
    expect(readBundle(writeBundle(otherWasm)).manifest.revision).not.toBe(r1);
    expect(createHash('sha256').update('x').digest('hex')).toHaveLength(64);
  });
});
