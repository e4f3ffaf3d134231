//! The `wasmlab` host imports (see `wasmlab-guest-abi`), shared by both executors.

use std::sync::Arc;

use bytes::Bytes;
use wasmlab_gateway::Capabilities;
use wasmlab_guest_abi as abi;
use wasmtime::{Caller, Extern, Linker, Result, bail};

/// Per-request host state the imports work on.
pub struct HostCtx {
    pub caps: Arc<Capabilities>,
    /// The outcome of the last `proxy_get`, until `proxy_take` copies it out.
    proxy_outcome: Option<Result<Bytes, String>>,
}

impl HostCtx {
    pub fn new(caps: Arc<Capabilities>) -> Self {
        Self {
            caps,
            proxy_outcome: None,
        }
    }
}

fn guest_memory<T>(caller: &mut Caller<'_, T>) -> Result<wasmtime::Memory> {
    match caller.get_export(abi::EXPORT_MEMORY) {
        Some(Extern::Memory(m)) => Ok(m),
        _ => bail!("guest has no exported memory"),
    }
}

/// Adds the imports to `linker`; `ctx` projects the store's data to its [`HostCtx`].
pub fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    ctx: fn(&mut T) -> &mut HostCtx,
) -> Result<()> {
    linker.func_wrap(
        abi::IMPORT_MODULE,
        abi::IMPORT_STATE_INCREMENT,
        move |mut caller: Caller<'_, T>| -> i64 { ctx(caller.data_mut()).caps.increment() as i64 },
    )?;
    linker.func_wrap_async(
        abi::IMPORT_MODULE,
        abi::IMPORT_PROXY_GET,
        move |mut caller: Caller<'_, T>, (ptr, len): (u32, u32)| {
            Box::new(async move {
                let memory = guest_memory(&mut caller)?;
                let target = abi::slice(memory.data(&caller), "proxy target", ptr, len)?;
                let target = match std::str::from_utf8(target) {
                    Ok(t) => t.to_owned(),
                    Err(_) => bail!("proxy target is not UTF-8"),
                };
                let caps = ctx(caller.data_mut()).caps.clone();
                let outcome = caps.upstream_get(&target).await;
                let code = match &outcome {
                    Ok(body) => body.len() as i64,
                    Err(msg) => -(msg.len() as i64) - 1,
                };
                ctx(caller.data_mut()).proxy_outcome = Some(outcome);
                Ok(code)
            })
        },
    )?;
    linker.func_wrap(
        abi::IMPORT_MODULE,
        abi::IMPORT_PROXY_TAKE,
        move |mut caller: Caller<'_, T>, dst: u32, dst_len: u32| -> Result<u32> {
            let Some(outcome) = ctx(caller.data_mut()).proxy_outcome.take() else {
                bail!("proxy_take called without a preceding proxy_get");
            };
            let bytes = match &outcome {
                Ok(body) => &body[..],
                Err(msg) => msg.as_bytes(),
            };
            let n = bytes.len().min(dst_len as usize);
            let memory = guest_memory(&mut caller)?;
            memory
                .write(&mut caller, dst as usize, &bytes[..n])
                .map_err(|_| wasmtime::format_err!("proxy_take destination out of bounds"))?;
            Ok(n as u32)
        },
    )?;
    Ok(())
}
