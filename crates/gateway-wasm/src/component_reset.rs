//! Making a `wasi:http` component's instance resettable to a fresh one: what `component-recycled`
//! needs.
//!
//! Wasmtime gives the host no way into a component's core instances, so the reset is put inside
//! the component: its one stateful core module (the program; the component tooling's shim and
//! fixup modules hold no memory and no mutable global, and their tables are filled once, when
//! instantiated) gets a wrapper around its `wasi:http/incoming-handler#handle` export that calls
//! the handler and then puts the instance back as instantiation left it:
//! - its memory zeroed up to its initial size and its data segments copied in again (from
//!   passive copies of them the rewrite adds: active segments are dropped once applied); where
//!   the segments' places are constants, only what they do not cover is zeroed;
//! - every mutable global back to its initial value.
//!
//! That is a fresh instance's state only when instantiation did nothing else, so a module with a
//! start function, with instructions that change a table or drop a segment, with more than one
//! memory or imported globals, is refused; so is a component with more than one such module or
//! with core modules in a nested component (wit-component nests one without modules, to type its
//! exports). A memory that grew cannot be shrunk back: the executor discards such an
//! instance (it sees the growth through its resource limiter), as it discards one that trapped.
//! The wrapper's name in the name section marks a rewritten component, so that a precompiled one
//! that was not rewritten is refused.

use std::ops::Range;

use anyhow::{Context as _, bail, ensure};
use wasm_encoder::{
    CodeSection, ComponentSectionId, DataCountSection, DataSection, ExportSection, FunctionSection,
    IndirectNameMap, NameMap, NameSection, RawSection,
};
use wasmparser::{DataKind, Encoding, ExternalKind, KnownCustom, Name, Parser, Payload, TypeRef};

use crate::component::WRAPPER_NAME;
use crate::reset::{at, export_kind};

/// The export whose calls the wrapper takes over (any 0.2.x version of the interface).
fn is_handler(name: &str) -> bool {
    name.starts_with("wasi:http/incoming-handler@0.2") && name.ends_with("#handle")
}

/// Rewrites the component `wasm` so that every call of its handler leaves its instance as a
/// fresh one.
pub fn rewrite(wasm: &[u8]) -> anyhow::Result<Vec<u8>> {
    ensure!(
        !Parser::is_core_wasm(wasm),
        "it is a core module: component-recycled runs wasi:http components"
    );
    let mut out = wasm_encoder::Component::new();
    let mut inside: Range<u64> = 0..0;
    let mut rewritten = 0;
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload.context("not a valid component")?;
        if let Payload::Version {
            encoding, range, ..
        } = &payload
            && !inside.contains(&range.start)
        {
            ensure!(*encoding == Encoding::Component, "not a component");
        }
        let Some((id, range)) = payload.as_section() else {
            continue;
        };
        // The sections of a nested module: copied with it.
        if inside.contains(&range.start) {
            continue;
        }
        match payload {
            // wit-component nests one to give the exports their types: no module in it.
            Payload::ComponentSection {
                unchecked_range, ..
            } => {
                inside = unchecked_range.clone();
                for p in Parser::new(0).parse_all(&wasm[at(&unchecked_range)]) {
                    if let Payload::ModuleSection { .. } = p? {
                        bail!(
                            "a nested component has core modules, whose state is not checked here: run it with --executor component"
                        );
                    }
                }
                out.section(&RawSection {
                    id: ComponentSectionId::Component as u8,
                    data: &wasm[at(&range)],
                });
            }
            Payload::ModuleSection {
                unchecked_range, ..
            } => {
                inside = unchecked_range.clone();
                let module = &wasm[at(&unchecked_range)];
                let data = match module_with_reset(module)? {
                    Some(m) => {
                        rewritten += 1;
                        m
                    }
                    None => module.to_vec(),
                };
                out.section(&RawSection {
                    id: ComponentSectionId::CoreModule as u8,
                    data: &data,
                });
            }
            _ => {
                out.section(&RawSection {
                    id,
                    data: &wasm[at(&range)],
                });
            }
        }
    }
    ensure!(
        rewritten == 1,
        "no core module of the component both holds its state and exports wasi:http/incoming-handler#handle: it cannot be reset"
    );
    Ok(out.finish())
}

/// What a core module holds that a reset must restore, and where its handler is.
#[derive(Default)]
struct Survey<'a> {
    func_imports: u32,
    imported_globals: u32,
    memories: Vec<wasmparser::MemoryType>,
    imports_memory: bool,
    /// Each defined function's type, and each type's number of parameters.
    func_types: Vec<u32>,
    type_params: Vec<u32>,
    /// Each defined function's body, as encoded (locals and code).
    bodies: Vec<&'a [u8]>,
    /// (index, the initial value's expression without its `end`).
    mutable_globals: Vec<(u32, &'a [u8])>,
    /// Active segments into memory 0: (offset expression without `end`, bytes, the offset when
    /// the expression is a constant).
    active_data: Vec<(&'a [u8], &'a [u8], Option<u32>)>,
    data_segments: u32,
    handler: Option<u32>,
    start: bool,
    changes_tables: bool,
}

impl<'a> Survey<'a> {
    fn of(module: &'a [u8]) -> anyhow::Result<Self> {
        let mut s = Survey::default();
        for payload in Parser::new(0).parse_all(module) {
            match payload? {
                Payload::ImportSection(reader) => {
                    for import in reader.into_imports() {
                        match import?.ty {
                            TypeRef::Func(_) | TypeRef::FuncExact(_) => s.func_imports += 1,
                            TypeRef::Global(_) => s.imported_globals += 1,
                            TypeRef::Memory(_) => s.imports_memory = true,
                            _ => {}
                        }
                    }
                }
                Payload::TypeSection(reader) => {
                    for t in reader.into_iter_err_on_gc_types() {
                        s.type_params.push(t?.params().len() as u32);
                    }
                }
                Payload::FunctionSection(reader) => {
                    for t in reader {
                        s.func_types.push(t?);
                    }
                }
                Payload::MemorySection(reader) => {
                    for m in reader {
                        s.memories.push(m?);
                    }
                }
                Payload::GlobalSection(reader) => {
                    for (i, g) in reader.into_iter().enumerate() {
                        let g = g?;
                        if g.ty.mutable {
                            let index = s.imported_globals + i as u32;
                            s.mutable_globals.push((index, expression(&g.init_expr)?));
                        }
                    }
                }
                Payload::ExportSection(reader) => {
                    for e in reader {
                        let e = e?;
                        if e.kind == ExternalKind::Func && is_handler(e.name) {
                            s.handler = Some(e.index);
                        }
                    }
                }
                Payload::StartSection { .. } => s.start = true,
                Payload::DataSection(reader) => {
                    for d in reader {
                        let d = d?;
                        s.data_segments += 1;
                        if let DataKind::Active {
                            memory_index,
                            offset_expr,
                        } = d.kind
                        {
                            ensure!(memory_index == 0, "a data segment for a second memory");
                            s.active_data.push((
                                expression(&offset_expr)?,
                                d.data,
                                constant(&offset_expr),
                            ));
                        }
                    }
                }
                Payload::CodeSectionEntry(body) => {
                    s.changes_tables |= crate::reset::changes_tables(&body)?;
                    s.bodies.push(body.as_bytes());
                }
                _ => {}
            }
        }
        Ok(s)
    }

    /// Whether anything in an instance of the module changes after instantiation.
    fn holds_state(&self) -> bool {
        !self.memories.is_empty() || !self.mutable_globals.is_empty() || self.changes_tables
    }
}

/// A constant expression's instructions, without the `end` that closes it (so that they can be
/// put in a function body); `ref.func` is refused (it would need a declaration).
fn expression<'a>(e: &wasmparser::ConstExpr<'a>) -> anyhow::Result<&'a [u8]> {
    for op in e.get_operators_reader() {
        if let wasmparser::Operator::RefFunc { .. } = op? {
            bail!("a global or segment initialised with ref.func");
        }
    }
    let mut reader = e.get_binary_reader();
    let bytes = reader.read_bytes(reader.bytes_remaining())?;
    Ok(&bytes[..bytes.len() - 1])
}

/// The value of a constant expression that is one `i32.const`.
fn constant(e: &wasmparser::ConstExpr<'_>) -> Option<u32> {
    let mut ops = e.get_operators_reader();
    match (ops.read().ok()?, ops.read().ok()?) {
        (wasmparser::Operator::I32Const { value }, wasmparser::Operator::End) => Some(value as u32),
        _ => None,
    }
}

/// The ranges of `0..end` that no segment covers, when every segment's place is a constant:
/// what a reset must zero, since the segments copied in again overwrite the rest (a byte two
/// segments cover ends as the later one has it either way). With a segment at a place known only
/// at instantiation, all of `0..end`.
#[allow(
    clippy::single_range_in_vec_init,
    reason = "a list of ranges, which may have one"
)]
fn uncovered(segments: &[(&[u8], &[u8], Option<u32>)], end: u32) -> Vec<Range<u32>> {
    let mut covered = Vec::with_capacity(segments.len());
    for (_, bytes, offset) in segments {
        let Some(start) = *offset else {
            return vec![0..end];
        };
        let stop = start.saturating_add(bytes.len() as u32).min(end);
        if start < stop {
            covered.push(start..stop);
        }
    }
    covered.sort_by_key(|r| r.start);
    let mut gaps = Vec::new();
    let mut at = 0;
    for r in covered {
        if r.start > at {
            gaps.push(at..r.start);
        }
        at = at.max(r.end);
    }
    if at < end {
        gaps.push(at..end);
    }
    gaps
}

/// `module` with the reset wrapper around its handler, when it is the module holding the
/// component's state; `None` for a module that holds none; an error for one that holds state a
/// reset cannot restore.
fn module_with_reset(module: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
    let s = Survey::of(module)?;
    if !s.holds_state() {
        return Ok(None);
    }
    let Some(handler) = s.handler else {
        bail!(
            "a core module other than the one exporting the handler holds state (memory, mutable globals, or tables it changes): the component cannot be reset; run it with --executor component"
        );
    };
    ensure!(
        !s.start,
        "the component's module has a start function: what it did cannot be told from a fresh instance's state"
    );
    ensure!(
        !s.changes_tables,
        "the component's module changes a table, which a reset does not restore"
    );
    ensure!(
        !s.imports_memory && s.memories.len() == 1 && !s.memories[0].memory64,
        "the component's module must define exactly one 32-bit memory"
    );
    ensure!(
        s.imported_globals == 0,
        "the component's module imports globals, whose state a reset cannot restore"
    );
    let defined = handler
        .checked_sub(s.func_imports)
        .context("the handler is an imported function")?;
    let handler_type = s.func_types[defined as usize];
    let wrapper = s.func_imports + s.func_types.len() as u32;
    let initial_bytes = u32::try_from(s.memories[0].initial << 16)
        .context("the initial memory is 4 GiB or more")?;

    let mut body = wasm_encoder::Function::new([]);
    let params = *s
        .type_params
        .get(handler_type as usize)
        .context("the handler's type is not in the type section")?;
    for i in 0..params {
        body.instructions().local_get(i);
    }
    body.instructions().call(handler);
    // Zeroing the bytes the data segments cover would be undone at once: a reset writes each
    // byte of the initial memory once (a fresh instance's stack and heap are zero).
    for gap in uncovered(&s.active_data, initial_bytes) {
        body.instructions()
            .i32_const(gap.start as i32)
            .i32_const(0)
            .i32_const(gap.len() as i32)
            .memory_fill(0);
    }
    for (i, (offset, bytes, _)) in s.active_data.iter().enumerate() {
        body.raw(offset.iter().copied());
        body.instructions()
            .i32_const(0)
            .i32_const(bytes.len() as i32)
            .memory_init(0, s.data_segments + i as u32);
    }
    for (index, init) in &s.mutable_globals {
        body.raw(init.iter().copied());
        body.instructions().global_set(*index);
    }
    body.instructions().end();

    let mut out = wasm_encoder::Module::new();
    let mut inside: Range<u64> = 0..0;
    let mut counted = false;
    let mut named = false;
    for payload in Parser::new(0).parse_all(module) {
        let payload = payload?;
        let Some((id, range)) = payload.as_section() else {
            continue;
        };
        if inside.contains(&range.start) {
            continue;
        }
        match payload {
            Payload::FunctionSection(reader) => {
                let mut f = FunctionSection::new();
                for t in reader {
                    f.function(t?);
                }
                f.function(handler_type);
                out.section(&f);
            }
            Payload::ExportSection(reader) => {
                let mut e = ExportSection::new();
                for export in reader {
                    let export = export?;
                    let index = if export.kind == ExternalKind::Func && is_handler(export.name) {
                        wrapper
                    } else {
                        export.index
                    };
                    e.export(export.name, export_kind(export.kind), index);
                }
                out.section(&e);
            }
            Payload::DataCountSection { .. } => {
                out.section(&DataCountSection {
                    count: s.data_segments + s.active_data.len() as u32,
                });
                counted = true;
            }
            Payload::CodeSectionStart { range, .. } => {
                inside = range;
                if !counted {
                    out.section(&DataCountSection {
                        count: s.data_segments + s.active_data.len() as u32,
                    });
                    counted = true;
                }
                let mut code = CodeSection::new();
                for b in &s.bodies {
                    code.raw(b);
                }
                code.function(&body);
                out.section(&code);
            }
            Payload::DataSection(reader) => {
                let mut data = DataSection::new();
                for d in reader.clone() {
                    data.raw(&module[at(&d?.range)]);
                }
                for (_, bytes, _) in &s.active_data {
                    data.passive(bytes.iter().copied());
                }
                out.section(&data);
            }
            Payload::CustomSection(c) if matches!(c.as_known(), KnownCustom::Name(_)) => {
                let KnownCustom::Name(reader) = c.as_known() else {
                    unreachable!()
                };
                out.section(&names_with_wrapper(reader, wrapper)?);
                named = true;
            }
            _ => {
                out.section(&RawSection {
                    id,
                    data: &module[at(&range)],
                });
            }
        }
    }
    if !named {
        let mut names = NameSection::new();
        let mut functions = NameMap::new();
        functions.append(wrapper, WRAPPER_NAME);
        names.functions(&functions);
        out.section(&names);
    }
    let out = out.finish();
    wasmparser::Validator::new()
        .validate_all(&out)
        .context("the rewritten module does not validate")?;
    Ok(Some(out))
}

/// The module's name section with the wrapper's name added to its function names: in the
/// function names it has, else in a function subsection of its own, placed after the module's
/// name and before the others as the subsections' order requires.
fn names_with_wrapper(
    reader: wasmparser::NameSectionReader<'_>,
    wrapper: u32,
) -> anyhow::Result<NameSection> {
    let mut names = NameSection::new();
    let wrapper_only = || {
        let mut functions = NameMap::new();
        functions.append(wrapper, WRAPPER_NAME);
        functions
    };
    let mut has_functions = false;
    for subsection in reader {
        let subsection = subsection?;
        if !has_functions && !matches!(subsection, Name::Module { .. } | Name::Function(_)) {
            names.functions(&wrapper_only());
            has_functions = true;
        }
        match subsection {
            Name::Function(map) => {
                let mut functions = NameMap::new();
                for naming in map {
                    let naming = naming?;
                    functions.append(naming.index, naming.name);
                }
                functions.append(wrapper, WRAPPER_NAME);
                names.functions(&functions);
                has_functions = true;
            }
            Name::Module { name, .. } => names.module(name),
            Name::Local(map) => names.locals(&indirect(map)?),
            Name::Label(map) => names.labels(&indirect(map)?),
            Name::Type(map) => names.types(&direct(map)?),
            Name::Table(map) => names.tables(&direct(map)?),
            Name::Memory(map) => names.memories(&direct(map)?),
            Name::Global(map) => names.globals(&direct(map)?),
            Name::Element(map) => names.elements(&direct(map)?),
            Name::Data(map) => names.data(&direct(map)?),
            Name::Field(map) => names.fields(&indirect(map)?),
            Name::Tag(map) => names.tags(&direct(map)?),
            Name::Parameter(map) => names.parameters(&indirect(map)?),
            Name::TagParameter(map) => names.tag_parameters(&indirect(map)?),
            Name::Unknown { ty, data, .. } => names.raw(ty, data),
        }
    }
    if !has_functions {
        names.functions(&wrapper_only());
    }
    Ok(names)
}

fn direct(map: wasmparser::NameMap<'_>) -> anyhow::Result<NameMap> {
    let mut out = NameMap::new();
    for naming in map {
        let naming = naming?;
        out.append(naming.index, naming.name);
    }
    Ok(out)
}

fn indirect(map: wasmparser::IndirectNameMap<'_>) -> anyhow::Result<IndirectNameMap> {
    let mut out = IndirectNameMap::new();
    for naming in map {
        let naming = naming?;
        out.append(naming.index, &direct(naming.names)?);
    }
    Ok(out)
}

#[cfg(all(test, feature = "compiler"))]
mod tests {
    use super::*;

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
    fn the_handler_is_wrapped_and_the_segments_copied() {
        let c = component(
            r#"(memory (export "memory") 1)
               (global $sp (mut i32) (i32.const 1024))
               (global $k i32 (i32.const 7))
               (data (i32.const 16) "fresh")"#,
        );
        let out = rewrite(&c).unwrap();
        wasmparser::Validator::new().validate_all(&out).unwrap();
        let text = listing(&out);
        assert!(text.contains("memory.fill"), "{text}");
        assert!(text.contains("memory.init"), "{text}");
        assert!(text.contains(WRAPPER_NAME), "{text}");
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
            (r#"(memory i64 1)"#, "32-bit memory"),
        ];
        for (body, why) in cases {
            let e = rewrite(&component(body)).unwrap_err();
            assert!(format!("{e:#}").contains(why), "{body}: {e:#}");
        }
        let stateless = component("(func)");
        let e = rewrite(&stateless).unwrap_err();
        assert!(format!("{e:#}").contains("cannot be reset"), "{e:#}");
        let core = wat::parse_str("(module)").unwrap();
        assert!(format!("{:#}", rewrite(&core).unwrap_err()).contains("core module"));
    }

    #[test]
    #[allow(
        clippy::single_range_in_vec_init,
        reason = "lists of ranges, some with one"
    )]
    fn a_reset_zeroes_what_no_segment_covers() {
        let seg = |offset: Option<u32>, len: usize| (&b""[..], &[7u8; 64][..len], offset);
        // Unsorted and overlapping, one reaching past the end.
        let segs = [
            seg(Some(40), 20),
            seg(Some(10), 10),
            seg(Some(15), 10),
            seg(Some(90), 20),
        ];
        assert_eq!(uncovered(&segs, 100), vec![0..10, 25..40, 60..90]);
        assert_eq!(uncovered(&[], 100), vec![0..100]);
        assert_eq!(uncovered(&[seg(Some(0), 64)], 64), vec![]);
        // An empty segment covers nothing; one placed by a global leaves all of it to zero.
        assert_eq!(uncovered(&[seg(Some(5), 0)], 10), vec![0..10]);
        assert_eq!(uncovered(&[seg(Some(0), 8), seg(None, 8)], 10), vec![0..10]);
    }

    /// The module sections of a component, printed for the assertions above.
    fn listing(component: &[u8]) -> String {
        let mut ops = String::new();
        for p in Parser::new(0).parse_all(component) {
            match p.unwrap() {
                Payload::CodeSectionEntry(body) => {
                    for op in body.get_operators_reader().unwrap() {
                        ops.push_str(&format!("{:?}\n", op.unwrap()));
                    }
                }
                Payload::CustomSection(c) => {
                    if let KnownCustom::Name(names) = c.as_known() {
                        for n in names {
                            if let Name::Function(map) = n.unwrap() {
                                for naming in map {
                                    ops.push_str(naming.unwrap().name);
                                    ops.push('\n');
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        ops.replace("MemoryFill", "memory.fill")
            .replace("MemoryInit", "memory.init")
    }
}
