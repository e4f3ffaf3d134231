//! The canonical ABI's sizes: how many bytes the host may write at a return area.

use wasmparser::PrimitiveValType;
use wasmparser::component_types::{ComponentDefinedType, ComponentValType};
use wasmparser::types::TypesRef;

/// (size, alignment) in bytes of a value of type `t` stored in linear memory.
pub(super) fn size_align(types: TypesRef<'_>, t: &ComponentValType) -> (u32, u32) {
    let id = match t {
        ComponentValType::Primitive(p) => return primitive(*p),
        ComponentValType::Type(id) => *id,
    };
    match &types[id] {
        ComponentDefinedType::Primitive(p) => primitive(*p),
        ComponentDefinedType::Record(r) => fields(types, r.fields.values()),
        ComponentDefinedType::Tuple(t) => fields(types, t.types.iter()),
        ComponentDefinedType::Variant(v) => variant(
            types,
            v.cases.len(),
            v.cases.values().filter_map(|c| c.ty.as_ref()),
        ),
        ComponentDefinedType::Option { ty, .. } => variant(types, 2, [ty]),
        ComponentDefinedType::Result { ok, err, .. } => {
            variant(types, 2, ok.iter().chain(err.iter()))
        }
        ComponentDefinedType::Enum(cases) => {
            let d = discriminant(cases.len());
            (d, d)
        }
        ComponentDefinedType::Flags(names) => match names.len() {
            0 => (0, 1),
            1..=8 => (1, 1),
            9..=16 => (2, 2),
            n => (4 * n.div_ceil(32) as u32, 4),
        },
        ComponentDefinedType::List { .. } | ComponentDefinedType::Map { .. } => (8, 4),
        ComponentDefinedType::FixedLengthList {
            element, length, ..
        } => {
            let (s, a) = size_align(types, element);
            (s.saturating_mul(*length), a)
        }
        ComponentDefinedType::Own(_)
        | ComponentDefinedType::Borrow(_)
        | ComponentDefinedType::Future { .. }
        | ComponentDefinedType::Stream { .. } => (4, 4),
    }
}

fn primitive(p: PrimitiveValType) -> (u32, u32) {
    use PrimitiveValType::*;
    match p {
        Bool | S8 | U8 => (1, 1),
        S16 | U16 => (2, 2),
        S32 | U32 | F32 | Char | ErrorContext => (4, 4),
        S64 | U64 | F64 => (8, 8),
        String => (8, 4),
    }
}

fn align_to(n: u32, a: u32) -> u32 {
    n.div_ceil(a).saturating_mul(a)
}

fn fields<'a>(
    types: TypesRef<'_>,
    fields: impl Iterator<Item = &'a ComponentValType>,
) -> (u32, u32) {
    let (mut size, mut align) = (0u32, 1u32);
    for f in fields {
        let (s, a) = size_align(types, f);
        size = align_to(size, a).saturating_add(s);
        align = align.max(a);
    }
    (align_to(size, align), align)
}

fn discriminant(cases: usize) -> u32 {
    match cases {
        0..=256 => 1,
        257..=65536 => 2,
        _ => 4,
    }
}

fn variant<'a>(
    types: TypesRef<'_>,
    cases: usize,
    payloads: impl IntoIterator<Item = &'a ComponentValType>,
) -> (u32, u32) {
    let d = discriminant(cases);
    let (mut size, mut align) = (0u32, d);
    for p in payloads {
        let (s, a) = size_align(types, p);
        size = size.max(s);
        align = align.max(a);
    }
    let payload_at = align_to(d, align);
    (align_to(payload_at.saturating_add(size), align), align)
}
