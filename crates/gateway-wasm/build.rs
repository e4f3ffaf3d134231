//! Build script: see ../gateway/relr.rs.

include!("../gateway/relr.rs");

fn main() {
    link_binaries_with_relr();
}
