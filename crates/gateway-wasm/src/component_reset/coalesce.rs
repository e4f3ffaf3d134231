//! Fewer block marks: stores through the same address in straight-line code share theirs.
//!
//! Code compiled from C, C++ or Rust writes a struct or a stack frame as a run of stores through
//! one local with different offsets (`local.get $p; ...; i32.store offset=8`, then `offset=12`...).
//! Within a run of instructions no branch enters or leaves, every store after the first executes
//! only if the first did; when all of them go through the same value of the same local and their
//! offsets lie within a block (1 KiB) of each other, every one of them starts in the block of the
//! lowest offset or in the block of the highest (the reset restores 16 bytes past a marked block,
//! where a store begun in it ends). The first store then marks those two blocks and the others mark
//! nothing. Anything this pass cannot follow (a branch, a block, an instruction whose stack effect
//! it does not know) ends the run, and every store keeps its own mark.

use std::collections::BTreeMap;

use wasmparser::{ModuleArity, Operator};

/// How one store is marked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Marks {
    /// The block its own address starts in.
    One,
    /// The blocks of `address + low` and `address + high`: its own and the later ones of its run.
    Span { low: u32, high: u32 },
    /// None: an earlier store of its run marked its block.
    Covered,
}

/// Where a value on the stack came from: local `n` as it was at `version`.
type Source = Option<(u32, u32)>;

/// For each operator of a function body, how it is marked if it is a store (`None` otherwise);
/// `offset(op)` is a store's offset, `None` for anything else.
pub(super) fn plan(
    ops: &[Operator<'_>],
    arity: &impl ModuleArity,
    locals: u32,
    offset: impl Fn(&Operator<'_>) -> Option<u32>,
) -> Vec<Option<Marks>> {
    let mut marks: Vec<Option<Marks>> = ops
        .iter()
        .map(|op| offset(op).map(|_| Marks::One))
        .collect();
    let mut versions = vec![0u32; locals as usize];
    let mut stack: Vec<Source> = Vec::new();
    // The stores of the current run by the address they go through: (operator, offset).
    let mut runs: BTreeMap<(u32, u32), Vec<(usize, u32)>> = BTreeMap::new();
    for (i, op) in ops.iter().enumerate() {
        if let Some(o) = offset(op) {
            stack.pop();
            if let Some(Some(source)) = stack.pop() {
                runs.entry(source).or_default().push((i, o));
            }
            continue;
        }
        match op {
            Operator::LocalGet { local_index } => {
                let v = versions.get(*local_index as usize).copied();
                stack.push(v.map(|v| (*local_index, v)));
            }
            Operator::LocalSet { local_index } | Operator::LocalTee { local_index } => {
                stack.pop();
                if let Some(v) = versions.get_mut(*local_index as usize) {
                    *v += 1;
                    if matches!(op, Operator::LocalTee { .. }) {
                        stack.push(Some((*local_index, *v)));
                    }
                } else if matches!(op, Operator::LocalTee { .. }) {
                    stack.push(None);
                }
            }
            _ => match known_arity(op, arity) {
                Some((pops, pushes)) => {
                    for _ in 0..pops {
                        stack.pop();
                    }
                    stack.extend(std::iter::repeat_n(None, pushes as usize));
                }
                None => {
                    close(&mut runs, &mut marks);
                    stack.clear();
                }
            },
        }
    }
    close(&mut runs, &mut marks);
    marks
}

/// The stack effect of an instruction inside a run; `None` for one that ends it (control flow,
/// or one whose effect is not known).
fn known_arity(op: &Operator<'_>, arity: &impl ModuleArity) -> Option<(u32, u32)> {
    use Operator::*;
    match op {
        Block { .. }
        | Loop { .. }
        | If { .. }
        | Else
        | End
        | Br { .. }
        | BrIf { .. }
        | BrTable { .. }
        | Return
        | Unreachable
        | ReturnCall { .. }
        | ReturnCallIndirect { .. }
        | ReturnCallRef { .. }
        | Try { .. }
        | Catch { .. }
        | CatchAll
        | Throw { .. }
        | Rethrow { .. }
        | Delegate { .. }
        | TryTable { .. }
        | ThrowRef
        | BrOnNull { .. }
        | BrOnNonNull { .. }
        | BrOnCast { .. }
        | BrOnCastFail { .. } => None,
        _ => op.operator_arity(arity),
    }
}

/// Ends the current run: each address with two stores or more within a block gets one `Span` and
/// its later stores are `Covered`.
fn close(runs: &mut BTreeMap<(u32, u32), Vec<(usize, u32)>>, marks: &mut [Option<Marks>]) {
    for (_, stores) in std::mem::take(runs) {
        if stores.len() < 2 {
            continue;
        }
        let low = stores.iter().map(|(_, o)| *o).min().unwrap_or(0);
        let high = stores.iter().map(|(_, o)| *o).max().unwrap_or(0);
        if high - low >= super::module::BLOCK {
            continue;
        }
        let (first, _) = stores[0];
        marks[first] = Some(Marks::Span { low, high });
        for (i, _) in &stores[1..] {
            marks[*i] = Some(Marks::Covered);
        }
    }
}
