//! The contract between the gateway (host) and the Wasm guests. Documented for guest authors in
//! `docs/guest-abi.md`; this crate is what both sides compile.
//!
//! Core module ABI, version 1. The guest exports:
//! - `memory`
//! - `wasmlab_abi_version() -> i32`, returning [`ABI_VERSION`]
//! - `wasmlab_handle() -> i32`: handles the instance's request and returns a pointer to a
//!   [`ResponseDescriptor`] (5 little-endian u32: status, headers ptr/len, body ptr/len). The headers
//!   block is `name: value\n` lines (see [`parse_headers`]).
//!
//! The guest imports, from module `wasmlab`, the ones it uses of:
//! - `request_sizes(out_ptr: i32)`: writes three little-endian u32 at `out_ptr`: the lengths of
//!   the request's method, target (path and query) and body
//! - `request_read(method_ptr, target_ptr, body_ptr: i32)`: copies the three parts to buffers of
//!   those lengths (once per request)
//! - `state_increment() -> i64`: increments the host's shared counter, returns its new value
//! - `proxy_get(target_ptr, target_len: i32) -> i64`: the host sends `GET target` to its upstream and
//!   keeps the outcome; returns the body's length, or `-(len + 1)` for an error message of `len` bytes
//! - `proxy_take(dst_ptr, dst_len: i32) -> i32`: copies the kept body or message to `dst`, returns
//!   the number of bytes copied
//!
//! The WASI command guest (the gateway study's shape) reads a request from stdin framed by
//! [`encode_command_request`] and writes a response framed by [`encode_command_response`]. It uses
//! the same `wasmlab` imports for `/state` and `/proxy`. The pipe command guest, run by an
//! engine's CLI, reaches the host over stdin and stdout instead (see [`pipe`]).

#![forbid(unsafe_code)]

pub mod pipe;

pub const ABI_VERSION: i32 = 1;
pub const EXPORT_MEMORY: &str = "memory";
pub const EXPORT_ABI_VERSION: &str = "wasmlab_abi_version";
pub const EXPORT_HANDLE: &str = "wasmlab_handle";
pub const IMPORT_MODULE: &str = "wasmlab";
pub const IMPORT_REQUEST_SIZES: &str = "request_sizes";
pub const IMPORT_REQUEST_READ: &str = "request_read";
pub const IMPORT_STATE_INCREMENT: &str = "state_increment";
pub const IMPORT_PROXY_GET: &str = "proxy_get";
pub const IMPORT_PROXY_TAKE: &str = "proxy_take";

/// Where the guest's response lies in its memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResponseDescriptor {
    pub status: u32,
    pub headers_ptr: u32,
    pub headers_len: u32,
    pub body_ptr: u32,
    pub body_len: u32,
}

impl ResponseDescriptor {
    pub const SIZE: usize = 20;

    pub fn to_bytes(self) -> [u8; Self::SIZE] {
        let mut out = [0u8; Self::SIZE];
        let fields = [
            self.status,
            self.headers_ptr,
            self.headers_len,
            self.body_ptr,
            self.body_len,
        ];
        for (chunk, v) in out.chunks_exact_mut(4).zip(fields) {
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        out
    }

    pub fn from_bytes(b: [u8; Self::SIZE]) -> Self {
        let f = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Self {
            status: f(0),
            headers_ptr: f(4),
            headers_len: f(8),
            body_ptr: f(12),
            body_len: f(16),
        }
    }
}

/// Why a guest's response was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AbiError {
    OutOfBounds {
        what: &'static str,
        ptr: u32,
        len: u32,
        memory: usize,
    },
    BadStatus(u32),
    BadHeader(String),
    BadFraming(&'static str),
}

impl std::fmt::Display for AbiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AbiError::OutOfBounds {
                what,
                ptr,
                len,
                memory,
            } => write!(
                f,
                "guest {what} at {ptr}+{len} lies outside its memory of {memory} bytes"
            ),
            AbiError::BadStatus(s) => write!(f, "guest returned status {s}, not in 100..=999"),
            AbiError::BadHeader(h) => write!(f, "guest returned a malformed header line {h:?}"),
            AbiError::BadFraming(why) => write!(f, "guest output is not a framed response: {why}"),
        }
    }
}

impl std::error::Error for AbiError {}

/// A response read back from a guest, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Bounds-checked view of `len` bytes at `ptr` in `memory`.
pub fn slice<'m>(
    memory: &'m [u8],
    what: &'static str,
    ptr: u32,
    len: u32,
) -> Result<&'m [u8], AbiError> {
    let start = ptr as usize;
    start
        .checked_add(len as usize)
        .and_then(|end| memory.get(start..end))
        .ok_or(AbiError::OutOfBounds {
            what,
            ptr,
            len,
            memory: memory.len(),
        })
}

/// A response as a core-module guest left it in its memory: validated, and borrowing that memory
/// (no copy until the host builds its own reply).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseView<'m> {
    pub status: u16,
    /// The header block, every line checked by [`view_response`].
    header_block: &'m str,
    pub body: &'m [u8],
}

impl<'m> ResponseView<'m> {
    /// The headers as `(name, value)`, names as the guest spelled them.
    pub fn headers(&self) -> impl Iterator<Item = (&'m str, &'m str)> + use<'m> {
        // Every line was checked by `view_response`: only split here.
        self.header_block
            .split_terminator('\n')
            .map(split_header_line)
    }
}

/// Reads the response a core-module guest left in its memory, given the descriptor's address.
/// Every pointer and header line is checked: the guest is not trusted.
pub fn view_response(memory: &[u8], descriptor_ptr: u32) -> Result<ResponseView<'_>, AbiError> {
    let raw = slice(
        memory,
        "response descriptor",
        descriptor_ptr,
        ResponseDescriptor::SIZE as u32,
    )?;
    let d = ResponseDescriptor::from_bytes(raw.try_into().expect("length checked"));
    let status = check_status(d.status)?;
    let header_block = header_block(slice(memory, "headers", d.headers_ptr, d.headers_len)?)?;
    let body = slice(memory, "body", d.body_ptr, d.body_len)?;
    Ok(ResponseView {
        status,
        header_block,
        body,
    })
}

/// [`view_response`], copied out of guest memory (header names lowercased).
pub fn read_response(memory: &[u8], descriptor_ptr: u32) -> Result<GuestResponse, AbiError> {
    let view = view_response(memory, descriptor_ptr)?;
    Ok(GuestResponse {
        status: view.status,
        headers: owned_headers(view.headers()),
        body: view.body.to_vec(),
    })
}

fn check_status(status: u32) -> Result<u16, AbiError> {
    if (100..=999).contains(&status) {
        Ok(status as u16)
    } else {
        Err(AbiError::BadStatus(status))
    }
}

/// Encodes headers as `name: value\n` lines.
pub fn encode_headers<'a>(headers: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, v) in headers {
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v.as_bytes());
        out.push(b'\n');
    }
    out
}

/// Parses `name: value\n` lines. Names must be HTTP tokens and values visible ASCII or spaces, so a
/// guest cannot smuggle a header or response split through the host.
pub fn parse_headers(block: &[u8]) -> Result<Vec<(String, String)>, AbiError> {
    let block = header_block(block)?;
    // Every line was checked by `header_block`: only split here.
    Ok(owned_headers(
        block.split_terminator('\n').map(split_header_line),
    ))
}

fn owned_headers<'a>(headers: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<(String, String)> {
    headers
        .map(|(name, value)| (name.to_ascii_lowercase(), value.to_owned()))
        .collect()
}

/// A header block whose every line is a valid header (see [`parse_headers`]). Checked byte by byte
/// in one pass: this runs on every response a guest gives.
fn header_block(block: &[u8]) -> Result<&str, AbiError> {
    if !block.is_empty() {
        // Lines end with `\n`, the last one optionally; an empty line is malformed.
        let lines = block.strip_suffix(b"\n").unwrap_or(block);
        for line in lines.split(|&b| b == b'\n') {
            check_header_line(line)?;
        }
    }
    // Every byte is now ASCII, so this cannot fail.
    std::str::from_utf8(block).map_err(|_| bad_header(block))
}

/// Checks one `name: value` line: the name an HTTP token, the value visible ASCII, spaces or tabs.
fn check_header_line(line: &[u8]) -> Result<(), AbiError> {
    let colon = line
        .iter()
        .position(|&b| b == b':')
        .ok_or_else(|| bad_header(line))?;
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    if name.is_empty() || !name.iter().all(|&b| is_token(b)) {
        return Err(bad_header(line));
    }
    if !value
        .iter()
        .all(|&b| b == b' ' || b == b'\t' || b.is_ascii_graphic())
    {
        return Err(bad_header(line));
    }
    Ok(())
}

fn bad_header(line: &[u8]) -> AbiError {
    AbiError::BadHeader(String::from_utf8_lossy(line).into_owned())
}

/// An HTTP token character (RFC 9110, section 5.6.2).
fn is_token(b: u8) -> bool {
    TOKEN[b as usize]
}

/// [`is_token`] as a table: one load per byte of every header name a guest returns.
static TOKEN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = (b as u8).is_ascii_alphanumeric();
        b += 1;
    }
    let symbols = b"!#$%&'*+-.^_`|~";
    let mut i = 0;
    while i < symbols.len() {
        t[symbols[i] as usize] = true;
        i += 1;
    }
    t
};

/// A checked `name: value` line split at its colon; the value without its surrounding spaces.
fn split_header_line(line: &str) -> (&str, &str) {
    let (name, value) = line.split_once(':').expect("the line was checked");
    (name, value.trim_matches(' '))
}

/// The command guest's stdin: `METHOD SP TARGET LF` then the body.
pub fn encode_command_request(method: &str, target: &str, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(method.len() + target.len() + 2 + body.len());
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.push(b'\n');
    out.extend_from_slice(body);
    out
}

/// Splits the command guest's stdin into method, target and body.
pub fn decode_command_request(input: &[u8]) -> Result<(&str, &str, &[u8]), AbiError> {
    let nl = input
        .iter()
        .position(|&b| b == b'\n')
        .ok_or(AbiError::BadFraming("no request line"))?;
    let line = std::str::from_utf8(&input[..nl])
        .map_err(|_| AbiError::BadFraming("request line not UTF-8"))?;
    let (method, target) = line
        .split_once(' ')
        .ok_or(AbiError::BadFraming("request line has no target"))?;
    Ok((method, target, &input[nl + 1..]))
}

/// The command guest's stdout: `STATUS LF`, header lines, an empty line, then the body.
pub fn encode_command_response<'a>(
    status: u16,
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
    body: &[u8],
) -> Vec<u8> {
    let mut out = format!("{status}\n").into_bytes();
    out.extend(encode_headers(headers));
    out.push(b'\n');
    out.extend_from_slice(body);
    out
}

/// Parses what a command guest wrote to stdout.
pub fn decode_command_response(output: &[u8]) -> Result<GuestResponse, AbiError> {
    let nl = output
        .iter()
        .position(|&b| b == b'\n')
        .ok_or(AbiError::BadFraming("no status line"))?;
    let status = std::str::from_utf8(&output[..nl])
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .ok_or(AbiError::BadFraming("status line is not a number"))?;
    let status = check_status(status)?;
    let rest = &output[nl + 1..];
    let end = rest
        .windows(2)
        .position(|w| w == b"\n\n")
        .map(|i| (i + 1, i + 2))
        .or_else(|| rest.starts_with(b"\n").then_some((0, 1)))
        .ok_or(AbiError::BadFraming("no blank line after the headers"))?;
    Ok(GuestResponse {
        status,
        headers: parse_headers(&rest[..end.0])?,
        body: rest[end.1..].to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_round_trip() {
        let d = ResponseDescriptor {
            status: 200,
            headers_ptr: 1,
            headers_len: 2,
            body_ptr: 3,
            body_len: u32::MAX,
        };
        assert_eq!(ResponseDescriptor::from_bytes(d.to_bytes()), d);
    }

    fn memory_with(desc: ResponseDescriptor, at: usize, size: usize) -> Vec<u8> {
        let mut m = vec![0u8; size];
        m[at..at + ResponseDescriptor::SIZE].copy_from_slice(&desc.to_bytes());
        m
    }

    #[test]
    fn read_response_checks_every_pointer() {
        let mut m = memory_with(
            ResponseDescriptor {
                status: 200,
                headers_ptr: 100,
                headers_len: 11,
                body_ptr: 120,
                body_len: 5,
            },
            0,
            256,
        );
        m[100..111].copy_from_slice(b"x-a: hello\n");
        m[120..125].copy_from_slice(b"hello");
        let r = read_response(&m, 0).unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.headers, vec![("x-a".into(), "hello".into())]);
        assert_eq!(r.body, b"hello");
        // The view reads the same response in place.
        let v = view_response(&m, 0).unwrap();
        assert_eq!(v.headers().collect::<Vec<_>>(), [("x-a", "hello")]);
        assert!(std::ptr::eq(v.body, &m[120..125]));

        assert!(matches!(
            read_response(&m, 250),
            Err(AbiError::OutOfBounds { .. })
        ));
        assert!(matches!(
            read_response(&m, u32::MAX),
            Err(AbiError::OutOfBounds { .. })
        ));
        let bad_body = memory_with(
            ResponseDescriptor {
                status: 200,
                body_ptr: u32::MAX,
                body_len: 2,
                ..Default::default()
            },
            0,
            64,
        );
        assert!(matches!(
            read_response(&bad_body, 0),
            Err(AbiError::OutOfBounds { what: "body", .. })
        ));
        let bad_status = memory_with(
            ResponseDescriptor {
                status: 99,
                ..Default::default()
            },
            0,
            64,
        );
        assert_eq!(read_response(&bad_status, 0), Err(AbiError::BadStatus(99)));
    }

    #[test]
    fn headers_reject_injection() {
        assert!(parse_headers(b"a: b\r\nx: y\n").is_err());
        assert!(parse_headers(b"bad name: v\n").is_err());
        assert!(parse_headers(b"novalue\n").is_err());
        assert!(parse_headers(b": v\n").is_err());
        assert!(parse_headers(b"\n").is_err());
        assert!(parse_headers(b"a: b\n\nc: d\n").is_err());
        assert!(parse_headers("a: caf\u{e9}\n".as_bytes()).is_err());
        assert_eq!(parse_headers(b"").unwrap(), vec![]);
        assert_eq!(
            parse_headers(b"x-t:\ta b  \n").unwrap(),
            vec![("x-t".into(), "\ta b".into())]
        );
        assert_eq!(
            parse_headers(b"Content-Type: text/plain\nallow: GET").unwrap(),
            vec![
                ("content-type".into(), "text/plain".into()),
                ("allow".into(), "GET".into())
            ]
        );
    }

    #[test]
    fn command_framing_round_trip() {
        let req = encode_command_request("POST", "/echo?a=1", b"x\ny\n\n");
        assert_eq!(
            decode_command_request(&req).unwrap(),
            ("POST", "/echo?a=1", &b"x\ny\n\n"[..])
        );
        let out = encode_command_response(404, [("content-type", "text/plain")], b"\n\nnot found");
        let r = decode_command_response(&out).unwrap();
        assert_eq!(r.status, 404);
        assert_eq!(r.headers.len(), 1);
        assert_eq!(r.body, b"\n\nnot found");
        let r = decode_command_response(&encode_command_response(200, [], b"ok")).unwrap();
        assert_eq!(
            (r.status, r.headers.len(), r.body.as_slice()),
            (200, 0, &b"ok"[..])
        );
        assert!(decode_command_response(b"").is_err());
        assert!(decode_command_response(b"abc\n\n").is_err());
        assert!(decode_command_response(b"200\nx: y\n").is_err());
    }
}
