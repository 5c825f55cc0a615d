// Writing key files to a directory (docs/keys.md): secrets go to `<key_id>.key.json` created with mode 0600
// (O_EXCL: an existing key is never overwritten), public halves to `<key_id>.pub.json` (0644).
import {
  chmodSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
  closeSync,
  existsSync,
} from 'node:fs';
import { join } from 'node:path';
import {
  hasSecretMaterial,
  isValidKeyId,
  KeyFileError,
  parseKeyFile,
  publicPart,
  type KeyFileJson,
} from './key-files.ts';

export interface WrittenKeyFiles {
  /** Path of the file holding secret material (mode 0600), if any. */
  privatePath?: string;
  /** Path of the public-only file (absent for HMAC keys, which have no public half). */
  publicPath?: string;
}

function writeNew(path: string, json: KeyFileJson, mode: number): void {
  let fd: number;
  try {
    fd = openSync(path, 'wx', mode);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new KeyFileError(
      code === 'EEXIST' ? `${path} already exists: refusing to overwrite a key` : `${path}: ${(err as Error).message}`,
    );
  }
  try {
    writeFileSync(fd, JSON.stringify(json, null, 2) + '\n');
  } finally {
    closeSync(fd);
  }
  // openSync's mode is filtered by the umask; set it exactly.
  chmodSync(path, mode);
}

/** Writes a generated key's files into `dir` (created 0700 if missing). */
export function writeKeyFiles(dir: string, file: KeyFileJson): WrittenKeyFiles {
  if (!isValidKeyId(file.key_id)) throw new KeyFileError(`invalid key id ${JSON.stringify(file.key_id)}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const out: WrittenKeyFiles = {};
  const privatePath = join(dir, `${file.key_id}.key.json`);
  const publicPath = join(dir, `${file.key_id}.pub.json`);
  if (existsSync(privatePath) || existsSync(publicPath))
    throw new KeyFileError(`key "${file.key_id}" already exists in ${dir}`);
  if (hasSecretMaterial(file)) {
    writeNew(privatePath, file, 0o600);
    out.privatePath = privatePath;
  }
  if (file.algorithm !== 'HMAC-SHA256') {
    writeNew(publicPath, publicPart(file), 0o644);
    out.publicPath = publicPath;
  }
  return out;
}

/**
 * Rotation: marks key `keyId` in `dir` as retired (verify-only) in both its files. Rewritten atomically
 * (temp file + rename) keeping each file's mode. Returns the paths changed.
 */
export function retireKeyFile(dir: string, keyId: string): string[] {
  if (!isValidKeyId(keyId)) throw new KeyFileError(`invalid key id ${JSON.stringify(keyId)}`);
  const changed: string[] = [];
  for (const name of [`${keyId}.key.json`, `${keyId}.pub.json`]) {
    const path = join(dir, name);
    if (!existsSync(path)) continue;
    const file = parseKeyFile(JSON.parse(readFileSync(path, 'utf8')), path);
    file.status = 'retired';
    const mode = statSync(path).mode & 0o777;
    const tmp = `${path}.tmp-${process.pid}`;
    writeNew(tmp, file, mode);
    renameSync(tmp, path);
    changed.push(path);
  }
  if (changed.length === 0) throw new KeyFileError(`no key "${keyId}" in ${dir}`);
  return changed;
}
