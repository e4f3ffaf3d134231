//! `wasmlab image`: one program as an OCI image archive (see `wasmlab_image`).

use std::path::PathBuf;

use clap::{ArgGroup, Args, ValueEnum};
use wasmlab_image::{Program, WasmLayout};

#[derive(Args)]
#[command(group(ArgGroup::new("program").required(true).args(["executable", "wasm"])))]
pub(crate) struct ImageArgs {
    /// A statically linked executable: the image holds it at /NAME, its entry point, for the
    /// host's platform (FROM scratch).
    #[arg(long, value_name = "FILE")]
    executable: Option<PathBuf>,
    /// A Wasm module or component: platform wasip1/wasm or wasip2/wasm, entry point
    /// /NAME.wasm, laid out as --layout says.
    #[arg(long, value_name = "FILE")]
    wasm: Option<PathBuf>,
    /// How a Wasm program is laid out: `artifact`, the Wasm OCI artifact (the program as the
    /// image's one layer; containerd 1.6.25+ or 1.7.7+ pass it to runwasi's shims), or `file`,
    /// the program as a file in an ordinary layer (every containerd; runwasi's shims read it from
    /// the container's root file system). Default: artifact.
    #[arg(long, value_enum)]
    layout: Option<Layout>,
    /// The image's name: NAME:TAG, the name in lower case (e.g. localhost/wasmlab-native:1).
    #[arg(long, value_name = "NAME:TAG")]
    reference: String,
    /// The archive to write.
    #[arg(long, short, value_name = "FILE.tar")]
    output: PathBuf,
}

#[derive(Clone, Copy, ValueEnum)]
enum Layout {
    Artifact,
    File,
}

pub(crate) fn image(args: ImageArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.layout.is_none() || args.wasm.is_some(),
        "--layout is for a Wasm program (--wasm); an executable is always one file in one layer"
    );
    let (program, kind) = match (&args.executable, &args.wasm) {
        (Some(p), None) => (p, Program::Executable),
        (None, Some(p)) => (
            p,
            Program::Wasm(match args.layout.unwrap_or(Layout::Artifact) {
                Layout::Artifact => WasmLayout::Artifact,
                Layout::File => WasmLayout::File,
            }),
        ),
        _ => unreachable!("clap requires exactly one of --executable and --wasm"),
    };
    let written = wasmlab_image::write_archive(&args.reference, program, kind, &args.output)?;
    println!(
        "{}: {} ({}, entry point {}), manifest {}, {} bytes",
        args.output.display(),
        args.reference,
        written.platform,
        written.entrypoint,
        written.manifest,
        written.archive_bytes
    );
    Ok(())
}
