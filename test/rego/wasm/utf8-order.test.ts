// Static data sorts object keys by UTF-8 bytes without encoding them (src/rego/utf8.ts compareUtf8): the same order.
import { it } from 'vitest';
import fc from 'fast-check';
import { compareBytes, compareUtf8, utf8Bytes } from '../../../src/rego/utf8.ts';
it('compareUtf8 orders strings as compareBytes orders their UTF-8 encodings, lone surrogates included', () => {
  const unit = fc.oneof(
    fc.constantFrom(
      'a',
      'b',
      'z',
      '\u007f',
      '\u0080',
      '\u00e9',
      '\ud800',
      '\udc00',
      '\ud83d\ude00',
      '\uffff',
      '\ue000',
      '\ufffd',
      '',
    ),
    fc.string({ unit: 'binary' }),
  );
  const str = fc.array(unit, { maxLength: 6 }).map((a) => a.join(''));
  fc.assert(
    fc.property(
      str,
      str,
      (a, b) => Math.sign(compareUtf8(a, b)) === Math.sign(compareBytes(utf8Bytes(a), utf8Bytes(b))),
    ),
    { numRuns: 20000 },
  );
});
