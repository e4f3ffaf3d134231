//! An OCI image of one program, written as an OCI image layout in a tar archive (what `ctr images
//! import`, `podman load` and `skopeo copy oci-archive:` read), without a container engine:
//!
//! - a static executable: one tar layer holding it at `/NAME`, the entry point `/NAME`, the host's
//!   platform (`linux/amd64` here): the FROM-scratch image `native-container` builds with podman;
//! - a Wasm program, platform `wasip1/wasm` (a module) or `wasip2/wasm` (a component), entry point
//!   `/NAME.wasm` (the shim's `argv[0]`), in one of the two layouts runwasi's shims read:
//!   - [`WasmLayout::Artifact`]: the CNCF Wasm OCI artifact, the program itself as the one layer
//!     (`application/vnd.bytecodealliance.wasm.component.layer.v0+wasm`), no file system layer.
//!     containerd passes such layers to the shim from 1.6.25 and 1.7.7 on (containerd#9142); older
//!     ones, Debian 12's 1.6.20 among them, refuse to unpack the image ("mismatched image rootfs
//!     and manifest layers");
//!   - [`WasmLayout::File`]: the program as the file `/NAME.wasm` in an ordinary layer, which every
//!     containerd unpacks and the shim reads from the container's root file system.
//!
//! Blobs are uncompressed and every timestamp is zero, so the same program gives the same digest.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use oci_spec::image::{
    ANNOTATION_REF_NAME, Arch, ConfigBuilder, Descriptor, DescriptorBuilder, Digest,
    ImageConfigurationBuilder, ImageIndexBuilder, ImageManifestBuilder, MediaType, Os,
    PlatformBuilder, RootFsBuilder, SCHEMA_VERSION,
};
use sha2::{Digest as _, Sha256};

/// The media type of a Wasm layer (a module or a component) in the Wasm OCI artifact layout.
pub const WASM_LAYER: &str = "application/vnd.bytecodealliance.wasm.component.layer.v0+wasm";

/// containerd names an imported image by this annotation of its manifest.
const CONTAINERD_IMAGE_NAME: &str = "io.containerd.image.name";

/// What the image holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// A statically linked executable: no libraries, so it runs FROM scratch.
    Executable,
    /// A Wasm module or component.
    Wasm(WasmLayout),
}

/// How a Wasm program is laid out in its image (see the module's comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WasmLayout {
    /// The program as the image's one layer, of the Wasm layer media type.
    Artifact,
    /// The program as a file in an ordinary (tar) layer.
    File,
}

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The manifest's digest (`sha256:…`): what the image is, wherever it is imported.
    pub manifest: String,
    /// `os/arch` of the image.
    pub platform: String,
    /// The entry point: the program's path in the image.
    pub entrypoint: String,
    /// The archive's size in bytes.
    pub archive_bytes: u64,
}

/// Writes an image named `reference` (`name:tag`, e.g. `localhost/wasmlab-native:RUN`) holding
/// `program` to `out`, an OCI image layout archive.
pub fn write_archive(
    reference: &str,
    program: &Path,
    kind: Program,
    out: &Path,
) -> Result<Written> {
    check_reference(reference)?;
    let bytes =
        std::fs::read(program).with_context(|| format!("cannot read {}", program.display()))?;
    let file_name = program
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| !n.is_empty())
        .with_context(|| format!("{} has no usable file name", program.display()))?;
    let image = match kind {
        Program::Executable => executable_image(file_name, &bytes)?,
        Program::Wasm(layout) => wasm_image(file_name, bytes, layout)?,
    };
    let file =
        std::fs::File::create(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut archive = tar::Builder::new(std::io::BufWriter::new(file));
    let written = image.write(reference, &mut archive)?;
    archive
        .into_inner()
        .and_then(|mut w| w.flush())
        .with_context(|| format!("cannot write {}", out.display()))?;
    Ok(Written {
        archive_bytes: std::fs::metadata(out)?.len(),
        ..written
    })
}

/// `name[:tag]` with the characters a reference allows (lower-case name components, `.`, `_`, `-`,
/// `/`; a tag of letters, digits, `.`, `_`, `-`).
fn check_reference(reference: &str) -> Result<()> {
    let (name, tag) = match reference.rsplit_once(':') {
        Some((n, t)) if !t.contains('/') => (n, Some(t)),
        _ => (reference, None),
    };
    let name_ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-/".contains(&b))
        && !name.starts_with(['.', '_', '-', '/'])
        && !name.ends_with(['.', '_', '-', '/']);
    let tag_ok = tag.is_none_or(|t| {
        !t.is_empty()
            && t.len() <= 128
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
            && !t.starts_with(['.', '-'])
    });
    anyhow::ensure!(
        name_ok && tag_ok,
        "{reference:?} is not an image reference (name:tag, the name in lower case: e.g. localhost/wasmlab-native:1)"
    );
    Ok(())
}

/// An image before it is written: its config, its layers (media type and bytes), its platform.
struct Image {
    config: oci_spec::image::ImageConfiguration,
    layers: Vec<(MediaType, Vec<u8>)>,
    os: Os,
    arch: Arch,
    entrypoint: String,
}

fn executable_image(file_name: &str, bytes: &[u8]) -> Result<Image> {
    check_static(file_name, bytes)?;
    let layer = file_layer(file_name, bytes, 0o755)?;
    // Uncompressed: the layer's diff id is its digest.
    let diff_ids = vec![sha256(&layer)];
    Image::new(
        (Os::default(), Arch::default()),
        file_name,
        (MediaType::ImageLayer, layer),
        diff_ids,
    )
}

/// An image FROM scratch holds no loader and no libraries: the executable must be a statically
/// linked ELF (no `PT_INTERP`; a static PIE, what Rust's `+crt-static` makes, is one).
fn check_static(file_name: &str, bytes: &[u8]) -> Result<()> {
    use object::read::elf::{ElfFile64, ProgramHeader};
    anyhow::ensure!(
        bytes.starts_with(b"\x7fELF"),
        "{file_name} is not an ELF executable (a static binary goes in an executable image)"
    );
    let elf = ElfFile64::<object::Endianness>::parse(bytes)
        .map_err(|e| anyhow::anyhow!("{file_name} is not a 64-bit ELF executable: {e}"))?;
    let interp = elf
        .elf_program_headers()
        .iter()
        .any(|ph| ph.p_type(elf.endian()) == object::elf::PT_INTERP);
    anyhow::ensure!(
        !interp,
        "{file_name} is dynamically linked (it names a program interpreter), and an image FROM scratch has no loader or libraries: link it statically (Rust: -C target-feature=+crt-static)"
    );
    Ok(())
}

/// A layer of one file at the root of the file system, owned by root.
fn file_layer(file_name: &str, bytes: &[u8], mode: u32) -> Result<Vec<u8>> {
    let mut layer = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_ustar();
    header.set_size(bytes.len() as u64);
    header.set_mode(mode);
    header.set_mtime(0);
    header.set_uid(0);
    header.set_gid(0);
    header.set_entry_type(tar::EntryType::Regular);
    layer.append_data(&mut header, file_name, bytes)?;
    Ok(layer.into_inner()?)
}

fn wasm_image(file_name: &str, bytes: Vec<u8>, layout: WasmLayout) -> Result<Image> {
    anyhow::ensure!(
        bytes.starts_with(b"\0asm") && bytes.len() >= 8,
        "{file_name} is not a Wasm binary (no \\0asm header)"
    );
    // The binary's layer field: 0 for a core module, 1 for a component.
    let component = bytes[6..8] == [1, 0];
    let os = Os::Other(if component { "wasip2" } else { "wasip1" }.into());
    let (layer, diff_ids) = match layout {
        // No file system layer: the shim reads the program from the Wasm layer.
        WasmLayout::Artifact => ((MediaType::Other(WASM_LAYER.into()), bytes), Vec::new()),
        WasmLayout::File => {
            let layer = file_layer(file_name, &bytes, 0o644)?;
            let diff_id = sha256(&layer);
            ((MediaType::ImageLayer, layer), vec![diff_id])
        }
    };
    Image::new((os, Arch::Wasm), file_name, layer, diff_ids)
}

impl Image {
    /// An image of one layer whose entry point is `/FILE_NAME`.
    fn new(
        (os, arch): (Os, Arch),
        file_name: &str,
        layer: (MediaType, Vec<u8>),
        diff_ids: Vec<String>,
    ) -> Result<Image> {
        let entrypoint = format!("/{file_name}");
        let config = ImageConfigurationBuilder::default()
            .os(os.clone())
            .architecture(arch.clone())
            .config(
                ConfigBuilder::default()
                    .entrypoint(vec![entrypoint.clone()])
                    .build()?,
            )
            .rootfs(
                RootFsBuilder::default()
                    .typ("layers")
                    .diff_ids(diff_ids)
                    .build()?,
            )
            .build()?;
        Ok(Image {
            config,
            layers: vec![layer],
            os,
            arch,
            entrypoint,
        })
    }

    fn write<W: Write>(self, reference: &str, archive: &mut tar::Builder<W>) -> Result<Written> {
        let mut layers = Vec::new();
        for (media_type, bytes) in &self.layers {
            layers.push(blob(archive, media_type.clone(), bytes)?);
        }
        let config = blob(
            archive,
            MediaType::ImageConfig,
            self.config.to_string()?.as_bytes(),
        )?;
        let tag = reference
            .rsplit_once(':')
            .filter(|(_, t)| !t.contains('/'))
            .map_or("latest", |(_, t)| t);
        let annotations = HashMap::from([
            (ANNOTATION_REF_NAME.to_owned(), tag.to_owned()),
            (CONTAINERD_IMAGE_NAME.to_owned(), reference.to_owned()),
        ]);
        let manifest = ImageManifestBuilder::default()
            .schema_version(SCHEMA_VERSION)
            .media_type(MediaType::ImageManifest)
            .config(config)
            .layers(layers)
            .build()?;
        let mut manifest_desc = blob(
            archive,
            MediaType::ImageManifest,
            manifest.to_string()?.as_bytes(),
        )?;
        manifest_desc.set_annotations(Some(annotations));
        let platform = format!("{}/{}", self.os, self.arch);
        manifest_desc.set_platform(Some(
            PlatformBuilder::default()
                .os(self.os)
                .architecture(self.arch)
                .build()?,
        ));
        let manifest_digest = manifest_desc.digest().to_string();
        let index = ImageIndexBuilder::default()
            .schema_version(SCHEMA_VERSION)
            .media_type(MediaType::ImageIndex)
            .manifests(vec![manifest_desc])
            .build()?;
        file(archive, "oci-layout", br#"{"imageLayoutVersion":"1.0.0"}"#)?;
        file(archive, "index.json", index.to_string()?.as_bytes())?;
        Ok(Written {
            manifest: manifest_digest,
            platform,
            entrypoint: self.entrypoint,
            archive_bytes: 0,
        })
    }
}

fn sha256(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Adds `bytes` as `blobs/sha256/HEX` and returns its descriptor.
fn blob<W: Write>(
    archive: &mut tar::Builder<W>,
    media_type: MediaType,
    bytes: &[u8],
) -> Result<Descriptor> {
    let digest: Digest = sha256(bytes).parse()?;
    file(archive, &format!("blobs/sha256/{}", digest.digest()), bytes)?;
    Ok(DescriptorBuilder::default()
        .media_type(media_type)
        .digest(digest)
        .size(bytes.len() as u64)
        .build()?)
}

fn file<W: Write>(archive: &mut tar::Builder<W>, path: &str, bytes: &[u8]) -> Result<()> {
    let mut header = tar::Header::new_ustar();
    header.set_size(bytes.len() as u64);
    header.set_mode(0o644);
    header.set_mtime(0);
    header.set_entry_type(tar::EntryType::Regular);
    archive.append_data(&mut header, path, bytes)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// The archive's files by path.
    fn unpack(path: &Path) -> HashMap<String, Vec<u8>> {
        let mut archive = tar::Archive::new(std::fs::File::open(path).unwrap());
        archive
            .entries()
            .unwrap()
            .map(|e| {
                let mut e = e.unwrap();
                let mut bytes = Vec::new();
                e.read_to_end(&mut bytes).unwrap();
                (e.path().unwrap().display().to_string(), bytes)
            })
            .collect()
    }

    fn json(files: &HashMap<String, Vec<u8>>, digest: &str) -> serde_json::Value {
        let hex = digest.strip_prefix("sha256:").unwrap();
        let bytes = &files[&format!("blobs/sha256/{hex}")];
        assert_eq!(sha256(bytes), digest, "a blob's name is its digest");
        serde_json::from_slice(bytes).unwrap()
    }

    #[test]
    fn a_wasm_program_is_one_wasm_layer_with_the_wasi_platform() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("server.wasm");
        // A component's preamble: version 0x0d, layer 1.
        std::fs::write(&program, b"\0asm\x0d\0\x01\0").unwrap();
        let out = dir.path().join("image.tar");
        let w = write_archive(
            "localhost/wasm:run-1",
            &program,
            Program::Wasm(WasmLayout::Artifact),
            &out,
        )
        .unwrap();
        assert_eq!(w.platform, "wasip2/wasm");
        assert_eq!(w.entrypoint, "/server.wasm");
        let files = unpack(&out);
        let index: serde_json::Value = serde_json::from_slice(&files["index.json"]).unwrap();
        let m = &index["manifests"][0];
        assert_eq!(m["digest"], w.manifest.as_str());
        assert_eq!(
            m["annotations"][CONTAINERD_IMAGE_NAME],
            "localhost/wasm:run-1"
        );
        assert_eq!(m["annotations"][ANNOTATION_REF_NAME], "run-1");
        assert_eq!(m["platform"]["os"], "wasip2");
        let manifest = json(&files, &w.manifest);
        let layers = manifest["layers"].as_array().unwrap();
        assert_eq!(layers.len(), 1);
        assert_eq!(layers[0]["mediaType"], WASM_LAYER);
        let layer = layers[0]["digest"].as_str().unwrap();
        assert_eq!(
            files[&format!("blobs/sha256/{}", &layer[7..])],
            b"\0asm\x0d\0\x01\0"
        );
        let config = json(&files, manifest["config"]["digest"].as_str().unwrap());
        assert_eq!(config["config"]["Entrypoint"][0], "/server.wasm");
        assert_eq!(config["architecture"], "wasm");
        // The same program, the same image.
        let again = dir.path().join("again.tar");
        let w2 = write_archive(
            "localhost/wasm:run-1",
            &program,
            Program::Wasm(WasmLayout::Artifact),
            &again,
        )
        .unwrap();
        assert_eq!(w.manifest, w2.manifest);
    }

    #[test]
    fn a_wasm_program_as_a_file_is_one_tar_layer_holding_it() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("m.wasm");
        // A core module's preamble: version 1, layer 0.
        std::fs::write(&program, b"\0asm\x01\0\0\0").unwrap();
        let out = dir.path().join("image.tar");
        let w = write_archive("x:1", &program, Program::Wasm(WasmLayout::File), &out).unwrap();
        assert_eq!(w.platform, "wasip1/wasm");
        let files = unpack(&out);
        let manifest = json(&files, &w.manifest);
        assert_eq!(
            manifest["layers"][0]["mediaType"],
            "application/vnd.oci.image.layer.v1.tar"
        );
        let layer_digest = manifest["layers"][0]["digest"].as_str().unwrap();
        let config = json(&files, manifest["config"]["digest"].as_str().unwrap());
        assert_eq!(config["rootfs"]["diff_ids"][0], layer_digest);
        let layer = &files[&format!("blobs/sha256/{}", &layer_digest[7..])];
        let mut entries = tar::Archive::new(&layer[..]);
        let mut entry = entries.entries().unwrap().next().unwrap().unwrap();
        assert_eq!(entry.path().unwrap().to_str(), Some("m.wasm"));
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        assert_eq!(bytes, b"\0asm\x01\0\0\0");
    }

    /// A minimal 64-bit little-endian ELF executable for x86-64: its header and one program
    /// header of type `p_type` (1: PT_LOAD, 3: PT_INTERP).
    fn elf(p_type: u32) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(b"\x7fELF\x02\x01\x01");
        b.resize(16, 0);
        b.extend_from_slice(&3u16.to_le_bytes()); // e_type: ET_DYN (a static PIE)
        b.extend_from_slice(&62u16.to_le_bytes()); // e_machine: x86-64
        b.extend_from_slice(&1u32.to_le_bytes()); // e_version
        b.extend_from_slice(&0u64.to_le_bytes()); // e_entry
        b.extend_from_slice(&64u64.to_le_bytes()); // e_phoff
        b.extend_from_slice(&0u64.to_le_bytes()); // e_shoff
        b.extend_from_slice(&0u32.to_le_bytes()); // e_flags
        for half in [64u16, 56, 1, 64, 0, 0] {
            // e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx
            b.extend_from_slice(&half.to_le_bytes());
        }
        b.extend_from_slice(&p_type.to_le_bytes());
        b.resize(64 + 56, 0);
        b
    }

    #[test]
    fn an_executable_is_one_file_layer_whose_diff_id_is_its_digest() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("gw");
        std::fs::write(&program, elf(1)).unwrap();
        let out = dir.path().join("image.tar");
        let w = write_archive("localhost/native:1", &program, Program::Executable, &out).unwrap();
        assert_eq!(w.entrypoint, "/gw");
        let files = unpack(&out);
        let manifest = json(&files, &w.manifest);
        let layer_digest = manifest["layers"][0]["digest"].as_str().unwrap();
        let config = json(&files, manifest["config"]["digest"].as_str().unwrap());
        assert_eq!(config["rootfs"]["diff_ids"][0], layer_digest);
        assert_eq!(config["os"], "linux");
        let layer = &files[&format!("blobs/sha256/{}", &layer_digest[7..])];
        let mut entries = tar::Archive::new(&layer[..]);
        let entry = entries.entries().unwrap().next().unwrap().unwrap();
        assert_eq!(entry.path().unwrap().to_str(), Some("gw"));
        assert_eq!(entry.header().mode().unwrap(), 0o755);
    }

    #[test]
    fn bad_input_is_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("notes.txt");
        std::fs::write(&text, "hello").unwrap();
        let out = dir.path().join("image.tar");
        let wasm = Program::Wasm(WasmLayout::File);
        let e = write_archive("localhost/x:1", &text, wasm, &out).unwrap_err();
        assert!(e.to_string().contains("not a Wasm binary"), "{e}");
        let e = write_archive("localhost/x:1", &text, Program::Executable, &out).unwrap_err();
        assert!(e.to_string().contains("not an ELF"), "{e}");
        let dynamic = dir.path().join("dynamic");
        std::fs::write(&dynamic, elf(3)).unwrap();
        let e = write_archive("localhost/x:1", &dynamic, Program::Executable, &out).unwrap_err();
        assert!(e.to_string().contains("dynamically linked"), "{e}");
        let cut = dir.path().join("cut");
        std::fs::write(&cut, &elf(1)[..40]).unwrap();
        let e = write_archive("localhost/x:1", &cut, Program::Executable, &out).unwrap_err();
        assert!(e.to_string().contains("not a 64-bit ELF"), "{e}");
        for bad in ["", "Upper/case:1", "x:", "x:bad tag", "-x:1"] {
            let e = write_archive(bad, &text, wasm, &out).unwrap_err();
            assert!(
                e.to_string().contains("not an image reference"),
                "{bad}: {e}"
            );
        }
        let e = write_archive("x:1", &dir.path().join("absent"), wasm, &out).unwrap_err();
        assert!(e.to_string().contains("cannot read"), "{e}");
    }
}
