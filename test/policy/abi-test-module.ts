// A hand-written OPA-ABI 1.2 module (values are pointers to NUL-terminated JSON text, which the ABI allows:
// the host never looks inside values) used to drive the engine host through real opa-wasm before — and
// independently of — our Rego compiler. Entrypoints:
//   echo      → [{"result": input}]             data    → [{"result": data}]
//   abort     → opa_abort(eval_conflict_error)   builtin → [{"result": test.echo(input)}] (host builtin id 0)
//   spin      → calls the host builtin forever   oom     → grows memory until it fails, then traps
//   burn      → pure-Wasm loop (no host calls)   undefined → []
import { assembleOpaAbiModule, EMPTY_RESULT_SET } from '../fixtures/opa-abi-wat.ts';

const ENTRYPOINTS = ['echo', 'abort', 'spin', 'oom', 'builtin', 'undefined', 'burn', 'data'];
const ABORT_MESSAGE = 4096;

export async function buildAbiTestModule(
  options: { builtinName?: string; burnIterations?: number } = {},
): Promise<Uint8Array> {
  const burn = options.burnIterations ?? 200_000_000;
  return assembleOpaAbiModule(
    {
      builtins: { [options.builtinName ?? 'test.echo']: 0 },
      entrypoints: Object.fromEntries(ENTRYPOINTS.map((e, i) => [e, i])),
      data: { [ABORT_MESSAGE]: 'test.rego:3:1: eval_conflict_error: complete rules must not produce multiple outputs' },
      evalBody: `
    (if (i32.eq (local.get $ep) (i32.const 7)) (then (return (call $wrap (local.get $data)))))
    (if (i32.eq (local.get $ep) (i32.const 5)) (then (return (i32.const ${EMPTY_RESULT_SET}))))
    (if (i32.eq (local.get $ep) (i32.const 1)) (then (call $opa_abort (i32.const ${ABORT_MESSAGE})) (unreachable)))
    (if (i32.eq (local.get $ep) (i32.const 3))
      (then (loop $g (br_if $g (i32.ne (memory.grow (i32.const 16)) (i32.const -1)))) (unreachable)))
    (if (i32.eq (local.get $ep) (i32.const 6))
      (then
        (loop $b
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br_if $b (i32.lt_u (local.get $i) (i32.const ${burn}))))
        (return (i32.const ${EMPTY_RESULT_SET}))))
    (if (i32.eqz (local.get $len)) (then (return (i32.const ${EMPTY_RESULT_SET}))))
    (local.set $v (call $parse (local.get $in) (local.get $len)))
    (if (i32.eq (local.get $ep) (i32.const 2))
      (then (loop $s (drop (call $opa_builtin1 (i32.const 0) (i32.const 0) (local.get $v))) (br $s))))
    (if (i32.eq (local.get $ep) (i32.const 4))
      (then
        (local.set $v (call $opa_builtin1 (i32.const 0) (i32.const 0) (local.get $v)))
        (if (i32.eqz (local.get $v)) (then (return (i32.const ${EMPTY_RESULT_SET}))))))
    (call $wrap (local.get $v))`,
    },
    'abi-test-module.wat',
  );
}
