//! Build script: see relr.rs.

include!("relr.rs");

fn main() {
    link_binaries_with_relr();
}
