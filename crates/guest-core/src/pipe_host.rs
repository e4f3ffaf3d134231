//! The host's capabilities over stdin and stdout, for a WASI command run by an engine's own CLI
//! (see `wasmlab_guest_abi::pipe`).

use std::io::{BufRead, Read, Write};

use wasmlab_guest_abi::pipe;
use wasmlab_handlers::{Host, Request, Response};

pub struct PipeHost;

impl PipeHost {
    /// Writes a call and waits for the host's reply on stdin.
    fn call(&self, name: &str, arg: &[u8]) -> Result<Vec<u8>, String> {
        let mut out = std::io::stdout().lock();
        out.write_all(&pipe::encode_call(name, arg))
            .and_then(|()| out.flush())
            .map_err(|e| format!("write host call: {e}"))?;
        drop(out);
        let mut input = std::io::stdin().lock();
        let mut head = String::new();
        input
            .read_line(&mut head)
            .map_err(|e| format!("read host reply: {e}"))?;
        let (ok, len) =
            pipe::decode_reply_head(head.trim_end_matches('\n')).map_err(|e| e.to_string())?;
        let mut bytes = vec![0u8; len];
        input
            .read_exact(&mut bytes)
            .map_err(|e| format!("read host reply: {e}"))?;
        if ok {
            Ok(bytes)
        } else {
            Err(String::from_utf8_lossy(&bytes).into_owned())
        }
    }
}

impl Host for PipeHost {
    async fn state_increment(&self) -> Result<u64, String> {
        // The counter is the host's; without it the handler cannot answer, and a trap says so.
        let value = self
            .call(pipe::CALL_STATE_INCREMENT, b"")
            .expect("state_increment host call");
        Ok(std::str::from_utf8(&value)
            .ok()
            .and_then(|v| v.parse().ok())
            .expect("state_increment answers a number"))
    }

    async fn proxy_get(&self, target: &str) -> Result<Vec<u8>, String> {
        self.call(pipe::CALL_PROXY_GET, target.as_bytes())
    }
}

/// A pipe command's whole life: the request from stdin, `handler` (which may call the host over
/// the pipes), the response to stdout.
pub fn run_pipe_command(handler: impl FnOnce(Request<'_>) -> Response) {
    let mut input = std::io::stdin().lock();
    let mut head = String::new();
    input.read_line(&mut head).expect("read request line");
    let output = match pipe::decode_request_head(head.trim_end_matches('\n')) {
        Ok((method, target, len)) => {
            let mut body = vec![0u8; len];
            input.read_exact(&mut body).expect("read request body");
            drop(input);
            let resp = handler(Request::new(method, target, &body));
            let headers = resp.headers.iter().map(|(k, v)| (*k, v.as_str()));
            wasmlab_guest_abi::encode_command_response(resp.status, headers, &resp.body)
        }
        Err(e) => wasmlab_guest_abi::encode_command_response(400, [], e.to_string().as_bytes()),
    };
    let mut out = std::io::stdout().lock();
    out.write_all(&output).expect("write response");
    out.flush().expect("flush response");
}
