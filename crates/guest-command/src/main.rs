//! The handlers as a WASI preview1 command: the request on stdin, the response on stdout (framing in
//! `wasmlab-guest-abi`). This is the gateway study's guest shape, run once per request.

#[cfg(target_arch = "wasm32")]
fn main() {
    use std::io::{Read, Write};
    use wasmlab_guest_abi::{decode_command_request, encode_command_response};
    use wasmlab_handlers::{Request, handle, run_ready};

    let mut input = Vec::new();
    std::io::stdin()
        .read_to_end(&mut input)
        .expect("read stdin");
    let output = match decode_command_request(&input) {
        Ok((method, target, body)) => {
            let resp = run_ready(handle(
                Request::new(method, target, body),
                &wasmlab_guest_core::ImportHost,
            ));
            let headers = resp.headers.iter().map(|(k, v)| (*k, v.as_str()));
            encode_command_response(resp.status, headers, &resp.body)
        }
        Err(e) => encode_command_response(400, [], e.to_string().as_bytes()),
    };
    std::io::stdout().write_all(&output).expect("write stdout");
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!(
        "wasmlab-guest-command is a Wasm guest: it is built for wasm32-wasip1 by wasmlab-guest-artifacts"
    );
    std::process::exit(2);
}
