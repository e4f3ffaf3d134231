//! The pipe command shape: a WASI command run by an engine's own CLI (`wasmtime run`,
//! `wasmedge`, ...) once per request, reaching the host's capabilities over its stdin and stdout,
//! since a CLI links none of the `wasmlab` imports.
//!
//! - Request, host → stdin: `METHOD SP TARGET SP BODY_LEN LF`, then `BODY_LEN` bytes of body.
//! - Host calls, guest → stdout: `@NAME SP ARG_LEN LF`, then `ARG_LEN` bytes of argument; each is
//!   answered on stdin with `+LEN LF` and `LEN` bytes (success) or `-LEN LF` and `LEN` bytes of
//!   error message. The calls are [`CALL_STATE_INCREMENT`] (no argument; answers the new value
//!   in decimal) and [`CALL_PROXY_GET`] (the target; answers the upstream's body).
//! - Response, guest → stdout, after any calls: the command shape of
//!   [`crate::encode_command_response`] (a status line of digits), up to end of file.
//!
//! The host reads stdout as it arrives with [`next_message`]; the guest frames its calls with
//! [`encode_call`] and reads the replies with [`decode_reply_head`].

use crate::AbiError;

pub const CALL_STATE_INCREMENT: &str = "state_increment";
pub const CALL_PROXY_GET: &str = "proxy_get";

/// Longest argument a host call may carry (a proxy target).
pub const MAX_CALL_ARG: usize = 64 << 10;

/// The pipe guest's stdin for a request (the head line and the body).
pub fn encode_request(method: &str, target: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!("{method} {target} {}\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// Parses the request's head line (without its LF): method, target and body length.
pub fn decode_request_head(line: &str) -> Result<(&str, &str, usize), AbiError> {
    let mut parts = line.splitn(3, ' ');
    let (Some(method), Some(target), Some(len)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(AbiError::BadFraming(
            "pipe request line is not METHOD TARGET LEN",
        ));
    };
    let len = len
        .parse()
        .map_err(|_| AbiError::BadFraming("pipe request body length is not a number"))?;
    Ok((method, target, len))
}

/// A host call as the guest writes it.
pub fn encode_call(name: &str, arg: &[u8]) -> Vec<u8> {
    let mut out = format!("@{name} {}\n", arg.len()).into_bytes();
    out.extend_from_slice(arg);
    out
}

/// The host's answer to a call.
pub fn encode_reply(outcome: Result<&[u8], &[u8]>) -> Vec<u8> {
    let (sign, bytes) = match outcome {
        Ok(b) => ('+', b),
        Err(b) => ('-', b),
    };
    let mut out = format!("{sign}{}\n", bytes.len()).into_bytes();
    out.extend_from_slice(bytes);
    out
}

/// Parses a reply's head line (without its LF): whether the call succeeded, and the length of
/// what follows.
pub fn decode_reply_head(line: &str) -> Result<(bool, usize), AbiError> {
    let (ok, len) = match line.as_bytes().first() {
        Some(b'+') => (true, &line[1..]),
        Some(b'-') => (false, &line[1..]),
        _ => {
            return Err(AbiError::BadFraming(
                "host reply does not start with + or -",
            ));
        }
    };
    let len = len
        .parse()
        .map_err(|_| AbiError::BadFraming("host reply length is not a number"))?;
    Ok((ok, len))
}

/// What the guest's stdout holds next, as far as it has arrived.
#[derive(Debug, PartialEq, Eq)]
pub enum Message<'a> {
    /// More bytes are needed to tell.
    Incomplete,
    /// A host call, whole: the first `consumed` bytes of the buffer.
    Call {
        name: &'a str,
        arg: &'a [u8],
        consumed: usize,
    },
    /// The response has started: everything from here to end of file is the response.
    Response,
}

/// Looks at the start of what the guest has written and not yet been consumed.
pub fn next_message(buf: &[u8]) -> Result<Message<'_>, AbiError> {
    match buf.first() {
        None => Ok(Message::Incomplete),
        Some(b'@') => {
            let Some(nl) = buf.iter().position(|&b| b == b'\n') else {
                return if buf.len() > 256 {
                    Err(AbiError::BadFraming("host call line too long"))
                } else {
                    Ok(Message::Incomplete)
                };
            };
            let line = std::str::from_utf8(&buf[1..nl])
                .map_err(|_| AbiError::BadFraming("host call line is not UTF-8"))?;
            let (name, len) = line
                .split_once(' ')
                .ok_or(AbiError::BadFraming("host call line is not @NAME LEN"))?;
            let len: usize = len
                .parse()
                .map_err(|_| AbiError::BadFraming("host call length is not a number"))?;
            if len > MAX_CALL_ARG {
                return Err(AbiError::BadFraming("host call argument too long"));
            }
            let end = nl + 1 + len;
            if buf.len() < end {
                return Ok(Message::Incomplete);
            }
            Ok(Message::Call {
                name,
                arg: &buf[nl + 1..end],
                consumed: end,
            })
        }
        Some(b) if b.is_ascii_digit() => Ok(Message::Response),
        Some(_) => Err(AbiError::BadFraming(
            "guest output is neither a host call nor a status line",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_round_trip() {
        let input = encode_request("POST", "/echo?x=1", b"a b\nc");
        let nl = input.iter().position(|&b| b == b'\n').unwrap();
        let head = std::str::from_utf8(&input[..nl]).unwrap();
        assert_eq!(decode_request_head(head).unwrap(), ("POST", "/echo?x=1", 5));
        assert_eq!(&input[nl + 1..], b"a b\nc");
        assert!(decode_request_head("GET /").is_err());
        assert!(decode_request_head("GET / x").is_err());
    }

    #[test]
    fn calls_are_read_as_they_arrive() {
        let mut out = encode_call(CALL_PROXY_GET, b"/proxy");
        let whole = out.len();
        out.extend_from_slice(b"200\n\nbody");
        for cut in 0..whole {
            assert_eq!(
                next_message(&out[..cut]).unwrap(),
                Message::Incomplete,
                "{cut}"
            );
        }
        assert_eq!(
            next_message(&out).unwrap(),
            Message::Call {
                name: CALL_PROXY_GET,
                arg: b"/proxy",
                consumed: whole
            }
        );
        assert_eq!(next_message(&out[whole..]).unwrap(), Message::Response);
        assert!(next_message(b"hello").is_err());
        assert!(next_message(b"@x notanumber\n").is_err());
        assert!(next_message(format!("@x {}\n", MAX_CALL_ARG + 1).as_bytes()).is_err());
        assert!(next_message(&[b'@'; 300]).is_err());
    }

    #[test]
    fn replies() {
        let r = encode_reply(Ok(b"42"));
        assert_eq!(r, b"+2\n42");
        assert_eq!(decode_reply_head("+2").unwrap(), (true, 2));
        assert_eq!(encode_reply(Err(b"no")), b"-2\nno");
        assert_eq!(decode_reply_head("-2").unwrap(), (false, 2));
        assert!(decode_reply_head("2").is_err());
        assert!(decode_reply_head("+x").is_err());
    }
}
