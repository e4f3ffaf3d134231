//! The gateway's request path: any bytes a client sends get an HTTP/1.x answer (or a closed
//! connection), never a panic or a hang.
#![no_main]

use std::sync::Arc;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wasmlab_gateway::{Capabilities, NativeExecutor, ServerConfig, serve_connection};

fuzz_target!(|data: &[u8]| {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let executor = Arc::new(NativeExecutor::new(Arc::new(
            Capabilities::new(None).unwrap(),
        )));
        let config = Arc::new(ServerConfig {
            header_timeout: Duration::from_millis(200),
            max_body_bytes: 4096,
            ..ServerConfig::default()
        });
        let (mut client, server) = tokio::io::duplex(64 << 10);
        let served = tokio::spawn(serve_connection(server, executor, config));
        client.write_all(data).await.unwrap();
        client.shutdown().await.unwrap();
        let mut out = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), client.read_to_end(&mut out))
            .await
            .expect("the gateway answers or closes within the header timeout")
            .unwrap();
        served.await.expect("serving a connection never panics");
        // HTTP/1.0 requests are answered in HTTP/1.0.
        assert!(
            out.is_empty() || out.starts_with(b"HTTP/1.1 ") || out.starts_with(b"HTTP/1.0 "),
            "{:?}",
            String::from_utf8_lossy(&out)
        );
    });
});
