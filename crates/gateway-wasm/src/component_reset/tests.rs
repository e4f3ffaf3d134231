use proptest::prelude::*;
use wasmtime::component::{Component, Instance, Linker};
use wasmtime::{Config, Engine, Store};

use super::*;

/// Two modules sharing one memory, as the component tooling links them: `$home` defines the
/// memory (two data segments, one in each 64 KiB page), a mutable global and an allocator the host
/// calls; `$user` gets the memory through a bundle of exports, has a mutable global of its own,
/// stores of every width, bulk writes, and two host calls that write memory the guest never
/// touches (a return area, and a list placed by the allocator).
const TWO_MODULES: &str = r#"
(component
  (import "host" (instance $host
    (export "triple" (func (result (tuple u64 u64 u64))))
    (export "bytes" (func (param "n" u32) (result (list u8))))))
  (core module $home
    (memory (export "memory") 2)
    (global $g (mut i32) (i32.const 7))
    (global $bump (mut i32) (i32.const 100000))
    (data (i32.const 16) "fresh")
    (data (i32.const 70000) "second page")
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      (local $at i32)
      global.get $bump
      local.set $at
      global.get $bump
      local.get 3
      i32.add
      global.set $bump
      local.get $at)
    (func (export "set-g") (param i32) local.get 0 global.set $g)
    (func (export "digest") (result i64)
      (local $i i32) (local $h i64)
      i64.const 0x100000001b3
      local.set $h
      (block $done
        (loop $l
          local.get $i
          i32.const 131072
          i32.ge_u
          br_if $done
          local.get $h
          local.get $i
          i64.load
          i64.xor
          i64.const 0x100000001b3
          i64.mul
          local.set $h
          local.get $i
          i32.const 8
          i32.add
          local.set $i
          br $l))
      local.get $h
      global.get $g
      i64.extend_i32_u
      i64.xor
      global.get $bump
      i64.extend_i32_u
      i64.const 32
      i64.shl
      i64.xor))
  (core instance $h (instantiate $home))
  (alias core export $h "memory" (core memory $mem))
  (alias core export $h "realloc" (core func $realloc))
  (core func $triple (canon lower (func $host "triple") (memory $mem)))
  (core func $bytes (canon lower (func $host "bytes") (memory $mem) (realloc $realloc)))
  (core module $user
    (import "env" "memory" (memory 1))
    (import "host" "triple" (func $triple (param i32)))
    (import "host" "bytes" (func $bytes (param i32 i32)))
    (global $count (mut i32) (i32.const 0))
    (func (export "store") (param $kind i32) (param $at i32) (param $v i64)
      (block $f64 (block $off (block $s64 (block $s32 (block $s16 (block $s8
        local.get $kind
        br_table $s8 $s16 $s32 $s64 $off $f64)
        local.get $at local.get $v i64.store8 return)
        local.get $at local.get $v i64.store16 return)
        local.get $at local.get $v i64.store32 return)
        local.get $at local.get $v i64.store return)
        local.get $at local.get $v i32.wrap_i64 i32.store offset=4093 return)
      local.get $at local.get $v f64.reinterpret_i64 f64.store)
    ;; A struct written through one pointer (whose stores, within a 1 KiB block of each other,
    ;; share their marks), then the pointer moved and written through again.
    (func (export "record") (param $at i32) (param $v i64)
      local.get $at local.get $v i64.store offset=0
      local.get $at local.get $v i64.store offset=500
      local.get $at local.get $v i64.store offset=1018
      local.get $at local.get $v i32.wrap_i64 i32.store16 offset=251
      local.get $at i32.const 700 i32.add local.set $at
      local.get $at local.get $v i64.store offset=8
      local.get $at local.get $v i64.store offset=1021)
    (func (export "fill") (param i32 i32 i32)
      local.get 0 local.get 1 local.get 2 memory.fill)
    (func (export "copy") (param i32 i32 i32)
      local.get 0 local.get 1 local.get 2 memory.copy)
    (func (export "triple") (param i32) local.get 0 call $triple)
    (func (export "bytes") (param $n i32) (param $at i32) local.get $n local.get $at call $bytes)
    (func (export "bump") global.get $count i32.const 1 i32.add global.set $count)
    (func (export "count") (result i32) global.get $count))
  (core instance $env (export "memory" (memory $mem)))
  (core instance $calls (export "triple" (func $triple)) (export "bytes" (func $bytes)))
  (core instance $u (instantiate $user (with "env" (instance $env)) (with "host" (instance $calls))))
  (func (export "store") (param "kind" u32) (param "at" u32) (param "v" u64)
    (canon lift (core func $u "store")))
  (func (export "fill") (param "at" u32) (param "v" u32) (param "n" u32)
    (canon lift (core func $u "fill")))
  (func (export "record") (param "at" u32) (param "v" u64) (canon lift (core func $u "record")))
  (func (export "copy") (param "to" u32) (param "from" u32) (param "n" u32)
    (canon lift (core func $u "copy")))
  (func (export "triple") (param "at" u32) (canon lift (core func $u "triple")))
  (func (export "bytes") (param "n" u32) (param "at" u32) (canon lift (core func $u "bytes")))
  (func (export "bump") (canon lift (core func $u "bump")))
  (func (export "count") (result u32) (canon lift (core func $u "count")))
  (func (export "set-g") (param "v" u32) (canon lift (core func $h "set-g")))
  (func (export "digest") (result u64) (canon lift (core func $h "digest"))))
"#;

/// What a request of the test does to an instance.
#[derive(Debug, Clone)]
enum Op {
    Store { kind: u32, at: u32, v: u64 },
    Record { at: u32, v: u64 },
    Fill { at: u32, v: u32, n: u32 },
    Copy { to: u32, from: u32, n: u32 },
    Triple { at: u32 },
    Bytes { n: u32, at: u32 },
    Bump,
    SetG(u32),
}

const MEMORY: u32 = 131_072;

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u32..6, 0u32..MEMORY - 4093 - 8, any::<u64>()).prop_map(|(kind, at, v)| Op::Store {
            kind,
            at,
            v
        }),
        (0u32..MEMORY - 700 - 1021 - 8, any::<u64>()).prop_map(|(at, v)| Op::Record { at, v }),
        (0u32..MEMORY - 9000, 1u32..256, 0u32..9000).prop_map(|(at, v, n)| Op::Fill { at, v, n }),
        (0u32..MEMORY - 9000, 0u32..MEMORY - 9000, 0u32..9000).prop_map(|(to, from, n)| Op::Copy {
            to,
            from,
            n
        }),
        // Return areas are aligned, as the canonical ABI requires.
        (0u32..(MEMORY - 24) / 8).prop_map(|k| Op::Triple { at: k * 8 }),
        (0u32..1000, 0u32..(MEMORY - 8) / 4).prop_map(|(n, k)| Op::Bytes { n, at: k * 4 }),
        Just(Op::Bump),
        any::<u32>().prop_map(Op::SetG),
    ]
}

struct Rewritten {
    engine: Engine,
    component: Component,
    linker: Linker<()>,
}

impl Rewritten {
    fn new(wat: &str) -> Self {
        let wasm = wat::parse_str(wat).unwrap();
        let rewritten = rewrite(&wasm).unwrap();
        let mut config = Config::new();
        config.wasm_component_model(true);
        let engine = Engine::new(&config).unwrap();
        let component = Component::new(&engine, &rewritten).unwrap();
        let mut linker = Linker::new(&engine);
        let mut host = linker.instance("host").unwrap();
        host.func_wrap("triple", |_, ()| Ok(((u64::MAX, 2u64, u64::MAX - 2),)))
            .unwrap();
        host.func_wrap("bytes", |_, (n,): (u32,)| Ok((vec![0xabu8; n as usize],)))
            .unwrap();
        Rewritten {
            engine,
            component,
            linker,
        }
    }

    fn instance(&self) -> (Store<()>, Instance) {
        let mut store = Store::new(&self.engine, ());
        let instance = self
            .linker
            .instantiate(&mut store, &self.component)
            .unwrap();
        (store, instance)
    }
}

fn call<P: wasmtime::component::ComponentNamedList + wasmtime::component::Lower, R>(
    store: &mut Store<()>,
    instance: &Instance,
    name: &str,
    params: P,
) -> R
where
    R: wasmtime::component::ComponentNamedList + wasmtime::component::Lift,
{
    let f = instance
        .get_typed_func::<P, R>(&mut *store, name)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    f.call(&mut *store, params)
        .unwrap_or_else(|e| panic!("{name}: {e:#}"))
}

fn apply(store: &mut Store<()>, instance: &Instance, op: &Op) {
    match *op {
        Op::Store { kind, at, v } => call::<_, ()>(store, instance, "store", (kind, at, v)),
        Op::Record { at, v } => call::<_, ()>(store, instance, "record", (at, v)),
        Op::Fill { at, v, n } => call::<_, ()>(store, instance, "fill", (at, v, n)),
        Op::Copy { to, from, n } => call::<_, ()>(store, instance, "copy", (to, from, n)),
        Op::Triple { at } => call::<_, ()>(store, instance, "triple", (at,)),
        Op::Bytes { n, at } => call::<_, ()>(store, instance, "bytes", (n, at)),
        Op::Bump => call::<_, ()>(store, instance, "bump", ()),
        Op::SetG(v) => call::<_, ()>(store, instance, "set-g", (v,)),
    }
}

fn state(store: &mut Store<()>, instance: &Instance) -> (u64, u32) {
    let (digest,) = call::<_, (u64,)>(store, instance, "digest", ());
    let (count,) = call::<_, (u32,)>(store, instance, "count", ());
    (digest, count)
}

fn reset(store: &mut Store<()>, instance: &Instance) {
    call::<_, ()>(store, instance, RESET_EXPORT, ());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Whatever requests write, in any module, by the guest or by the host, a reset leaves the
    /// instance's memory and globals as a fresh instance has them, request after request.
    #[test]
    fn a_reset_instance_is_a_fresh_one(requests in prop::collection::vec(prop::collection::vec(op(), 0..10), 1..4)) {
        let r = shared();
        let (mut fresh_store, fresh) = r.instance();
        let expected = state(&mut fresh_store, &fresh);
        let (mut store, kept) = r.instance();
        for ops in &requests {
            for op in ops {
                apply(&mut store, &kept, op);
            }
            reset(&mut store, &kept);
            prop_assert_eq!(state(&mut store, &kept), expected);
        }
    }
}

fn shared() -> &'static Rewritten {
    static R: std::sync::OnceLock<Rewritten> = std::sync::OnceLock::new();
    R.get_or_init(|| Rewritten::new(TWO_MODULES))
}

/// Each of the ways memory is written, alone, far from anything else written: a reset that missed
/// any one of them (a store wider than a byte across a block's end, a bulk write, the host's
/// return area, the list the host places with the allocator, another module's global) would
/// leave it behind.
#[test]
fn each_kind_of_write_is_put_back() {
    let r = shared();
    let (mut store, fresh) = r.instance();
    let expected = state(&mut store, &fresh);
    let cases = [
        Op::Store {
            kind: 3,
            at: 4096 * 3 - 3,
            v: u64::MAX,
        },
        Op::Store {
            kind: 4,
            at: 4096 * 5,
            v: u64::MAX,
        },
        Op::Store {
            kind: 5,
            at: 4096 * 7 - 2,
            v: u64::MAX,
        },
        // The run across two blocks, the moved pointer's last store 3 bytes before the end of a
        // third: the span's two marks, the moved pointer's own and the 16 bytes past a block
        // are all needed.
        Op::Record {
            at: module::BLOCK * 27 - 3 - 700 - 1021,
            v: u64::MAX,
        },
        Op::Fill {
            at: 4096 * 9 + 100,
            v: 0xee,
            n: 3 * 4096,
        },
        Op::Copy {
            to: 4096 * 14,
            from: 70_000,
            n: 11,
        },
        Op::Triple { at: 120_000 },
        Op::Bytes {
            n: 700,
            at: 4096 * 20,
        },
        Op::Bump,
        Op::SetG(99),
    ];
    for op in &cases {
        let (mut store, kept) = r.instance();
        apply(&mut store, &kept, op);
        assert_ne!(state(&mut store, &kept), expected, "{op:?} changed nothing");
        reset(&mut store, &kept);
        assert_eq!(
            state(&mut store, &kept),
            expected,
            "{op:?} was not put back"
        );
    }
}

/// A component of one module in WAT: state in memory, a data segment and a mutable global.
fn component(module_body: &str) -> Vec<u8> {
    let wat = format!(
        r#"(component
            (core module $m
                {module_body}
                (func (export "wasi:http/incoming-handler@0.2.0#handle") (param i32 i32)))
            (core instance $i (instantiate $m)))"#
    );
    wat::parse_str(wat).unwrap()
}

#[test]
fn a_one_module_component_gains_the_reset_export() {
    let c = component(
        r#"(memory (export "memory") 1)
           (global $sp (mut i32) (i32.const 1024))
           (data (i32.const 16) "fresh")"#,
    );
    let out = rewrite(&c).unwrap();
    let mut config = Config::new();
    config.wasm_component_model(true);
    let engine = Engine::new(&config).unwrap();
    let component = Component::new(&engine, &out).unwrap();
    assert!(component.get_export_index(None, RESET_EXPORT).is_some());
}

#[test]
fn what_a_reset_cannot_restore_is_refused() {
    let cases = [
        (r#"(memory 1) (func $s) (start $s)"#, "start function"),
        (
            r#"(memory 1) (table 1 funcref) (func (table.set 0 (i32.const 0) (ref.null func)))"#,
            "changes a table",
        ),
        (r#"(memory 1) (data "x") (func data.drop 0)"#, "data.drop"),
        (r#"(memory i64 1)"#, "64-bit"),
        (r#"(memory 1 1 shared)"#, "shared"),
        (r#"(memory 1) (memory 1)"#, "more than one memory"),
        (
            r#"(import "x" "g" (global i32)) (memory 1) (data (global.get 0) "x")"#,
            "placed where only instantiation tells",
        ),
        (
            r#"(memory 1) (func (i32.atomic.store (i32.const 0) (i32.const 1)))"#,
            "atomic",
        ),
    ];
    for (body, why) in cases {
        let wat = format!(
            r#"(component
                (core module $g (global (export "g") i32 (i32.const 0)))
                (core instance $gi (instantiate $g))
                (core module $m
                    {body}
                    (func (export "wasi:http/incoming-handler@0.2.0#handle") (param i32 i32)))
                (core instance $i (instantiate $m (with "x" (instance $gi)))))"#
        );
        let c = wat::parse_str(wat).unwrap_or_else(|e| panic!("{body}: {e}"));
        let e = rewrite(&c).unwrap_err();
        assert!(format!("{e:#}").contains(why), "{body}: {e:#}");
    }
    let stateless = component("(func)");
    let e = rewrite(&stateless).unwrap_err();
    assert!(format!("{e:#}").contains("nothing to reset"), "{e:#}");
    let core = wat::parse_str("(module)").unwrap();
    assert!(format!("{:#}", rewrite(&core).unwrap_err()).contains("core module"));
}

/// Two modules each defining a memory, and the memory's module made twice: refused.
#[test]
fn a_component_with_two_memories_is_refused() {
    let two = wat::parse_str(
        r#"(component
            (core module $a (memory 1))
            (core module $b (memory 1))
            (core instance (instantiate $a))
            (core instance (instantiate $b)))"#,
    )
    .unwrap();
    assert!(format!("{:#}", rewrite(&two).unwrap_err()).contains("more than one core module"));
    let twice = wat::parse_str(
        r#"(component
            (core module $a (memory 1))
            (core instance (instantiate $a))
            (core instance (instantiate $a)))"#,
    )
    .unwrap();
    assert!(format!("{:#}", rewrite(&twice).unwrap_err()).contains("instantiated 2 times"));
}

/// A host function returning more through memory than the marks after a call cover: refused.
#[test]
fn a_return_area_larger_than_what_is_marked_is_refused() {
    let fields: String = (0..600).map(|_| "u64 ").collect();
    let wat = format!(
        r#"(component
            (import "big" (func $big (result (tuple {fields}))))
            (core module $m (memory (export "memory") 1))
            (core instance $i (instantiate $m))
            (alias core export $i "memory" (core memory $mem))
            (core func (canon lower (func $big) (memory $mem))))"#
    );
    let c = wat::parse_str(wat).unwrap();
    let e = rewrite(&c).unwrap_err();
    assert!(format!("{e:#}").contains("4800 bytes"), "{e:#}");
}

/// The marks memory of a component whose memory is as large as `component-recycled`'s least limit
/// fits under that limit.
#[test]
fn the_marks_fit_the_least_memory_limit() {
    let limit = crate::resettable::RECYCLED_MIN_MEMORY_MIB << 20;
    let marks =
        (u64::from(module::RUNS_AT) + (limit >> module::BLOCK_SHIFT)).div_ceil(1 << 16) << 16;
    assert!(marks <= limit, "{marks} > {limit}");
    assert!(
        marks > (crate::resettable::RECYCLED_MIN_MEMORY_MIB - 1) << 20,
        "a lower limit would do"
    );
}
