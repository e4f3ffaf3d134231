//! The generator's HTTP/1.1 client path: one request serialised once for the whole run, and an
//! incremental response parser that frames the reply (content-length, chunked, or until close)
//! and counts its body without copying it.
//!
//! This replaces a general client (hyper) on the hot path: the generator sends the same request
//! again and again and only needs each response's status, size and end, so the per-request work
//! is one write of ready bytes and the reads that frame the reply. Response heads are parsed by
//! `httparse`, the parser hyper itself uses.

use bytes::{Bytes, BytesMut};
use hyper::Method;
use hyper::header::{HeaderName, HeaderValue};

/// Largest response head accepted (status line and headers).
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Most response headers accepted.
const MAX_HEADERS: usize = 100;
/// Longest chunk-size line or trailer line accepted in a chunked body.
const MAX_LINE_BYTES: usize = 4096;

/// Serialises the request sent on every exchange. `Host` is the URL's authority unless `headers`
/// sets it; `Content-Length` is the body's length (sent whenever there is a body, or the method
/// is one that carries one).
pub(crate) fn serialize_request(
    method: &Method,
    path_and_query: &str,
    authority: &str,
    headers: &[(HeaderName, HeaderValue)],
    body: &[u8],
) -> anyhow::Result<Bytes> {
    let mut out = BytesMut::with_capacity(128 + body.len());
    out.extend_from_slice(method.as_str().as_bytes());
    out.extend_from_slice(b" ");
    out.extend_from_slice(path_and_query.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k == hyper::header::HOST) {
        out.extend_from_slice(b"host: ");
        out.extend_from_slice(authority.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    for (k, v) in headers {
        anyhow::ensure!(
            k != hyper::header::CONTENT_LENGTH && k != hyper::header::TRANSFER_ENCODING,
            "the {k} header is set by the generator from the body; give the body instead"
        );
        out.extend_from_slice(k.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if !body.is_empty() || matches!(*method, Method::POST | Method::PUT | Method::PATCH) {
        out.extend_from_slice(format!("content-length: {}\r\n", body.len()).as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    Ok(out.freeze())
}

/// A complete response, as far as the generator cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Response {
    pub status: u16,
    pub body_bytes: u64,
    /// Whether the connection may carry the next request.
    pub keep_alive: bool,
}

/// What a chunk of input did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Progress {
    /// The response is not complete yet: read more.
    More,
    Complete(Response),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    /// Bytes of body still to come.
    Length(u64),
    /// Reading a chunk-size line (kept in `line`).
    ChunkSize,
    /// Bytes of chunk data still to come.
    ChunkData(u64),
    /// The CRLF after a chunk's data: how many of its bytes have been seen.
    ChunkEnd(u8),
    /// Trailer lines after the last chunk, up to an empty line.
    Trailers,
    /// The body ends when the server closes the connection.
    UntilClose,
}

/// Parses one response at a time from the bytes a connection reads. Call [`ResponseParser::feed`]
/// with each read, and [`ResponseParser::eof`] when the peer closes; [`ResponseParser::reset`]
/// before the next request.
pub(crate) struct ResponseParser {
    /// The request was HEAD: the response has no body whatever its headers say.
    head_request: bool,
    /// `None` while the head is still being read.
    body: Option<Body>,
    /// Bytes of an incomplete head, or of an incomplete chunk-size or trailer line.
    line: Vec<u8>,
    status: u16,
    keep_alive: bool,
    body_bytes: u64,
}

impl ResponseParser {
    pub(crate) fn new(head_request: bool) -> Self {
        Self {
            head_request,
            body: None,
            line: Vec::new(),
            status: 0,
            keep_alive: true,
            body_bytes: 0,
        }
    }

    /// Forget the previous response (before sending the next request; `head_request`: it is a
    /// HEAD).
    pub(crate) fn reset(&mut self, head_request: bool) {
        self.head_request = head_request;
        self.body = None;
        self.line.clear();
        self.status = 0;
        self.keep_alive = true;
        self.body_bytes = 0;
    }

    fn complete(&self) -> Progress {
        Progress::Complete(Response {
            status: self.status,
            body_bytes: self.body_bytes,
            keep_alive: self.keep_alive,
        })
    }

    /// Takes the bytes of one read. Bytes after the end of the response are an error: the
    /// generator never pipelines, so a server has nothing else to send.
    pub(crate) fn feed(&mut self, mut data: &[u8]) -> Result<Progress, String> {
        loop {
            let Some(body) = self.body else {
                let used = self.feed_head(data)?;
                data = &data[used..];
                if self.body.is_none() {
                    if data.is_empty() {
                        return Ok(Progress::More);
                    }
                    // An interim (1xx) response ended inside this read: the real head follows.
                    continue;
                }
                if self.body == Some(Body::Length(0)) {
                    return self.finish(data);
                }
                if data.is_empty() {
                    return Ok(Progress::More);
                }
                continue;
            };
            if data.is_empty() {
                return Ok(Progress::More);
            }
            match body {
                Body::Length(left) => {
                    let n = left.min(data.len() as u64);
                    self.body_bytes += n;
                    data = &data[n as usize..];
                    self.body = Some(Body::Length(left - n));
                    if left == n {
                        return self.finish(data);
                    }
                }
                Body::UntilClose => {
                    self.body_bytes += data.len() as u64;
                    return Ok(Progress::More);
                }
                Body::ChunkData(left) => {
                    let n = left.min(data.len() as u64);
                    self.body_bytes += n;
                    data = &data[n as usize..];
                    self.body = Some(if left == n {
                        Body::ChunkEnd(0)
                    } else {
                        Body::ChunkData(left - n)
                    });
                }
                Body::ChunkEnd(seen) => {
                    let expected = b"\r\n"[usize::from(seen)];
                    if data[0] != expected {
                        return Err("malformed chunked body: no CRLF after a chunk".into());
                    }
                    data = &data[1..];
                    self.body = Some(if seen == 1 {
                        Body::ChunkSize
                    } else {
                        Body::ChunkEnd(1)
                    });
                }
                Body::ChunkSize | Body::Trailers => {
                    let Some(line_end) = data.iter().position(|&b| b == b'\n') else {
                        self.push_line(data)?;
                        return Ok(Progress::More);
                    };
                    self.push_line(&data[..=line_end])?;
                    data = &data[line_end + 1..];
                    let line = std::mem::take(&mut self.line);
                    if body == Body::Trailers {
                        if line == b"\r\n" || line == b"\n" {
                            return self.finish(data);
                        }
                    } else {
                        let size = match httparse::parse_chunk_size(&line) {
                            Ok(httparse::Status::Complete((_, size))) => size,
                            _ => return Err("malformed chunked body: bad chunk size".into()),
                        };
                        self.body = Some(if size == 0 {
                            Body::Trailers
                        } else {
                            Body::ChunkData(size)
                        });
                    }
                    self.line = line;
                    self.line.clear();
                }
            }
        }
    }

    /// The peer closed the connection: completes a body that runs until close, else the
    /// response was cut short.
    pub(crate) fn eof(&mut self) -> Result<Response, String> {
        match self.body {
            Some(Body::UntilClose) => {
                self.keep_alive = false;
                match self.complete() {
                    Progress::Complete(r) => Ok(r),
                    Progress::More => unreachable!(),
                }
            }
            None if self.line.is_empty() => {
                Err("connection closed before the response started".into())
            }
            _ => Err("connection closed before the response ended".into()),
        }
    }

    fn finish(&mut self, rest: &[u8]) -> Result<Progress, String> {
        if !rest.is_empty() {
            return Err(format!(
                "{} bytes after the end of the response (none were asked for)",
                rest.len()
            ));
        }
        Ok(self.complete())
    }

    fn push_line(&mut self, bytes: &[u8]) -> Result<(), String> {
        if self.line.len() + bytes.len() > MAX_LINE_BYTES {
            return Err("malformed chunked body: a line longer than 4 KiB".into());
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    /// Parses the head from `data` (after any bytes already kept); returns how many bytes of
    /// `data` belonged to it. Sets `body` once a final (non-1xx) head is complete.
    fn feed_head(&mut self, data: &[u8]) -> Result<usize, String> {
        // The usual case, a whole head in one read, is parsed in place without a copy.
        let kept = self.line.len();
        let buf: &[u8] = if kept == 0 {
            data
        } else {
            self.line.extend_from_slice(data);
            &self.line
        };
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut headers);
        let head_len = match resp.parse(buf) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => {
                if buf.len() > MAX_HEAD_BYTES {
                    return Err("response head larger than 64 KiB".into());
                }
                if kept == 0 {
                    self.line.extend_from_slice(data);
                }
                return Ok(data.len());
            }
            Err(e) => return Err(format!("malformed response head: {e}")),
        };
        let status = resp.code.unwrap_or(0);
        let http10 = resp.version == Some(0);
        let mut length: Option<u64> = None;
        let mut chunked = false;
        let mut encoded = false;
        let (mut close, mut keep_alive_token) = (false, false);
        for h in resp.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let v = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|s| s.trim().parse::<u64>().ok())
                    .ok_or("malformed response head: bad content-length")?;
                if length.is_some_and(|l| l != v) {
                    return Err("malformed response head: two different content-lengths".into());
                }
                length = Some(v);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                encoded = true;
                // Chunked must be the last coding for the body to be chunk-framed.
                chunked = h
                    .value
                    .rsplit(|&b| b == b',')
                    .next()
                    .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            } else if h.name.eq_ignore_ascii_case("connection") {
                for token in h.value.split(|&b| b == b',') {
                    let token = token.trim_ascii();
                    close |= token.eq_ignore_ascii_case(b"close");
                    keep_alive_token |= token.eq_ignore_ascii_case(b"keep-alive");
                }
            }
        }
        let used = head_len - kept;
        self.line.clear();
        if (100..200).contains(&status) {
            if status == 101 {
                return Err("the server switched protocols (101), which was not asked for".into());
            }
            // An interim response (100 Continue, 103 Early Hints): the final one follows.
            return Ok(used);
        }
        self.status = status;
        self.keep_alive = !close && (!http10 || keep_alive_token);
        self.body = Some(if self.head_request || status == 204 || status == 304 {
            Body::Length(0)
        } else if chunked {
            Body::ChunkSize
        } else if encoded {
            // A coding other than chunked last: the body runs until close (RFC 9112 6.3).
            Body::UntilClose
        } else if let Some(n) = length {
            Body::Length(n)
        } else {
            Body::UntilClose
        });
        if self.body == Some(Body::UntilClose) {
            self.keep_alive = false;
        }
        Ok(used)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_in_pieces(bytes: &[u8], cuts: &[usize], head: bool) -> Result<Response, String> {
        let mut p = ResponseParser::new(head);
        let mut at = 0;
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        cuts.sort_unstable();
        cuts.push(bytes.len());
        for cut in cuts {
            if cut < at {
                continue;
            }
            match p.feed(&bytes[at..cut])? {
                Progress::Complete(r) => {
                    if cut != bytes.len() {
                        // Bytes left over must be reported when they come.
                        return match p.feed(&bytes[cut..])? {
                            Progress::Complete(_) | Progress::More => {
                                Err("left-over bytes were accepted".into())
                            }
                        };
                    }
                    return Ok(r);
                }
                Progress::More => at = cut,
            }
        }
        p.eof()
    }

    #[derive(Debug, Clone)]
    struct Sample {
        interim: bool,
        status: u16,
        http10: bool,
        close: bool,
        body: Vec<u8>,
        /// `None`: content-length; `Some(sizes)`: chunked in these pieces (sizes cycle).
        chunks: Option<Vec<usize>>,
        trailer: bool,
        /// Neither length nor chunked: the body runs until close.
        until_close: bool,
    }

    impl Sample {
        fn bytes(&self) -> Vec<u8> {
            let mut out = Vec::new();
            if self.interim {
                out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
            }
            let version = if self.http10 { "1.0" } else { "1.1" };
            out.extend_from_slice(format!("HTTP/{version} {} X\r\n", self.status).as_bytes());
            out.extend_from_slice(b"server: test\r\n");
            if self.close {
                out.extend_from_slice(b"Connection: close\r\n");
            }
            match (&self.chunks, self.until_close) {
                (_, true) => {
                    out.extend_from_slice(b"\r\n");
                    out.extend_from_slice(&self.body);
                }
                (None, false) => {
                    out.extend_from_slice(
                        format!("Content-Length: {}\r\n\r\n", self.body.len()).as_bytes(),
                    );
                    out.extend_from_slice(&self.body);
                }
                (Some(sizes), false) => {
                    out.extend_from_slice(b"Transfer-Encoding: gzip, chunked\r\n\r\n");
                    let mut rest = &self.body[..];
                    let mut i = 0;
                    while !rest.is_empty() {
                        let n = sizes[i % sizes.len()].clamp(1, rest.len());
                        out.extend_from_slice(format!("{n:X};ext=1\r\n").as_bytes());
                        out.extend_from_slice(&rest[..n]);
                        out.extend_from_slice(b"\r\n");
                        rest = &rest[n..];
                        i += 1;
                    }
                    out.extend_from_slice(b"0\r\n");
                    if self.trailer {
                        out.extend_from_slice(b"x-trailer: 1\r\n");
                    }
                    out.extend_from_slice(b"\r\n");
                }
            }
            out
        }
    }

    fn sample() -> impl Strategy<Value = Sample> {
        (
            any::<bool>(),
            prop_oneof![Just(200u16), Just(404), Just(500), Just(503)],
            any::<bool>(),
            any::<bool>(),
            proptest::collection::vec(any::<u8>(), 0..300),
            proptest::option::of(proptest::collection::vec(1usize..40, 1..4)),
            any::<bool>(),
            proptest::bool::weighted(0.15),
        )
            .prop_map(
                |(interim, status, http10, close, body, chunks, trailer, until_close)| Sample {
                    interim,
                    status,
                    http10,
                    close,
                    body,
                    chunks,
                    trailer,
                    until_close,
                },
            )
    }

    proptest! {
        /// However the bytes are split into reads, the parser sees the same response: status,
        /// body length, and whether the connection may be reused.
        #[test]
        fn any_split_gives_the_same_response(
            s in sample(),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
        ) {
            let bytes = s.bytes();
            let r = parse_in_pieces(&bytes, &cuts, false).unwrap();
            prop_assert_eq!(r.status, s.status);
            prop_assert_eq!(r.body_bytes, s.body.len() as u64);
            let reusable = !s.close && !s.http10 && !s.until_close;
            prop_assert_eq!(r.keep_alive, reusable);
        }

        /// A response cut short anywhere is an error at close, never a complete response
        /// (unless its body runs until close).
        #[test]
        fn a_truncated_response_is_an_error(s in sample(), cut in any::<usize>()) {
            prop_assume!(!s.until_close);
            let bytes = s.bytes();
            let cut = cut % bytes.len();
            let mut p = ResponseParser::new(false);
            prop_assert_eq!(p.feed(&bytes[..cut]).unwrap(), Progress::More);
            prop_assert!(p.eof().is_err());
        }

        /// Arbitrary bytes never panic the parser.
        #[test]
        fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..400)) {
            let mut p = ResponseParser::new(false);
            let _ = p.feed(&data);
            let _ = p.eof();
        }
    }

    #[test]
    fn bodiless_responses() {
        for (head, raw) in [
            (true, &b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n"[..]),
            (false, b"HTTP/1.1 204 No Content\r\n\r\n"),
            (
                false,
                b"HTTP/1.1 304 Not Modified\r\ncontent-length: 9\r\n\r\n",
            ),
        ] {
            let mut p = ResponseParser::new(head);
            let Progress::Complete(r) = p.feed(raw).unwrap() else {
                panic!("incomplete: {raw:?}");
            };
            assert_eq!(r.body_bytes, 0);
            assert!(r.keep_alive);
        }
    }

    #[test]
    fn framing_errors_are_reported() {
        for (raw, says) in [
            (
                &b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokEXTRA"[..],
                "after the end",
            ),
            (
                b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\n",
                "two different",
            ),
            (
                b"HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n",
                "content-length",
            ),
            (
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nZZ\r\n",
                "chunk size",
            ),
            (
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nokXX",
                "CRLF",
            ),
            (b"HTTP/1.1 101 Switching\r\n\r\n", "101"),
            (b"NOT HTTP\r\n\r\n", "malformed response head"),
        ] {
            let err = ResponseParser::new(false).feed(raw).unwrap_err();
            assert!(err.contains(says), "{raw:?}: {err}");
        }
        let mut huge = b"HTTP/1.1 200 OK\r\n".to_vec();
        huge.extend(std::iter::repeat_n(b'a', 70_000));
        let err = ResponseParser::new(false).feed(&huge).unwrap_err();
        assert!(err.contains("64 KiB"), "{err}");
    }

    #[test]
    fn the_request_is_serialised_once_with_host_and_length() {
        let get = serialize_request(&Method::GET, "/a?b=1", "127.0.0.1:80", &[], b"").unwrap();
        assert_eq!(
            &get[..],
            b"GET /a?b=1 HTTP/1.1\r\nhost: 127.0.0.1:80\r\n\r\n"
        );
        let h = [(
            HeaderName::from_static("host"),
            HeaderValue::from_static("example"),
        )];
        let post = serialize_request(&Method::POST, "/echo", "x:1", &h, b"hi").unwrap();
        assert_eq!(
            &post[..],
            b"POST /echo HTTP/1.1\r\nhost: example\r\ncontent-length: 2\r\n\r\nhi"
        );
        let cl = [(
            HeaderName::from_static("content-length"),
            HeaderValue::from_static("3"),
        )];
        assert!(serialize_request(&Method::POST, "/", "x:1", &cl, b"hi").is_err());
    }
}
