//! Templates in a variant's commands: `{name}` placeholders the lab fills in with a run's values
//! (docs/variants.md lists them), `{tool:NAME}` for a required tool's path, `{container}` for the
//! container engine and its flags.

/// The placeholders templates may use, and what they stand for (docs/variants.md lists them too).
pub const PLACEHOLDERS: &[(&str, &str)] = &[
    (
        "port",
        "the port to bind: 0 with `address = \"stdout\"`, else a free port the lab picked",
    ),
    ("upstream", "the upstream echo server's URL, for /proxy"),
    (
        "upstream_host",
        "the upstream's host (an IP address), for a configuration that names it apart from its port",
    ),
    ("upstream_port", "the upstream's port"),
    (
        "bin",
        "the directory of wasmlab's own binaries (the gateways)",
    ),
    ("workspace", "the wasmlab source tree"),
    (
        "tools",
        "the project's tools directory (`wasmlab setup` installs there)",
    ),
    (
        "prepared",
        "a directory of this run for what `prepare` makes",
    ),
    (
        "core_guest",
        "the core-module guest (.wasm): the built-in one, or `wasmlab run --wasm FILE`",
    ),
    (
        "command_guest",
        "the WASI command guest with the wasmlab imports",
    ),
    (
        "pipe_guest",
        "the WASI command guest that reaches the host over stdin/stdout (for CLIs)",
    ),
    (
        "http_guest",
        "the handlers as a wasi:http/proxy component (.wasm, no imports beyond wasi:http's)",
    ),
    (
        "http_p3_guest",
        "the handlers as a WASI 0.3 wasi:http/service component (.wasm, async: a host may serve many requests in one instance)",
    ),
    (
        "proxy_wasm_guest",
        "the handlers as a proxy-wasm HTTP filter (.wasm, a core module), for Envoy's Wasm runtimes",
    ),
    (
        "container",
        "the container engine and its global flags (a whole argument: expands to several)",
    ),
    (
        "server_cpus",
        "the CPUs servers run on, as a list for --cpuset-cpus (e.g. 1 or 1-3)",
    ),
    (
        "instance",
        "a name unique to this launch (e.g. for a container)",
    ),
    (
        "ctr",
        "containerd's client, `ctr`, for the lab's own containerd (its address, namespace and snapshotter are in the environment)",
    ),
    (
        "wasmlab",
        "this wasmlab program (e.g. `{wasmlab} image` in a prepare step)",
    ),
    ("run_id", "the run's id"),
    ("variant", "the variant's name"),
    ("host_triple", "the host's Rust target triple"),
    (
        "module",
        "[program] only: the program's file (a .wasm module or a native executable)",
    ),
    (
        "phases",
        "[program] only: the file an engine runner writes its phase times to",
    ),
];

/// Splits a template into literal text and placeholder names. A placeholder is `{name}` where
/// the name is letters, digits, `_`, `-` and `:` starting with a letter; any other brace is
/// literal, so a Go template such as `{{.State.Pid}}` (podman's `--format`) passes as it is.
pub fn parse_template(t: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut literal = String::new();
    let mut rest = t;
    while let Some(i) = rest.find('{') {
        literal.push_str(&rest[..i]);
        let tail = &rest[i..];
        let name_len = tail[1..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':')))
            .unwrap_or(tail.len() - 1);
        let name = &tail[1..1 + name_len];
        let closed = tail[1 + name_len..].starts_with('}');
        if closed && name.starts_with(|c: char| c.is_ascii_alphabetic()) {
            if !literal.is_empty() {
                out.push(Piece::Text(std::mem::take(&mut literal)));
            }
            out.push(Piece::Var(name));
            rest = &tail[name_len + 2..];
        } else if !closed
            && name.starts_with(|c: char| c.is_ascii_alphabetic())
            && name_len + 1 == tail.len()
        {
            return Err(format!("unclosed placeholder `{tail}` in {t:?}"));
        } else {
            literal.push('{');
            rest = &tail[1..];
        }
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        out.push(Piece::Text(literal));
    }
    Ok(out)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece<'a> {
    Text(String),
    Var(&'a str),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates() {
        use Piece::*;
        assert_eq!(
            parse_template("{bin}/gw").unwrap(),
            [Var("bin"), Text("/gw".into())]
        );
        assert_eq!(
            parse_template("{{.State.Pid}} {instance}").unwrap(),
            [Text("{{.State.Pid}} ".into()), Var("instance")]
        );
        assert_eq!(parse_template("plain").unwrap(), [Text("plain".into())]);
        assert_eq!(parse_template("a{b c}").unwrap(), [Text("a{b c}".into())]);
        assert!(parse_template("{open").is_err());
    }
}
