//! Putting a kept instance back to the state a fresh one has: what the recycled executor needs.
//!
//! A fresh instance is its module's data segments in a memory of the initial size, its globals at
//! their initial values, its tables as their element segments filled them, and whatever its start
//! function did to those. All of that is read once, right after instantiation ([`Snapshot`]), and
//! written back after every request. The guest's mutable globals (the shadow stack pointer among
//! them) and its tables are not exported by a normal module, so the module is first rewritten to
//! export them under reserved names ([`instrument`]); a module that drops data or element segments
//! is refused, since a dropped segment cannot be restored.

use anyhow::Context as _;
#[cfg(feature = "compiler")]
use wasm_encoder::{ExportKind, ExportSection, RawSection};
#[cfg(feature = "compiler")]
use wasmparser::{ExternalKind, Operator, Parser, Payload, TypeRef};
use wasmtime::{AsContextMut, Global, Instance, Memory, Ref, Table, Val};

/// The export names the rewrite gives a module's mutable globals and tables.
const GLOBAL_PREFIX: &str = "__wasmlab_reset_global_";
const TABLE_PREFIX: &str = "__wasmlab_reset_table_";
/// Every rewritten module exports its memory under this name too: the mark by which a module
/// precompiled from a rewrite is told from one that was not (which a reset could not reach).
const REWRITTEN_MARK: &str = "__wasmlab_reset_rewritten";

/// A module rewritten so that a reset can reach all its state.
#[cfg(feature = "compiler")]
pub struct Instrumented {
    pub wasm: Vec<u8>,
    pub names: ResetNames,
}

/// The names a rewritten module exports its state under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResetNames {
    pub globals: Vec<String>,
    pub tables: Vec<String>,
}

impl ResetNames {
    /// Reads the names back from a compiled module (one precompiled from a rewrite): refused when
    /// the module was not rewritten, since its state would then survive a reset unseen.
    pub fn of_module(module: &wasmtime::Module) -> anyhow::Result<Self> {
        anyhow::ensure!(
            module.get_export(REWRITTEN_MARK).is_some(),
            "the module was not rewritten for resetting: precompile it with --executor recycled"
        );
        let named = |prefix: &str| {
            let mut v: Vec<(u32, String)> = module
                .exports()
                .filter_map(|e| {
                    let i = e.name().strip_prefix(prefix)?.parse().ok()?;
                    Some((i, e.name().to_owned()))
                })
                .collect();
            v.sort();
            v.into_iter().map(|(_, n)| n).collect()
        };
        Ok(Self {
            globals: named(GLOBAL_PREFIX),
            tables: named(TABLE_PREFIX),
        })
    }
}

/// Rewrites `wasm` (binary or text) to export every mutable global and every table it defines.
#[cfg(feature = "compiler")]
pub fn instrument(wasm: &[u8]) -> anyhow::Result<Instrumented> {
    let wasm = wat::parse_bytes(wasm).context("not a Wasm module")?;
    let survey = Survey::of(&wasm)?;
    let mut exports = ExportSection::new();
    for (name, kind, index) in &survey.existing {
        exports.export(name, export_kind(*kind), *index);
    }
    let globals: Vec<String> = survey
        .mutable
        .iter()
        .map(|i| format!("{GLOBAL_PREFIX}{i}"))
        .collect();
    for (name, i) in globals.iter().zip(&survey.mutable) {
        exports.export(name, ExportKind::Global, *i);
    }
    // Tables no instruction can change (most guests': a funcref table filled by element segments
    // for indirect calls) need no restoring, and restoring one costs ~80 ns an element.
    let restored_tables = if survey.tables_change {
        survey.defined_tables
    } else {
        0
    };
    let tables: Vec<String> = (0..restored_tables)
        .map(|i| format!("{TABLE_PREFIX}{i}"))
        .collect();
    for (i, name) in tables.iter().enumerate() {
        exports.export(name, ExportKind::Table, i as u32);
    }
    exports.export(REWRITTEN_MARK, ExportKind::Memory, 0);
    Ok(Instrumented {
        wasm: with_exports(&wasm, &exports)?,
        names: ResetNames { globals, tables },
    })
}

/// What a module has that a reset must restore, found in one pass over it.
#[cfg(feature = "compiler")]
struct Survey {
    /// Indices of its mutable globals.
    mutable: Vec<u32>,
    defined_tables: u32,
    /// Its exports as they are: (name, kind, index).
    existing: Vec<(String, ExternalKind, u32)>,
    /// Whether any instruction can change a table (else they need no restoring).
    tables_change: bool,
}

#[cfg(feature = "compiler")]
impl Survey {
    /// Surveys `wasm`, refusing what a reset cannot undo: dropped segments, imported globals or
    /// tables, no memory.
    fn of(wasm: &[u8]) -> anyhow::Result<Self> {
        let mut s = Survey {
            mutable: Vec::new(),
            defined_tables: 0,
            existing: Vec::new(),
            tables_change: false,
        };
        let (mut imported_globals, mut imported_tables, mut memories) = (0u32, 0u32, 0u32);
        for payload in Parser::new(0).parse_all(wasm) {
            match payload? {
                Payload::ImportSection(reader) => {
                    for import in reader.into_imports() {
                        match import?.ty {
                            TypeRef::Global(_) => imported_globals += 1,
                            TypeRef::Table(_) => imported_tables += 1,
                            TypeRef::Memory(_) => memories += 1,
                            _ => {}
                        }
                    }
                }
                Payload::TableSection(reader) => s.defined_tables = reader.count(),
                Payload::MemorySection(reader) => memories += reader.count(),
                Payload::GlobalSection(reader) => {
                    for (i, g) in reader.into_iter().enumerate() {
                        if g?.ty.mutable {
                            s.mutable.push(imported_globals + i as u32);
                        }
                    }
                }
                Payload::ExportSection(reader) => {
                    for e in reader {
                        let e = e?;
                        s.existing.push((e.name.to_owned(), e.kind, e.index));
                    }
                }
                Payload::CodeSectionEntry(body) => s.tables_change |= changes_tables(&body)?,
                _ => {}
            }
        }
        anyhow::ensure!(
            imported_tables == 0 && imported_globals == 0,
            "the guest imports globals or tables, whose state a reset cannot restore"
        );
        anyhow::ensure!(memories > 0, "the guest has no memory (handler ABI)");
        Ok(s)
    }
}

/// Whether a function body can change a table; an error when it drops a segment.
#[cfg(feature = "compiler")]
/// The bytes of a section or an item by the range wasmparser gives, in u64 offsets.
pub(crate) fn at(range: &std::ops::Range<u64>) -> std::ops::Range<usize> {
    range.start as usize..range.end as usize
}

#[cfg(feature = "compiler")]
pub(crate) fn changes_tables(body: &wasmparser::FunctionBody<'_>) -> anyhow::Result<bool> {
    let mut changes = false;
    let mut ops = body.get_operators_reader()?;
    while !ops.eof() {
        match ops.read()? {
            Operator::DataDrop { .. } => anyhow::bail!(
                "the guest drops a data segment (data.drop), which resetting an instance cannot undo: run it with the pooled executor"
            ),
            Operator::ElemDrop { .. } => anyhow::bail!(
                "the guest drops an element segment (elem.drop), which resetting an instance cannot undo: run it with the pooled executor"
            ),
            Operator::TableSet { .. }
            | Operator::TableGrow { .. }
            | Operator::TableFill { .. }
            | Operator::TableCopy { .. }
            | Operator::TableInit { .. } => changes = true,
            _ => {}
        }
    }
    Ok(changes)
}

/// `wasm` with every section as it was and its export section replaced by `exports` (or added in
/// its place, right before the start, element, data count, code or data sections).
#[cfg(feature = "compiler")]
fn with_exports(wasm: &[u8], exports: &ExportSection) -> anyhow::Result<Vec<u8>> {
    let mut out = wasm_encoder::Module::new();
    let mut exported = false;
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload?;
        let Some((id, range)) = payload.as_section() else {
            continue;
        };
        // Section ids: 7 export; 8 start, 9 element, 12 data count, 10 code, 11 data.
        if id == 7 || (!exported && matches!(id, 8..=12)) {
            out.section(exports);
            exported = true;
            if id == 7 {
                continue;
            }
        }
        out.section(&RawSection {
            id,
            data: &wasm[at(&range)],
        });
    }
    if !exported {
        out.section(exports);
    }
    Ok(out.finish())
}

#[cfg(feature = "compiler")]
pub(crate) fn export_kind(k: ExternalKind) -> ExportKind {
    match k {
        ExternalKind::Func => ExportKind::Func,
        ExternalKind::Table => ExportKind::Table,
        ExternalKind::Memory => ExportKind::Memory,
        ExternalKind::Global => ExportKind::Global,
        ExternalKind::Tag => ExportKind::Tag,
        ExternalKind::FuncExact => ExportKind::Func,
    }
}

/// The state of a fresh instance, read right after instantiation.
pub struct Snapshot {
    memory: Vec<u8>,
    globals: Vec<(Global, Val)>,
    tables: Vec<(Table, Vec<Ref>)>,
}

impl Snapshot {
    pub fn take(
        mut store: impl AsContextMut,
        instance: &Instance,
        memory: Memory,
        names: &ResetNames,
    ) -> anyhow::Result<Self> {
        let mut store = store.as_context_mut();
        let memory_bytes = memory.data(&store).to_vec();
        let mut globals = Vec::new();
        for name in &names.globals {
            let g = instance
                .get_global(&mut store, name)
                .with_context(|| format!("the rewritten module lacks {name}"))?;
            let v = g.get(&mut store);
            globals.push((g, v));
        }
        let mut tables = Vec::new();
        for name in &names.tables {
            let t = instance
                .get_table(&mut store, name)
                .with_context(|| format!("the rewritten module lacks {name}"))?;
            let elements = (0..t.size(&store))
                .map(|i| t.get(&mut store, i).expect("in bounds"))
                .collect();
            tables.push((t, elements));
        }
        Ok(Self {
            memory: memory_bytes,
            globals,
            tables,
        })
    }

    /// Writes the fresh state back. `false` when the instance cannot be reset (its memory or a
    /// table grew): it must then be discarded.
    pub fn restore(&self, mut store: impl AsContextMut, memory: Memory) -> anyhow::Result<bool> {
        let mut store = store.as_context_mut();
        if memory.data_size(&store) != self.memory.len()
            || self
                .tables
                .iter()
                .any(|(t, e)| t.size(&store) != e.len() as u64)
        {
            return Ok(false);
        }
        memory.data_mut(&mut store).copy_from_slice(&self.memory);
        for (g, v) in &self.globals {
            g.set(&mut store, *v)?;
        }
        for (t, elements) in &self.tables {
            for (i, e) in elements.iter().enumerate() {
                t.set(&mut store, i as u64, e.clone())?;
            }
        }
        Ok(true)
    }
}

#[cfg(all(test, feature = "compiler"))]
mod tests {
    use super::*;

    #[test]
    fn exports_mutable_globals_and_tables_and_keeps_the_rest() {
        let wat = r#"(module
            (global $sp (mut i32) (i32.const 1024))
            (global $k i32 (i32.const 7))
            (global $g (mut i64) (i64.const 0))
            (table 2 funcref)
            (memory (export "memory") 1)
            (func (export "f") (result i32) (global.get $k))
            (func $init (global.set $g (i64.const 5)))
            (start $init))"#;
        let i = instrument(wat.as_bytes()).unwrap();
        assert_eq!(
            i.names.globals,
            ["__wasmlab_reset_global_0", "__wasmlab_reset_global_2"]
        );
        // No instruction changes the table: nothing to restore.
        assert!(i.names.tables.is_empty());
        wasmparser::validate(&i.wasm).unwrap();
        let engine = wasmtime::Engine::default();
        let module = wasmtime::Module::new(&engine, &i.wasm).unwrap();
        let names: Vec<&str> = module.exports().map(|e| e.name()).collect();
        for n in ["memory", "f", "__wasmlab_reset_global_0"] {
            assert!(names.contains(&n), "{names:?}");
        }
        // One that can change its table has it exported.
        let i = instrument(
            br#"(module (memory 1) (table 2 funcref) (func (export "f") (table.set 0 (i32.const 0) (ref.null func))))"#,
        )
        .unwrap();
        assert_eq!(i.names.tables, ["__wasmlab_reset_table_0"]);
        wasmparser::validate(&i.wasm).unwrap();
        // A module with no export section gets one.
        let i = instrument(b"(module (memory 1) (global (mut i32) (i32.const 0)))").unwrap();
        wasmparser::validate(&i.wasm).unwrap();
        assert_eq!(i.names.globals.len(), 1);
    }

    #[test]
    fn a_precompiled_rewrite_names_its_state_and_an_unrewritten_module_is_refused() {
        let wat = br#"(module
            (global (mut i32) (i32.const 1)) (global (mut i32) (i32.const 2))
            (memory (export "memory") 1) (table 1 funcref)
            (func (export "f") (table.set 0 (i32.const 0) (ref.null func))))"#;
        let i = instrument(wat).unwrap();
        let engine = wasmtime::Engine::default();
        let bytes = engine.precompile_module(&i.wasm).unwrap();
        // SAFETY: precompiled just now by this engine.
        let module = unsafe { wasmtime::Module::deserialize(&engine, &bytes) }.unwrap();
        assert_eq!(ResetNames::of_module(&module).unwrap(), i.names);
        let plain = wasmtime::Module::new(&engine, wat).unwrap();
        let e = ResetNames::of_module(&plain).unwrap_err().to_string();
        assert!(e.contains("not rewritten"), "{e}");
        let e = instrument(b"(module (global (mut i32) (i32.const 0)))")
            .err()
            .unwrap();
        assert!(e.to_string().contains("no memory"), "{e}");
    }

    #[test]
    fn a_module_that_drops_segments_is_refused() {
        let e = instrument(br#"(module (memory 1) (data "x") (func data.drop 0))"#)
            .err()
            .unwrap();
        assert!(e.to_string().contains("data.drop"), "{e}");
    }
}
