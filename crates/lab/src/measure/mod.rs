//! Measuring variants: verification before anything else, then cold starts, load cells and the
//! resources of each variant's processes.

pub mod resources;
pub mod verify;
