//! The host side of the handler ABI: whatever a guest leaves in its memory, reading its response
//! must not panic, and an accepted response lies within the memory and carries safe headers.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wasmlab_guest_abi::{decode_command_response, parse_headers, read_response};

fuzz_target!(|data: &[u8]| {
    // First four bytes: where the descriptor is; the rest: the guest's memory.
    if data.len() >= 4 {
        let ptr =
            u32::from_le_bytes([data[0], data[1], data[2], data[3]]) % (data.len() as u32 + 64);
        let memory = &data[4..];
        if let Ok(resp) = read_response(memory, ptr) {
            assert!((100..=999).contains(&resp.status));
            assert!(resp.body.len() <= memory.len());
            for (k, v) in &resp.headers {
                assert!(!k.is_empty() && !k.contains(['\r', '\n', ':', ' ']));
                assert!(!v.contains(['\r', '\n']));
            }
        }
    }
    // The command guest's stdout.
    if let Ok(resp) = decode_command_response(data) {
        assert!((100..=999).contains(&resp.status));
        assert!(resp.body.len() <= data.len());
    }
    let _ = parse_headers(data);
});
