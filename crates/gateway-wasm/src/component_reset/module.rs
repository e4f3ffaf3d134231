//! One core module of a component made resettable: its writes to the component's memory tracked
//! block by block, and a `wasmlab:reset` export that puts back what it holds.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context as _, bail, ensure};

use super::coalesce;
use wasm_encoder::reencode::{self, Reencode, RoundtripReencoder};
use wasm_encoder::{
    CodeSection, DataSection, EntityType, ExportKind, ExportSection, Function, FunctionSection,
    ImportSection, MemArg, MemorySection, MemoryType, SectionId, TypeSection, ValType,
};
use wasmparser::{DataKind, ExternalKind, FunctionBody, Operator, Parser, Payload, TypeRef};

/// The granularity of the tracking: a write marks the 1 KiB block it starts in. Finer than a
/// 4 KiB page, it copies less back where a request writes a little in many places (a JavaScript
/// engine's heap: 6–8% less CPU a request; docs/pooled-cost.md).
pub(super) const BLOCK_SHIFT: u32 = 10;
pub(super) const BLOCK: u32 = 1 << BLOCK_SHIFT;
/// Where, in the marks memory, the table of which image run each block belongs to starts: past
/// every mark a 32-bit address can make (2^22 blocks), so no write reaches it.
pub(super) const RUNS_AT: u32 = 1 << (32 - BLOCK_SHIFT);
/// What a store marks beyond the block it starts in: none of Wasm's stores is wider than 16 bytes,
/// so a block's restore also puts back the next block's first 16 bytes.
const WIDEST_STORE: u32 = 16;
/// How many bytes after a host call's last argument the host may have written its results (the
/// canonical ABI's return area), checked against every lowered function's results.
pub(super) const RETURN_AREA: u32 = 4096;
/// The export each rewritten module gains.
pub(super) const RESET: &str = "wasmlab:reset";
/// The marks memory, as the memory's module exports it and the others import it.
pub(super) const MARKS: &str = "wasmlab:dirty";

/// What a module does with the component's memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Memory {
    /// Uses none.
    None,
    /// Defines it: the component's one memory, of this many 64 KiB pages at first.
    Defines { initial_pages: u64 },
    /// Imports it from this module name.
    Imports { module: String },
}

/// What the component-level pass needs to know of a module.
#[derive(Debug)]
pub(super) struct Survey {
    pub memory: Memory,
    /// Defined mutable globals: (index, initial value's expression without its `end`).
    pub mutable_globals: Vec<(u32, Vec<u8>)>,
    /// Active data segments: (offset, bytes); their offsets are constants.
    pub active_data: Vec<(u32, Vec<u8>)>,
    /// Each function's type (imports first), and each type's (params, results).
    pub func_types: Vec<u32>,
    pub types: Vec<(Vec<ValType>, Vec<ValType>)>,
    /// The same, as wasmparser reads them (for instructions' stack effects).
    pub sub_types: Vec<wasmparser::SubType>,
    /// Imported functions: (index, module, name).
    pub func_imports: Vec<(u32, String, String)>,
    /// Exported functions: name → index.
    pub func_exports: BTreeMap<String, u32>,
    /// Whether it puts functions into a table it imports (active element segments), under which
    /// module name.
    pub fills_imported_tables: Vec<String>,
    pub imported_tables: Vec<String>,
    pub uses_simd_stores: bool,
    /// Data segments, active and passive.
    pub data_segments: u32,
}

impl Survey {
    pub(super) fn of(module: &[u8]) -> anyhow::Result<Self> {
        let mut s = Survey {
            memory: Memory::None,
            mutable_globals: Vec::new(),
            active_data: Vec::new(),
            func_types: Vec::new(),
            types: Vec::new(),
            sub_types: Vec::new(),
            func_imports: Vec::new(),
            func_exports: BTreeMap::new(),
            fills_imported_tables: Vec::new(),
            imported_tables: Vec::new(),
            uses_simd_stores: false,
            data_segments: 0,
        };
        let mut imported_globals = 0;
        let mut memories = 0;
        for payload in Parser::new(0).parse_all(module) {
            match payload? {
                Payload::TypeSection(reader) => {
                    for group in reader {
                        for sub in group?.into_types() {
                            s.sub_types.push(sub);
                        }
                    }
                    for sub in &s.sub_types {
                        let wasmparser::CompositeInnerType::Func(t) = &sub.composite_type.inner
                        else {
                            bail!(
                                "a core module of the component has GC types, which the rewrite does not follow"
                            );
                        };
                        let conv = |v: &[wasmparser::ValType]| -> anyhow::Result<Vec<ValType>> {
                            v.iter()
                                .map(|v| {
                                    RoundtripReencoder
                                        .val_type(*v)
                                        .map_err(|e| anyhow::anyhow!("{e}"))
                                })
                                .collect()
                        };
                        s.types.push((conv(t.params())?, conv(t.results())?));
                    }
                }
                Payload::ImportSection(reader) => {
                    for import in reader.into_imports() {
                        let import = import?;
                        match import.ty {
                            TypeRef::Func(t) | TypeRef::FuncExact(t) => {
                                s.func_imports.push((
                                    s.func_types.len() as u32,
                                    import.module.to_owned(),
                                    import.name.to_owned(),
                                ));
                                s.func_types.push(t);
                            }
                            TypeRef::Global(_) => imported_globals += 1,
                            TypeRef::Memory(m) => {
                                memories += 1;
                                ensure!(
                                    !m.shared && !m.memory64,
                                    "a core module imports a shared or 64-bit memory, which a reset does not follow"
                                );
                                s.memory = Memory::Imports {
                                    module: import.module.to_owned(),
                                };
                            }
                            TypeRef::Table(_) => s.imported_tables.push(import.module.to_owned()),
                            TypeRef::Tag(_) => {}
                        }
                    }
                }
                Payload::FunctionSection(reader) => {
                    for t in reader {
                        s.func_types.push(t?);
                    }
                }
                Payload::MemorySection(reader) => {
                    for m in reader {
                        let m = m?;
                        memories += 1;
                        ensure!(
                            !m.shared && !m.memory64,
                            "the component's memory is shared or 64-bit, which a reset does not follow"
                        );
                        s.memory = Memory::Defines {
                            initial_pages: m.initial,
                        };
                    }
                }
                Payload::GlobalSection(reader) => {
                    for (i, g) in reader.into_iter().enumerate() {
                        let g = g?;
                        if g.ty.mutable {
                            let index = imported_globals + i as u32;
                            s.mutable_globals
                                .push((index, expression(&g.init_expr)?.to_vec()));
                        }
                    }
                }
                Payload::ExportSection(reader) => {
                    for e in reader {
                        let e = e?;
                        if matches!(e.kind, ExternalKind::Func | ExternalKind::FuncExact) {
                            s.func_exports.insert(e.name.to_owned(), e.index);
                        }
                    }
                }
                Payload::StartSection { .. } => bail!(
                    "a core module of the component has a start function: what it did at instantiation cannot be told from a fresh instance's state"
                ),
                Payload::ElementSection(reader) => {
                    for e in reader {
                        if let wasmparser::ElementKind::Active { table_index, .. } = e?.kind {
                            let t = table_index.unwrap_or(0) as usize;
                            if let Some(m) = s.imported_tables.get(t) {
                                s.fills_imported_tables.push(m.clone());
                            }
                        }
                    }
                }
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
                            let offset = constant(&offset_expr).context(
                                "a data segment placed where only instantiation tells: the image a reset restores must be known beforehand",
                            )?;
                            s.active_data.push((offset, d.data.to_vec()));
                        }
                    }
                }
                Payload::CodeSectionEntry(body) => {
                    ensure!(
                        !crate::reset::changes_tables(&body)?,
                        "a core module of the component changes a table, which a reset does not restore"
                    );
                    let mut ops = body.get_operators_reader()?;
                    while !ops.eof() {
                        let op = ops.read()?;
                        if let Some((_, ValType::V128)) = store(&op) {
                            s.uses_simd_stores = true;
                        }
                    }
                }
                _ => {}
            }
        }
        ensure!(
            memories <= 1,
            "a core module of the component has more than one memory, which a reset does not follow"
        );
        Ok(s)
    }

    /// Whether anything of an instance of it changes after instantiation.
    pub(super) fn holds_state(&self) -> bool {
        self.memory != Memory::None || !self.mutable_globals.is_empty()
    }
}

/// What the component-level pass decided for a module.
#[derive(Debug, Default)]
pub(super) struct Plan {
    /// Imported functions whose last argument may be a return area the host writes: called
    /// through a wrapper that marks it.
    pub wrap_imports: BTreeSet<u32>,
    /// Exports the host calls to allocate in the memory (canonical ABI `realloc`): wrapped to
    /// mark what they return.
    pub wrap_exports: BTreeSet<String>,
}

/// The module rewritten: writes to the memory marked, `wasmlab:reset` exported; for the module
/// defining the memory, the block marks exported as `wasmlab:dirty` and its reset putting back
/// every marked block; for the others, the marks imported from where they import the memory.
pub(super) fn rewrite(module: &[u8], s: &Survey, plan: &Plan) -> anyhow::Result<Vec<u8>> {
    let mut r = Rewriter::new(s, plan)?;
    let mut out = wasm_encoder::Module::new();
    reencode::utils::parse_core_module(&mut r, &mut out, Parser::new(0), module)
        .map_err(|e| anyhow::anyhow!("rewriting a core module: {e}"))?;
    // Sections the module lacked, after all the others it has.
    r.add_missing(&mut out, None);
    let out = out.finish();
    // Atomic accesses are not marked: a module using them fails here, without the threads
    // proposal.
    wasmparser::Validator::new_with_features(
        wasmparser::WasmFeatures::default() - wasmparser::WasmFeatures::THREADS,
    )
    .validate_all(&out)
    .context("the rewritten core module does not validate (one using atomic operations, which a reset does not follow, does not)")?;
    Ok(out)
}

/// A run of image blocks, copied into a passive segment: what a marked block in it is restored
/// from.
struct Run {
    start: u32,
    bytes: Vec<u8>,
}

/// The initial image of `initial_bytes` of memory, as runs of blocks that are not all zero (gaps
/// of zero blocks shorter than `merge` blocks joined in), at most 255 of them.
fn runs(data: &[(u32, Vec<u8>)], initial_bytes: u32) -> anyhow::Result<Vec<Run>> {
    let mut image = vec![0u8; initial_bytes as usize];
    for (offset, bytes) in data {
        let at = *offset as usize;
        let end = at
            .checked_add(bytes.len())
            .filter(|e| *e <= image.len())
            .context("a data segment lies beyond the initial memory")?;
        image[at..end].copy_from_slice(bytes);
    }
    let blocks = image.len() / BLOCK as usize;
    let nonzero: Vec<bool> = (0..blocks)
        .map(|p| {
            image[p * BLOCK as usize..(p + 1) * BLOCK as usize]
                .iter()
                .any(|b| *b != 0)
        })
        .collect();
    let mut merge = 8;
    loop {
        let mut spans: Vec<(usize, usize)> = Vec::new();
        for (p, nz) in nonzero.iter().enumerate() {
            if !nz {
                continue;
            }
            match spans.last_mut() {
                Some((_, end)) if p - *end <= merge => *end = p + 1,
                _ => spans.push((p, p + 1)),
            }
        }
        if spans.len() <= 255 {
            return Ok(spans
                .into_iter()
                .map(|(a, b)| Run {
                    start: (a as u32) << BLOCK_SHIFT,
                    bytes: image[a * BLOCK as usize..b * BLOCK as usize].to_vec(),
                })
                .collect());
        }
        merge *= 2;
    }
}

struct Rewriter<'a> {
    s: &'a Survey,
    data_segments: u32,
    /// Added types: `[] -> []` and `[i32 i32] -> []`.
    ty_void: u32,
    ty_mark: u32,
    /// Added functions, by index: mark, restore (defining module), reset, wrappers.
    f_mark: u32,
    f_restore: Option<u32>,
    f_reset: u32,
    import_wrappers: BTreeMap<u32, u32>,
    export_wrappers: BTreeMap<String, (u32, u32)>,
    /// For the module defining the memory: the image runs, its size in blocks, the marks memory's
    /// size in 64 KiB pages.
    runs: Vec<Run>,
    blocks: u32,
    marks_pages: u64,
    /// Sections seen, so that those it lacks are added in their place.
    seen: BTreeSet<u8>,
    naming: bool,
}

/// Section ids in the order a module has them (the data count section before the code).
const ORDER: [SectionId; 13] = [
    SectionId::Type,
    SectionId::Import,
    SectionId::Function,
    SectionId::Table,
    SectionId::Memory,
    SectionId::Tag,
    SectionId::Global,
    SectionId::Export,
    SectionId::Start,
    SectionId::Element,
    SectionId::DataCount,
    SectionId::Code,
    SectionId::Data,
];

fn rank(id: SectionId) -> Option<usize> {
    ORDER.iter().position(|s| *s == id)
}

impl<'a> Rewriter<'a> {
    fn new(s: &'a Survey, plan: &'a Plan) -> anyhow::Result<Self> {
        let types = s.types.len() as u32;
        let funcs = s.func_types.len() as u32;
        let defines = matches!(s.memory, Memory::Defines { .. });
        let mut next = funcs;
        let mut take = || {
            next += 1;
            next - 1
        };
        let f_mark = take();
        let f_restore = defines.then(&mut take);
        let f_reset = take();
        let import_wrappers = plan.wrap_imports.iter().map(|i| (*i, take())).collect();
        let mut export_wrappers = BTreeMap::new();
        for name in &plan.wrap_exports {
            let f = *s
                .func_exports
                .get(name)
                .with_context(|| format!("the module exports no function {name}"))?;
            let ty = s.func_types[f as usize];
            ensure!(
                s.types.get(ty as usize) == Some(&(vec![ValType::I32; 4], vec![ValType::I32])),
                "{name}, given to the host as an allocator, does not have an allocator's type"
            );
            export_wrappers.insert(name.clone(), (f, take()));
        }
        for i in &plan.wrap_imports {
            let (params, results) = &s.types[s.func_types[*i as usize] as usize];
            ensure!(
                results.is_empty() && params.last() == Some(&ValType::I32),
                "import {i} cannot take a return area"
            );
        }
        let (runs, blocks, marks_pages) = match s.memory {
            Memory::Defines { initial_pages } => {
                let bytes = u32::try_from(initial_pages << 16)
                    .context("the component's memory starts at 4 GiB or more")?;
                let blocks = bytes >> BLOCK_SHIFT;
                let runs = runs(&s.active_data, bytes)?;
                (
                    runs,
                    blocks,
                    u64::from((RUNS_AT + blocks).div_ceil(1 << 16)),
                )
            }
            _ => {
                ensure!(
                    s.active_data.is_empty(),
                    "a core module other than the memory's writes data segments into it"
                );
                (Vec::new(), 0, 0)
            }
        };
        Ok(Rewriter {
            s,
            data_segments: s.data_segments,
            ty_void: types,
            ty_mark: types + 1,
            f_mark,
            f_restore,
            f_reset,
            import_wrappers,
            export_wrappers,
            runs,
            blocks,
            marks_pages,
            seen: BTreeSet::new(),
            naming: false,
        })
    }

    fn tracks(&self) -> bool {
        self.s.memory != Memory::None
    }

    fn defines(&self) -> bool {
        self.f_restore.is_some()
    }

    fn marks_memory(&self) -> MemoryType {
        MemoryType {
            minimum: self.marks_pages,
            maximum: Some(self.marks_pages),
            memory64: false,
            shared: false,
            page_size_log2: None,
        }
    }

    /// The added functions' types, in index order.
    fn added_function_types(&self) -> Vec<u32> {
        let mut t = vec![self.ty_mark];
        if self.defines() {
            t.push(self.ty_mark);
        }
        t.push(self.ty_void);
        for i in self.import_wrappers.keys() {
            t.push(self.s.func_types[*i as usize]);
        }
        for (f, _) in self.export_wrappers.values() {
            t.push(self.s.func_types[*f as usize]);
        }
        t
    }

    fn add_types(&self, types: &mut TypeSection) {
        types.ty().function([], []);
        types.ty().function([ValType::I32, ValType::I32], []);
    }

    fn add_exports(&self, exports: &mut ExportSection) {
        exports.export(RESET, ExportKind::Func, self.f_reset);
        if self.defines() {
            exports.export(MARKS, ExportKind::Memory, 1);
        }
    }

    fn add_imports(&self, imports: &mut ImportSection) {
        if let Memory::Imports { module } = &self.s.memory {
            imports.import(
                module,
                MARKS,
                EntityType::Memory(self.marks_memory_imported()),
            );
        }
    }

    /// The marks memory as an importer declares it: any size the defining module gives.
    fn marks_memory_imported(&self) -> MemoryType {
        MemoryType {
            minimum: 0,
            maximum: None,
            memory64: false,
            shared: false,
            page_size_log2: None,
        }
    }

    fn add_data(&self, data: &mut DataSection) {
        for run in &self.runs {
            data.passive(run.bytes.iter().copied());
        }
        // Which run each block is in (0: none, the block starts zeroed).
        let mut table = vec![0u8; self.blocks as usize];
        for (k, run) in self.runs.iter().enumerate() {
            let first = run.start >> BLOCK_SHIFT;
            let n = run.bytes.len() as u32 >> BLOCK_SHIFT;
            for p in first..first + n {
                table[p as usize] = k as u8 + 1;
            }
        }
        data.active(
            1,
            &wasm_encoder::ConstExpr::i32_const(RUNS_AT as i32),
            table,
        );
    }

    fn total_data(&self) -> u32 {
        self.data_segments + self.runs.len() as u32 + 1
    }

    fn add_code(&self, code: &mut CodeSection) {
        code.function(&self.mark_body());
        if self.defines() {
            code.function(&self.restore_body());
        }
        code.function(&self.reset_body());
        for i in self.import_wrappers.keys() {
            code.function(&self.import_wrapper(*i));
        }
        for (f, _) in self.export_wrappers.values() {
            code.function(&self.export_wrapper(*f));
        }
    }

    /// `mark(at, len)`: marks every block `at..at+len` touches (none when `len` is 0). An
    /// `at + len` past 4 GiB makes the fill trap, as the write it marks would.
    fn mark_body(&self) -> Function {
        let mut f = Function::new([(1, ValType::I32)]);
        let first = 2;
        f.instructions()
            .local_get(1)
            .i32_eqz()
            .if_(wasm_encoder::BlockType::Empty)
            .return_()
            .end()
            .local_get(0)
            .i32_const(BLOCK_SHIFT as i32)
            .i32_shr_u()
            .local_tee(first)
            .i32_const(1)
            .local_get(0)
            .local_get(1)
            .i32_add()
            .i32_const(1)
            .i32_sub()
            .i32_const(BLOCK_SHIFT as i32)
            .i32_shr_u()
            .local_get(first)
            .i32_sub()
            .i32_const(1)
            .i32_add()
            .memory_fill(1)
            .end();
        f
    }

    /// `restore(block, len)`: puts back the first `len` bytes of a block as instantiation left them,
    /// from the run it is in, or zeroes.
    fn restore_body(&self) -> Function {
        let mut f = Function::new([(1, ValType::I32)]);
        let (block, len, at) = (0, 1, 2);
        let n = self.runs.len() as u32;
        let mut ins = f.instructions();
        ins.local_get(block)
            .i32_const(BLOCK_SHIFT as i32)
            .i32_shl()
            .local_set(at);
        // block $done { block $run(n-1) { ... block $run0 { block $zero { br_table } zero } run0 } ... }
        ins.block(wasm_encoder::BlockType::Empty);
        for _ in 0..=n {
            ins.block(wasm_encoder::BlockType::Empty);
        }
        ins.local_get(block)
            .i32_load8_u(MemArg {
                offset: RUNS_AT as u64,
                align: 0,
                memory_index: 1,
            })
            .br_table((0..=n).collect::<Vec<_>>(), 0)
            .end();
        ins.local_get(at)
            .i32_const(0)
            .local_get(len)
            .memory_fill(0)
            .br(n);
        for (k, run) in self.runs.iter().enumerate() {
            ins.end();
            ins.local_get(at)
                .local_get(at)
                .i32_const(run.start as i32)
                .i32_sub()
                .local_get(len)
                .memory_init(0, self.data_segments + k as u32)
                .br(n - 1 - k as u32);
        }
        ins.end().end();
        f
    }

    /// `wasmlab:reset`: every marked block put back (and the 16 bytes after it, where a write that
    /// began in it may have reached), the marks cleared, every mutable global given its initial
    /// value again.
    fn reset_body(&self) -> Function {
        let mut f = Function::new([(2, ValType::I32)]);
        let (i, p) = (0, 1);
        let mut ins = f.instructions();
        if let Some(restore) = self.f_restore {
            let words = self.blocks.div_ceil(8) * 8;
            let mark = |offset| MemArg {
                offset,
                align: 0,
                memory_index: 1,
            };
            ins.block(wasm_encoder::BlockType::Empty)
                .loop_(wasm_encoder::BlockType::Empty)
                .local_get(i)
                .i32_const(words as i32)
                .i32_ge_u()
                .br_if(1)
                .local_get(i)
                .i64_load(MemArg {
                    offset: 0,
                    align: 0,
                    memory_index: 1,
                })
                .i64_const(0)
                .i64_ne()
                .if_(wasm_encoder::BlockType::Empty)
                .local_get(i)
                .local_set(p)
                .loop_(wasm_encoder::BlockType::Empty)
                .local_get(p)
                .i32_load8_u(mark(0))
                .local_get(p)
                .i32_const(self.blocks as i32)
                .i32_lt_u()
                .i32_and()
                .if_(wasm_encoder::BlockType::Empty)
                .local_get(p)
                .i32_const(BLOCK as i32)
                .call(restore)
                .local_get(p)
                .i32_const(1)
                .i32_add()
                .i32_const(self.blocks as i32)
                .i32_lt_u()
                // A marked next block is put back whole in this same pass.
                .local_get(p)
                .i32_load8_u(mark(1))
                .i32_eqz()
                .i32_and()
                .if_(wasm_encoder::BlockType::Empty)
                .local_get(p)
                .i32_const(1)
                .i32_add()
                .i32_const(WIDEST_STORE as i32)
                .call(restore)
                .end()
                .end()
                .local_get(p)
                .i32_const(1)
                .i32_add()
                .local_tee(p)
                .local_get(i)
                .i32_const(8)
                .i32_add()
                .i32_lt_u()
                .br_if(0)
                .end()
                .end()
                .local_get(i)
                .i32_const(8)
                .i32_add()
                .local_set(i)
                .br(0)
                .end()
                .end()
                .i32_const(0)
                .i32_const(0)
                .i32_const(words as i32)
                .memory_fill(1);
        }
        for (index, init) in &self.s.mutable_globals {
            f.raw(init.iter().copied());
            f.instructions().global_set(*index);
        }
        f.instructions().end();
        f
    }

    /// Calls import `i`, then marks the return area its last argument points at.
    fn import_wrapper(&self, i: u32) -> Function {
        let (params, _) = &self.s.types[self.s.func_types[i as usize] as usize];
        let mut f = Function::new([]);
        let mut ins = f.instructions();
        for p in 0..params.len() as u32 {
            ins.local_get(p);
        }
        ins.call(i)
            .local_get(params.len() as u32 - 1)
            .i32_const(RETURN_AREA as i32)
            .call(self.f_mark)
            .end();
        f
    }

    /// Calls the allocator `f`, then marks what it gave: `(old, old_size, align, size) -> at`.
    fn export_wrapper(&self, func: u32) -> Function {
        let mut f = Function::new([(1, ValType::I32)]);
        f.instructions()
            .local_get(0)
            .local_get(1)
            .local_get(2)
            .local_get(3)
            .call(func)
            .local_tee(4)
            .local_get(3)
            .call(self.f_mark)
            .local_get(4)
            .end();
        f
    }

    /// Adds the sections the module lacks that come before `before` (all of them at the end).
    fn add_missing(&mut self, module: &mut wasm_encoder::Module, before: Option<SectionId>) {
        let limit = before.and_then(rank).unwrap_or(ORDER.len());
        for id in &ORDER[..limit] {
            if self.seen.contains(&(*id as u8)) {
                continue;
            }
            self.seen.insert(*id as u8);
            match id {
                SectionId::Type => {
                    let mut t = TypeSection::new();
                    self.add_types(&mut t);
                    module.section(&t);
                }
                SectionId::Import if matches!(self.s.memory, Memory::Imports { .. }) => {
                    let mut i = ImportSection::new();
                    self.add_imports(&mut i);
                    module.section(&i);
                }
                SectionId::Function => {
                    let mut f = FunctionSection::new();
                    for t in self.added_function_types() {
                        f.function(t);
                    }
                    module.section(&f);
                }
                SectionId::Export => {
                    let mut e = ExportSection::new();
                    self.add_exports(&mut e);
                    module.section(&e);
                }
                SectionId::DataCount if self.defines() => {
                    module.section(&wasm_encoder::DataCountSection {
                        count: self.total_data(),
                    });
                }
                SectionId::Code => {
                    let mut c = CodeSection::new();
                    self.add_code(&mut c);
                    module.section(&c);
                }
                SectionId::Data if self.defines() => {
                    let mut d = DataSection::new();
                    self.add_data(&mut d);
                    module.section(&d);
                }
                _ => {}
            }
        }
    }

    /// The function body with every write to the memory marked first.
    fn instrumented(&mut self, body: FunctionBody<'_>, index: u32) -> anyhow::Result<Function> {
        let (params, _) = &self.s.types[self.s.func_types[index as usize] as usize];
        let mut locals = Vec::new();
        let mut count = params.len() as u32;
        for pair in body.get_locals_reader()? {
            let (n, ty) = pair?;
            count += n;
            locals.push((
                n,
                RoundtripReencoder
                    .val_type(ty)
                    .map_err(|e| anyhow::anyhow!("{e}"))?,
            ));
        }
        // Scratch locals: the address, then a value of each type a store may take, the length.
        let addr = count;
        let mut scratch = vec![
            ValType::I32,
            ValType::I32,
            ValType::I64,
            ValType::F32,
            ValType::F64,
        ];
        if self.s.uses_simd_stores {
            scratch.push(ValType::V128);
        }
        let value = |t: ValType| -> u32 {
            addr + 1
                + match t {
                    ValType::I32 => 0,
                    ValType::I64 => 1,
                    ValType::F32 => 2,
                    ValType::F64 => 3,
                    _ => 4,
                }
        };
        let len = addr + scratch.len() as u32;
        let tracks = self.tracks();
        for t in &scratch {
            locals.push((1, *t));
        }
        locals.push((1, ValType::I32));
        let mut f = Function::new(locals);
        let ops = body
            .get_operators_reader()?
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        let marks = if tracks {
            coalesce::plan(&ops, self.s, count, |op| {
                store(op).map(|(arg, _)| u32::try_from(arg.offset).unwrap_or(u32::MAX))
            })
        } else {
            Vec::new()
        };
        // Marks the block `addr + offset` starts in.
        let mark = |f: &mut Function, offset: u32| {
            let ins = &mut f.instructions();
            ins.local_get(addr);
            if offset != 0 {
                ins.i32_const(offset as i32).i32_add();
            }
            ins.i32_const(BLOCK_SHIFT as i32)
                .i32_shr_u()
                .i32_const(1)
                .i32_store8(MemArg {
                    offset: 0,
                    align: 0,
                    memory_index: 1,
                });
        };
        for (i, op) in ops.into_iter().enumerate() {
            if tracks {
                if let Some((arg, ty)) = store(&op) {
                    ensure!(arg.memory == 0, "a store to a second memory");
                    let offset = u32::try_from(arg.offset).context("a store offset past 4 GiB")?;
                    match marks[i] {
                        Some(coalesce::Marks::Covered) => {}
                        Some(coalesce::Marks::Span { low, high }) => {
                            f.instructions().local_set(value(ty)).local_set(addr);
                            mark(&mut f, low);
                            if high != low {
                                mark(&mut f, high);
                            }
                            f.instructions().local_get(addr).local_get(value(ty));
                        }
                        _ => {
                            f.instructions().local_set(value(ty)).local_set(addr);
                            mark(&mut f, offset);
                            f.instructions().local_get(addr).local_get(value(ty));
                        }
                    }
                } else if let Some(memory) = bulk_destination(&op) {
                    ensure!(memory == 0, "a bulk write to a second memory");
                    // [at, x, len]: mark at..at+len, then the write.
                    f.instructions()
                        .local_set(len)
                        .local_set(value(ValType::I32))
                        .local_tee(addr)
                        .local_get(len)
                        .call(self.f_mark)
                        .local_get(addr)
                        .local_get(value(ValType::I32))
                        .local_get(len);
                }
            }
            let ins = self
                .instruction(op)
                .map_err(|e| anyhow::anyhow!("re-encoding an instruction: {e}"))?;
            f.instruction(&ins);
        }
        Ok(f)
    }
}

impl Reencode for Rewriter<'_> {
    type Error = anyhow::Error;

    fn function_index(&mut self, func: u32) -> Result<u32, reencode::Error<Self::Error>> {
        if self.naming {
            return Ok(func);
        }
        Ok(self.import_wrappers.get(&func).copied().unwrap_or(func))
    }

    fn intersperse_section_hook(
        &mut self,
        module: &mut wasm_encoder::Module,
        _after: Option<SectionId>,
        before: Option<SectionId>,
    ) -> Result<(), reencode::Error<Self::Error>> {
        if let Some(b) = before
            && rank(b).is_some()
        {
            self.add_missing(module, Some(b));
            self.seen.insert(b as u8);
        }
        Ok(())
    }

    fn parse_type_section(
        &mut self,
        types: &mut TypeSection,
        section: wasmparser::TypeSectionReader<'_>,
    ) -> Result<(), reencode::Error<Self::Error>> {
        reencode::utils::parse_type_section(self, types, section)?;
        self.add_types(types);
        Ok(())
    }

    fn parse_import_section(
        &mut self,
        imports: &mut ImportSection,
        section: wasmparser::ImportSectionReader<'_>,
    ) -> Result<(), reencode::Error<Self::Error>> {
        reencode::utils::parse_import_section(self, imports, section)?;
        self.add_imports(imports);
        Ok(())
    }

    fn parse_function_section(
        &mut self,
        functions: &mut FunctionSection,
        section: wasmparser::FunctionSectionReader<'_>,
    ) -> Result<(), reencode::Error<Self::Error>> {
        reencode::utils::parse_function_section(self, functions, section)?;
        for t in self.added_function_types() {
            functions.function(t);
        }
        Ok(())
    }

    fn parse_memory_section(
        &mut self,
        memories: &mut MemorySection,
        section: wasmparser::MemorySectionReader<'_>,
    ) -> Result<(), reencode::Error<Self::Error>> {
        reencode::utils::parse_memory_section(self, memories, section)?;
        if self.defines() {
            memories.memory(self.marks_memory());
        }
        Ok(())
    }

    fn parse_export_section(
        &mut self,
        exports: &mut ExportSection,
        section: wasmparser::ExportSectionReader<'_>,
    ) -> Result<(), reencode::Error<Self::Error>> {
        for e in section {
            let e = e.map_err(reencode::Error::ParseError)?;
            let index = match e.kind {
                ExternalKind::Func | ExternalKind::FuncExact => {
                    match self.export_wrappers.get(e.name) {
                        Some((_, wrapper)) => *wrapper,
                        None => self.function_index(e.index)?,
                    }
                }
                _ => e.index,
            };
            exports.export(e.name, crate::reset::export_kind(e.kind), index);
        }
        self.add_exports(exports);
        Ok(())
    }

    fn data_count(&mut self, count: u32) -> Result<u32, reencode::Error<Self::Error>> {
        Ok(if self.defines() {
            self.total_data()
        } else {
            count
        })
    }

    fn parse_data_section(
        &mut self,
        data: &mut DataSection,
        section: wasmparser::DataSectionReader<'_>,
    ) -> Result<(), reencode::Error<Self::Error>> {
        reencode::utils::parse_data_section(self, data, section)?;
        if self.defines() {
            self.add_data(data);
        }
        Ok(())
    }

    fn parse_code_section(
        &mut self,
        code: &mut CodeSection,
        section: wasmparser::CodeSectionReader<'_>,
    ) -> Result<(), reencode::Error<Self::Error>> {
        let imports = self.s.func_imports.len() as u32;
        for (i, body) in section.into_iter().enumerate() {
            let body = body.map_err(reencode::Error::ParseError)?;
            let f = self
                .instrumented(body, imports + i as u32)
                .map_err(reencode::Error::UserError)?;
            code.function(&f);
        }
        self.add_code(code);
        Ok(())
    }

    fn parse_custom_section(
        &mut self,
        module: &mut wasm_encoder::Module,
        section: wasmparser::CustomSectionReader<'_>,
    ) -> Result<(), reencode::Error<Self::Error>> {
        self.naming = true;
        let r = reencode::utils::parse_custom_section(self, module, section);
        self.naming = false;
        r
    }
}

/// What wasmparser needs of a module to tell an instruction's stack effect.
impl wasmparser::ModuleArity for Survey {
    fn sub_type_at(&self, type_idx: u32) -> Option<&wasmparser::SubType> {
        self.sub_types.get(type_idx as usize)
    }

    fn tag_type_arity(&self, _at: u32) -> Option<(u32, u32)> {
        None
    }

    fn type_index_of_function(&self, function_idx: u32) -> Option<u32> {
        self.func_types.get(function_idx as usize).copied()
    }

    fn func_type_of_cont_type(&self, _c: &wasmparser::ContType) -> Option<&wasmparser::FuncType> {
        None
    }

    fn sub_type_of_ref_type(&self, _rt: &wasmparser::RefType) -> Option<&wasmparser::SubType> {
        None
    }

    fn control_stack_height(&self) -> u32 {
        0
    }

    fn label_block(&self, _depth: u32) -> Option<(wasmparser::BlockType, wasmparser::FrameKind)> {
        None
    }
}

/// A store's memory argument and the type of the value it stores.
fn store(op: &Operator<'_>) -> Option<(wasmparser::MemArg, ValType)> {
    use Operator::*;
    Some(match op {
        I32Store { memarg } | I32Store8 { memarg } | I32Store16 { memarg } => {
            (*memarg, ValType::I32)
        }
        I64Store { memarg }
        | I64Store8 { memarg }
        | I64Store16 { memarg }
        | I64Store32 { memarg } => (*memarg, ValType::I64),
        F32Store { memarg } => (*memarg, ValType::F32),
        F64Store { memarg } => (*memarg, ValType::F64),
        V128Store { memarg }
        | V128Store8Lane { memarg, .. }
        | V128Store16Lane { memarg, .. }
        | V128Store32Lane { memarg, .. }
        | V128Store64Lane { memarg, .. } => (*memarg, ValType::V128),
        _ => return None,
    })
}

/// The memory a bulk operation writes, `[at, x, len]` on the stack.
fn bulk_destination(op: &Operator<'_>) -> Option<u32> {
    match op {
        Operator::MemoryFill { mem } => Some(*mem),
        Operator::MemoryCopy { dst_mem, .. } => Some(*dst_mem),
        Operator::MemoryInit { mem, .. } => Some(*mem),
        _ => None,
    }
}

/// A constant expression's instructions, without the `end` that closes it; `ref.func` is
/// refused (it would need a declaration).
fn expression<'a>(e: &wasmparser::ConstExpr<'a>) -> anyhow::Result<&'a [u8]> {
    for op in e.get_operators_reader() {
        if let Operator::RefFunc { .. } = op? {
            bail!("a global initialised with ref.func, which a reset does not restore");
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
        (Operator::I32Const { value }, Operator::End) => Some(value as u32),
        _ => None,
    }
}
