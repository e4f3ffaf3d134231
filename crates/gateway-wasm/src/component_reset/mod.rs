//! Making a `wasi:http` component's instance resettable to a fresh one: what `component-recycled`
//! needs, for components whose state spans several core modules (a JavaScript engine and its
//! WASI adapter, CPython's shared libraries) as for one-module Rust ones.
//!
//! Wasmtime gives the host no way into a component's core instances, so the reset is put inside
//! the component, which gains an export `wasmlab-reset` (a function of no arguments) that the
//! executor calls after each request. It puts every core instance back as instantiation left it:
//! - **the memory**, block by block: every module that writes the component's one memory marks the
//!   1 KiB blocks it writes in a second, private memory (`wasmlab:dirty`, which no guest code can
//!   address), before each store, `memory.fill`, `memory.copy` and `memory.init`; so do the
//!   allocators the host calls to place what it hands the guest (the canonical ABI's `realloc`)
//!   and the host calls that return through a return area (the area marked after the call). The
//!   reset then restores only the marked blocks, from passive copies of the memory's initial image
//!   (or zeroes), and clears the marks. A request costs what it wrote, not the image's size:
//!   the 9.3 MB of a JavaScript engine's, the 13 MB of CPython's.
//! - **every mutable global** of every module back to its initial value.
//!
//! That is a fresh instance's state only when instantiation did nothing else and the state lives
//! only there, so a component is refused when one of its modules has a start function, changes a
//! table or drops a segment, has more than one memory or a shared one, uses atomic accesses, or
//! places data where only instantiation tells; when more than one module defines a memory, or the
//! memory's module is instantiated twice; when a module other than the memory's puts data into it;
//! when the host may write elsewhere (canonical built-ins other than lifting, lowering and
//! resources; a return area larger than what is marked); when a module fills the table of one that
//! writes the memory with functions not its own (calls the marks would miss); or when core
//! modules sit in a nested component. A memory that grew cannot be shrunk back: the executor
//! discards such an instance (it sees the growth through its resource limiter), as it discards
//! one that trapped.

mod abi;
mod coalesce;
mod module;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use anyhow::{Context as _, bail, ensure};
use wasm_encoder::{
    Alias, CanonicalFunctionSection, ComponentAliasSection, ComponentExportKind,
    ComponentExportSection, ComponentSectionId, ComponentTypeSection, ExportKind, InstanceSection,
    ModuleArg, ModuleSection, RawSection,
};
use wasmparser::{
    CanonicalFunction, CanonicalOption, ComponentAlias, Encoding, ExternalKind, Instance, Parser,
    Payload, Validator, WasmFeatures,
};

use crate::reset::at;
use crate::resettable::RESET_EXPORT;
use module::{MARKS, Memory, Plan, RESET, Survey};

/// A core instance of the component.
enum CoreInstance {
    Module {
        module: u32,
        args: Vec<(String, u32)>,
    },
    Exports(Vec<(String, ExternalKind, u32)>),
}

/// Where a core function of the component comes from.
enum CoreFunc {
    Export { instance: u32, name: String },
    Lowered,
    Builtin,
}

/// Rewrites the component `wasm` so that calling its `wasmlab-reset` export after a request
/// leaves each instance of it as a fresh one.
pub(crate) fn rewrite(wasm: &[u8]) -> anyhow::Result<Vec<u8>> {
    ensure!(
        !Parser::is_core_wasm(wasm),
        "it is a core module: component-recycled runs wasi:http components"
    );
    let types = Validator::new_with_features(WasmFeatures::all())
        .validate_all(wasm)
        .context("not a valid component")?;
    let types = types.as_ref();

    // The component's own sections (not those of the modules and components nested in it).
    let mut sections: Vec<(u8, Range<usize>)> = Vec::new();
    let mut modules: Vec<Range<usize>> = Vec::new();
    let mut instances: Vec<CoreInstance> = Vec::new();
    let mut funcs: Vec<CoreFunc> = Vec::new();
    let mut memories: Vec<u32> = Vec::new();
    let mut tables: Vec<(u32, String)> = Vec::new();
    let mut reallocs: BTreeSet<u32> = BTreeSet::new();
    let mut lowered_results = 0u32;
    // For each alias section: how many core memories there are after it.
    let mut memories_after: BTreeMap<usize, usize> = BTreeMap::new();
    let mut inside: Range<u64> = 0..0;
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
        if inside.contains(&range.start) {
            continue;
        }
        let range = at(&range);
        match payload {
            Payload::ComponentSection {
                unchecked_range, ..
            } => {
                inside = unchecked_range.clone();
                for p in Parser::new(0).parse_all(&wasm[at(&unchecked_range)]) {
                    if let Payload::ModuleSection { .. } = p? {
                        bail!(
                            "a nested component has core modules, whose state is not followed here: run it with --executor component"
                        );
                    }
                }
            }
            Payload::ModuleSection {
                unchecked_range, ..
            } => {
                inside = unchecked_range.clone();
                modules.push(at(&unchecked_range));
            }
            Payload::InstanceSection(reader) => {
                for i in reader {
                    instances.push(match i? {
                        Instance::Instantiate { module_index, args } => CoreInstance::Module {
                            module: module_index,
                            args: args.iter().map(|a| (a.name.to_owned(), a.index)).collect(),
                        },
                        Instance::FromExports(items) => CoreInstance::Exports(
                            items
                                .iter()
                                .map(|e| (e.name.to_owned(), e.kind, e.index))
                                .collect(),
                        ),
                    });
                }
            }
            Payload::ComponentAliasSection(reader) => {
                for a in reader {
                    if let ComponentAlias::CoreInstanceExport {
                        kind,
                        instance_index,
                        name,
                    } = a?
                    {
                        match kind {
                            ExternalKind::Func | ExternalKind::FuncExact => {
                                funcs.push(CoreFunc::Export {
                                    instance: instance_index,
                                    name: name.to_owned(),
                                })
                            }
                            ExternalKind::Memory => memories.push(instance_index),
                            ExternalKind::Table => tables.push((instance_index, name.to_owned())),
                            _ => {}
                        }
                    }
                }
                memories_after.insert(sections.len(), memories.len());
            }
            Payload::ComponentCanonicalSection(reader) => {
                for c in reader {
                    let c = c?;
                    let options = match &c {
                        CanonicalFunction::Lift { options, .. } => options.clone(),
                        CanonicalFunction::Lower {
                            func_index,
                            options,
                        } => {
                            let ty = &types[types.component_function_at(*func_index)];
                            if let Some(result) = &ty.result {
                                lowered_results =
                                    lowered_results.max(abi::size_align(types, result).0);
                            }
                            funcs.push(CoreFunc::Lowered);
                            options.clone()
                        }
                        CanonicalFunction::ResourceNew { .. }
                        | CanonicalFunction::ResourceDrop { .. }
                        | CanonicalFunction::ResourceRep { .. } => {
                            funcs.push(CoreFunc::Builtin);
                            Box::default()
                        }
                        other => bail!(
                            "the component uses a canonical built-in that may write its memory unseen ({}): run it with --executor component",
                            format!("{other:?}").split([' ', '{']).next().unwrap_or("?")
                        ),
                    };
                    for o in options.iter() {
                        match o {
                            CanonicalOption::Realloc(f) => {
                                reallocs.insert(*f);
                            }
                            CanonicalOption::Async | CanonicalOption::Callback(_) => bail!(
                                "the component lifts or lowers functions asynchronously (WASI 0.3): run it with --executor component-reused"
                            ),
                            _ => {}
                        }
                    }
                }
            }
            _ => {}
        }
        sections.push((id, range));
    }
    ensure!(
        lowered_results <= module::RETURN_AREA,
        "a function the component imports returns {lowered_results} bytes through memory, more than the {} a reset follows",
        module::RETURN_AREA
    );

    let surveys = modules
        .iter()
        .map(|r| Survey::of(&wasm[r.clone()]))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let instantiations = |m: u32| {
        instances
            .iter()
            .enumerate()
            .filter_map(move |(i, inst)| match inst {
                CoreInstance::Module { module, args } if *module == m => Some((i as u32, args)),
                _ => None,
            })
    };

    // The module defining the memory, and its one instance.
    let homes: Vec<u32> = (0..modules.len() as u32)
        .filter(|m| matches!(surveys[*m as usize].memory, Memory::Defines { .. }))
        .collect();
    ensure!(
        homes.len() <= 1,
        "more than one core module of the component defines a memory, which a reset does not follow"
    );
    let home = match homes.first() {
        Some(m) => {
            let made: Vec<u32> = instantiations(*m).map(|(i, _)| i).collect();
            ensure!(
                made.len() == 1,
                "the core module holding the component's memory is instantiated {} times",
                made.len()
            );
            Some(made[0])
        }
        None => None,
    };
    let tracks = |m: u32| surveys[m as usize].memory != Memory::None;
    if home.is_none() {
        ensure!(
            !(0..modules.len() as u32).any(tracks),
            "a core module imports a memory no module of the component defines"
        );
    }

    // What the host calls to allocate in the memory, wrapped where it is exported.
    let mut plans: Vec<Plan> = (0..modules.len()).map(|_| Plan::default()).collect();
    for f in &reallocs {
        let (m, name) = resolve_export(&instances, &funcs, *f)
            .context("an allocator the host calls is not a core module's export")?;
        ensure!(
            tracks(m),
            "the allocator {name} is exported by a core module that does not use the memory"
        );
        plans[m as usize].wrap_exports.insert(name);
    }
    // Imported functions that may be the host's (directly, or through a module that does not
    // use the memory, as the component tooling's shims) and take a return area: wrapped.
    for m in 0..modules.len() as u32 {
        if !tracks(m) {
            continue;
        }
        let s = &surveys[m as usize];
        for (_, args) in instantiations(m) {
            for (index, module_name, name) in &s.func_imports {
                let (params, results) = &s.types[s.func_types[*index as usize] as usize];
                if !results.is_empty() || params.last() != Some(&wasm_encoder::ValType::I32) {
                    continue;
                }
                let from = args.iter().find(|(n, _)| n == module_name).map(|(_, i)| *i);
                let written_unseen = match from {
                    Some(i) => may_write_unseen(&instances, &funcs, &surveys, i, name, 0),
                    None => true,
                };
                if written_unseen {
                    plans[m as usize].wrap_imports.insert(*index);
                }
            }
        }
    }
    // A module that fills a table with functions: not the table of one that uses the memory
    // (its calls through that table would bypass the marks).
    for m in 0..modules.len() as u32 {
        let s = &surveys[m as usize];
        if tracks(m) || s.fills_imported_tables.is_empty() {
            continue;
        }
        for (_, args) in instantiations(m) {
            for module_name in &s.fills_imported_tables {
                let Some((_, i)) = args.iter().find(|(n, _)| n == module_name) else {
                    continue;
                };
                let owners: Vec<u32> = match &instances[*i as usize] {
                    CoreInstance::Module { module, .. } => vec![*module],
                    CoreInstance::Exports(items) => items
                        .iter()
                        .filter(|(_, k, _)| *k == ExternalKind::Table)
                        .filter_map(|(_, _, t)| tables.get(*t as usize))
                        .filter_map(|(inst, _)| match &instances[*inst as usize] {
                            CoreInstance::Module { module, .. } => Some(*module),
                            _ => None,
                        })
                        .collect(),
                };
                ensure!(
                    !owners.into_iter().any(tracks),
                    "a core module puts functions into the table of one that writes the memory: calls through it would not be followed"
                );
            }
        }
    }

    // The block marks reach the modules that import the memory where they get it: the memory's
    // module exports them, and each bundle of exports holding the memory gains them.
    let marks_alias = match home {
        Some(h) => {
            let first = memories.iter().position(|i| *i == h);
            match first {
                None => None,
                Some(first) => {
                    let (section, count) = memories_after
                        .iter()
                        .find(|(_, n)| **n > first)
                        .map(|(s, n)| (*s, *n))
                        .context("a memory alias outside alias sections")?;
                    ensure!(
                        count == memories.len(),
                        "the component aliases core memories more than once, which the rewrite does not renumber"
                    );
                    Some((section, count as u32))
                }
            }
        }
        None => None,
    };
    let home_memory = |index: u32| home.is_some() && memories.get(index as usize).copied() == home;

    let mut out = wasm_encoder::Component::new();
    let mut module_index = 0;
    for (n, (id, range)) in sections.iter().enumerate() {
        if *id == ComponentSectionId::CoreModule as u8 {
            let m = module_index;
            module_index += 1;
            let s = &surveys[m as usize];
            let p = &plans[m as usize];
            if rewrites(s, p) {
                let rewritten = module::rewrite(&wasm[modules[m as usize].clone()], s, p)
                    .with_context(|| format!("core module {m}"))?;
                out.section(&RawSection {
                    id: *id,
                    data: &rewritten,
                });
                continue;
            }
        }
        if *id == ComponentSectionId::CoreInstance as u8
            && let Some((_, marks)) = marks_alias
        {
            // Re-encoded with the marks beside the memory in every bundle holding it.
            let reader = wasmparser::InstanceSectionReader::new(wasmparser::BinaryReader::new(
                &wasm[range.clone()],
                0,
            ))?;
            let mut section = InstanceSection::new();
            for i in reader {
                match i? {
                    Instance::Instantiate { module_index, args } => {
                        section.instantiate(
                            module_index,
                            args.iter()
                                .map(|a| (a.name, ModuleArg::Instance(a.index)))
                                .collect::<Vec<_>>(),
                        );
                    }
                    Instance::FromExports(items) => {
                        let mut list: Vec<(&str, ExportKind, u32)> = items
                            .iter()
                            .map(|e| (e.name, crate::reset::export_kind(e.kind), e.index))
                            .collect();
                        if items
                            .iter()
                            .any(|e| e.kind == ExternalKind::Memory && home_memory(e.index))
                        {
                            list.push((MARKS, ExportKind::Memory, marks));
                        }
                        section.export_items(list);
                    }
                }
            }
            out.section(&section);
            continue;
        }
        out.section(&RawSection {
            id: *id,
            data: &wasm[range.clone()],
        });
        if let (Some((after, _)), Some(h)) = (marks_alias, home)
            && after == n
        {
            let mut aliases = ComponentAliasSection::new();
            aliases.alias(Alias::CoreInstanceExport {
                instance: h,
                kind: ExportKind::Memory,
                name: MARKS,
            });
            out.section(&aliases);
        }
    }

    // One core module calls every instance's reset, in the order they were made; the component
    // exports it lifted.
    let resets: Vec<u32> = instances
        .iter()
        .enumerate()
        .filter_map(|(i, inst)| match inst {
            CoreInstance::Module { module, .. } => {
                let m = *module as usize;
                rewrites(&surveys[m], &plans[m]).then_some(i as u32)
            }
            _ => None,
        })
        .collect();
    ensure!(
        !resets.is_empty(),
        "no core module of the component holds state: there is nothing to reset; run it with --executor component"
    );
    out.section(&ModuleSection(&caller(resets.len() as u32)));
    let mut made = InstanceSection::new();
    made.instantiate(
        modules.len() as u32,
        resets
            .iter()
            .enumerate()
            .map(|(k, i)| (format!("i{k}"), ModuleArg::Instance(*i)))
            .collect::<Vec<_>>(),
    );
    out.section(&made);
    let caller_instance = types.core_instance_count();
    let mut alias = ComponentAliasSection::new();
    alias.alias(Alias::CoreInstanceExport {
        instance: caller_instance,
        kind: ExportKind::Func,
        name: "reset",
    });
    out.section(&alias);
    let core_func = funcs.len() as u32;
    let mut ty = ComponentTypeSection::new();
    ty.function()
        .params(Vec::<(&str, wasm_encoder::ComponentValType)>::new())
        .result(None);
    out.section(&ty);
    let mut canon = CanonicalFunctionSection::new();
    canon.lift(core_func, types.component_type_count(), []);
    out.section(&canon);
    let mut export = ComponentExportSection::new();
    export.export(
        RESET_EXPORT,
        ComponentExportKind::Func,
        types.component_function_count(),
        None,
    );
    out.section(&export);

    let out = out.finish();
    Validator::new_with_features(WasmFeatures::all())
        .validate_all(&out)
        .context("the rewritten component does not validate")?;
    Ok(out)
}

/// Whether a module is rewritten: it holds state, or marks what the host writes through it.
fn rewrites(s: &Survey, p: &Plan) -> bool {
    s.holds_state() || !p.wrap_exports.is_empty() || !p.wrap_imports.is_empty()
}

/// The core module that calls the `wasmlab:reset` of each of `n` instances given as `i0`, `i1`...
fn caller(n: u32) -> wasm_encoder::Module {
    use wasm_encoder::{
        CodeSection, EntityType, ExportSection, Function, FunctionSection, ImportSection,
        TypeSection,
    };
    let mut types = TypeSection::new();
    types.ty().function([], []);
    let mut imports = ImportSection::new();
    for k in 0..n {
        imports.import(&format!("i{k}"), RESET, EntityType::Function(0));
    }
    let mut functions = FunctionSection::new();
    functions.function(0);
    let mut exports = ExportSection::new();
    exports.export("reset", ExportKind::Func, n);
    let mut body = Function::new([]);
    for k in 0..n {
        body.instructions().call(k);
    }
    body.instructions().end();
    let mut code = CodeSection::new();
    code.function(&body);
    let mut module = wasm_encoder::Module::new();
    module
        .section(&types)
        .section(&imports)
        .section(&functions)
        .section(&exports)
        .section(&code);
    module
}

/// The core module and export name a core function of the component is, through bundles.
fn resolve_export(instances: &[CoreInstance], funcs: &[CoreFunc], f: u32) -> Option<(u32, String)> {
    let mut f = f;
    for _ in 0..64 {
        let CoreFunc::Export { instance, name } = funcs.get(f as usize)? else {
            return None;
        };
        match instances.get(*instance as usize)? {
            CoreInstance::Module { module, .. } => return Some((*module, name.clone())),
            CoreInstance::Exports(items) => {
                f = items
                    .iter()
                    .find(|(n, k, _)| n == name && *k == ExternalKind::Func)?
                    .2;
            }
        }
    }
    None
}

/// Whether the function a module gets as `name` from instance `from` may write the memory without
/// marking it: the host's (lowered), or a module's that does not use the memory (a shim calling
/// through a table), or an import a module passes on.
fn may_write_unseen(
    instances: &[CoreInstance],
    funcs: &[CoreFunc],
    surveys: &[Survey],
    from: u32,
    name: &str,
    depth: u32,
) -> bool {
    if depth > 64 {
        return true;
    }
    match instances.get(from as usize) {
        Some(CoreInstance::Exports(items)) => {
            let Some((_, _, f)) = items.iter().find(|(n, k, _)| {
                n == name && matches!(k, ExternalKind::Func | ExternalKind::FuncExact)
            }) else {
                return true;
            };
            match funcs.get(*f as usize) {
                Some(CoreFunc::Builtin) => false,
                Some(CoreFunc::Export { instance, name }) => {
                    may_write_unseen(instances, funcs, surveys, *instance, name, depth + 1)
                }
                _ => true,
            }
        }
        Some(CoreInstance::Module { module, .. }) => {
            let s = &surveys[*module as usize];
            match s.func_exports.get(name) {
                Some(f) => {
                    s.memory == Memory::None || s.func_imports.iter().any(|(i, _, _)| i == f)
                }
                None => true,
            }
        }
        None => true,
    }
}

#[cfg(all(test, feature = "compiler"))]
mod tests;
