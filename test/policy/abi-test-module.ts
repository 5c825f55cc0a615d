// A hand-written OPA-ABI 1.2 module (values are pointers to NUL-terminated JSON text, which the ABI allows:
// the host never looks inside values) used to drive the engine host through real opa-wasm before — and
// independently of — our Rego compiler. Entrypoints:
//   echo      → [{"result": input}]             data    → [{"result": data}]
//   abort     → opa_abort(eval_conflict_error)   builtin → [{"result": test.echo(input)}] (host builtin id 0)
//   spin      → calls the host builtin forever   oom     → grows memory until it fails, then traps
//   burn      → pure-Wasm loop (no host calls)   undefined → []
import wabtInit from 'wabt';

const ENTRYPOINTS = ['echo', 'abort', 'spin', 'oom', 'builtin', 'undefined', 'burn', 'data'];

function dataString(s: string): string {
  return [...new TextEncoder().encode(s + '\0')].map((b) => '\\' + b.toString(16).padStart(2, '0')).join('');
}

export async function buildAbiTestModule(options: { builtinName?: string; burnIterations?: number } = {}): Promise<Uint8Array> {
  const builtinsJson = JSON.stringify({ [options.builtinName ?? 'test.echo']: 0 });
  const entrypointsJson = JSON.stringify(Object.fromEntries(ENTRYPOINTS.map((e, i) => [e, i])));
  const abortMsg = 'test.rego:3:1: eval_conflict_error: complete rules must not produce multiple outputs';
  const burn = options.burnIterations ?? 200_000_000;
  const wat = `
(module
  (import "env" "memory" (memory 2))
  (import "env" "opa_abort" (func $opa_abort (param i32)))
  (import "env" "opa_builtin1" (func $opa_builtin1 (param i32 i32 i32) (result i32)))
  (global $heap (mut i32) (i32.const 65536))
  (global (export "opa_wasm_abi_version") i32 (i32.const 1))
  (global (export "opa_wasm_abi_minor_version") i32 (i32.const 2))
  (data (i32.const 1024) "${dataString(builtinsJson)}")
  (data (i32.const 2048) "${dataString(entrypointsJson)}")
  (data (i32.const 4096) "${dataString(abortMsg)}")
  (data (i32.const 8192) "${dataString('opa_malloc: failed')}")
  (data (i32.const 8448) "${dataString('[{"result":')}")
  (data (i32.const 8512) "${dataString('}]')}")
  (data (i32.const 8576) "${dataString('[]')}")
  (func $alloc (export "opa_malloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $n)))
    (block $ok
      (loop $grow
        (br_if $ok (i32.le_u (global.get $heap) (i32.mul (memory.size) (i32.const 65536))))
        (if (i32.eq (memory.grow (i32.const 1)) (i32.const -1))
          (then (call $opa_abort (i32.const 8192)) (unreachable)))
        (br $grow)))
    (local.get $p))
  (func $strlen (param $p i32) (result i32)
    (local $n i32)
    (block $done (loop $l
      (br_if $done (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $n)))))
      (local.set $n (i32.add (local.get $n) (i32.const 1)))
      (br $l)))
    (local.get $n))
  (func $copy (param $dst i32) (param $src i32) (param $n i32)
    (local $i i32)
    (block $done (loop $l
      (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
      (i32.store8 (i32.add (local.get $dst) (local.get $i)) (i32.load8_u (i32.add (local.get $src) (local.get $i))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $l))))
  (func $parse (export "opa_json_parse") (param $p i32) (param $n i32) (result i32)
    (local $v i32)
    (local.set $v (call $alloc (i32.add (local.get $n) (i32.const 1))))
    (call $copy (local.get $v) (local.get $p) (local.get $n))
    (i32.store8 (i32.add (local.get $v) (local.get $n)) (i32.const 0))
    (local.get $v))
  (func (export "opa_value_parse") (param $p i32) (param $n i32) (result i32)
    (call $parse (local.get $p) (local.get $n)))
  (func (export "opa_json_dump") (param $v i32) (result i32) (local.get $v))
  (func (export "opa_heap_ptr_get") (result i32) (global.get $heap))
  (func (export "opa_heap_ptr_set") (param $p i32) (global.set $heap (local.get $p)))
  (func (export "builtins") (result i32) (i32.const 1024))
  (func (export "entrypoints") (result i32) (i32.const 2048))
  (func $wrap (param $v i32) (result i32)
    (local $a i32) (local $b i32) (local $c i32) (local $out i32)
    (local.set $a (call $strlen (i32.const 8448)))
    (local.set $b (call $strlen (local.get $v)))
    (local.set $c (call $strlen (i32.const 8512)))
    (local.set $out (call $alloc (i32.add (i32.add (local.get $a) (local.get $b)) (i32.add (local.get $c) (i32.const 1)))))
    (call $copy (local.get $out) (i32.const 8448) (local.get $a))
    (call $copy (i32.add (local.get $out) (local.get $a)) (local.get $v) (local.get $b))
    (call $copy (i32.add (local.get $out) (i32.add (local.get $a) (local.get $b))) (i32.const 8512) (i32.add (local.get $c) (i32.const 1)))
    (local.get $out))
  (func (export "opa_eval") (param $r i32) (param $ep i32) (param $data i32) (param $in i32) (param $len i32) (param $hp i32) (param $fmt i32) (result i32)
    (local $v i32) (local $i i32)
    (global.set $heap (local.get $hp))
    (if (i32.eq (local.get $ep) (i32.const 7)) (then (return (call $wrap (local.get $data)))))
    (if (i32.eq (local.get $ep) (i32.const 5)) (then (return (i32.const 8576))))
    (if (i32.eq (local.get $ep) (i32.const 1)) (then (call $opa_abort (i32.const 4096)) (unreachable)))
    (if (i32.eq (local.get $ep) (i32.const 3))
      (then (loop $g (br_if $g (i32.ne (memory.grow (i32.const 16)) (i32.const -1)))) (unreachable)))
    (if (i32.eq (local.get $ep) (i32.const 6))
      (then
        (loop $b
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br_if $b (i32.lt_u (local.get $i) (i32.const ${burn}))))
        (return (i32.const 8576))))
    (if (i32.eqz (local.get $len)) (then (return (i32.const 8576))))
    (local.set $v (call $parse (local.get $in) (local.get $len)))
    (if (i32.eq (local.get $ep) (i32.const 2))
      (then (loop $s (drop (call $opa_builtin1 (i32.const 0) (i32.const 0) (local.get $v))) (br $s))))
    (if (i32.eq (local.get $ep) (i32.const 4))
      (then
        (local.set $v (call $opa_builtin1 (i32.const 0) (i32.const 0) (local.get $v)))
        (if (i32.eqz (local.get $v)) (then (return (i32.const 8576))))))
    (call $wrap (local.get $v)))
)`;
  const wabt = await wabtInit();
  const parsed = wabt.parseWat('abi-test-module.wat', wat);
  try {
    parsed.resolveNames();
    parsed.validate();
    return new Uint8Array(parsed.toBinary({}).buffer);
  } finally {
    parsed.destroy();
  }
}
