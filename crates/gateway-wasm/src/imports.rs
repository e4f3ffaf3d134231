//! The `wasmlab` host imports (see `wasmlab-guest-abi`), shared by every executor.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use wasmlab_gateway::{Capabilities, ExecRequest};
use wasmlab_guest_abi as abi;
use wasmtime::{Caller, Extern, Linker, Memory, Result, StoreLimits, bail};

use crate::limits::{DeadlineExceeded, GuestLimits};

/// Per-request host state the imports work on. The capabilities (counter, upstream) are shared by
/// every request, so the linker's functions hold them rather than each request's state.
pub struct HostCtx {
    /// The store's resource limiter (memory growth).
    pub limits: StoreLimits,
    /// When the request must be done: host calls that wait are cut here.
    deadline: Instant,
    /// The request a core-module guest reads with `request_sizes` / `request_read`.
    request: Option<ExecRequest>,
    /// The outcome of the last `proxy_get`, until `proxy_take` copies it out.
    proxy_outcome: Option<Result<Bytes, String>>,
    /// The instance's exported memory, once the executor has resolved it by index: the imports
    /// then skip a lookup by name on every call.
    memory: Option<Memory>,
}

impl HostCtx {
    /// For a guest that gets its request some other way (the command guest reads stdin).
    pub fn new(limits: &GuestLimits) -> Self {
        Self {
            limits: limits.store_limits(),
            deadline: Instant::now() + limits.deadline,
            request: None,
            proxy_outcome: None,
            memory: None,
        }
    }

    /// When the request must be done.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    pub fn with_request(request: ExecRequest, limits: &GuestLimits) -> Self {
        Self {
            limits: limits.store_limits(),
            deadline: Instant::now() + limits.deadline,
            request: Some(request),
            proxy_outcome: None,
            memory: None,
        }
    }

    /// Takes the next request in a store kept between requests: its own deadline, nothing left of
    /// the previous request's upstream call.
    pub fn begin(&mut self, request: ExecRequest, limits: &GuestLimits) {
        self.request = Some(request);
        self.deadline = Instant::now() + limits.deadline;
        self.proxy_outcome = None;
    }

    /// Gives the imports the instance's memory export (resolved by index after instantiation).
    pub fn set_memory(&mut self, memory: Memory) {
        self.memory = Some(memory);
    }
}

fn guest_memory<T>(caller: &mut Caller<'_, T>, ctx: fn(&mut T) -> &mut HostCtx) -> Result<Memory> {
    if let Some(memory) = ctx(caller.data_mut()).memory {
        return Ok(memory);
    }
    match caller.get_export(abi::EXPORT_MEMORY) {
        Some(Extern::Memory(m)) => Ok(m),
        _ => bail!("guest has no exported memory"),
    }
}

/// Copies `bytes` into guest memory at `dst`, trapping if it does not fit.
fn write<T>(
    caller: &mut Caller<'_, T>,
    ctx: fn(&mut T) -> &mut HostCtx,
    dst: u32,
    bytes: &[u8],
) -> Result<()> {
    let memory = guest_memory(caller, ctx)?;
    memory.write(caller, dst as usize, bytes).map_err(|_| {
        wasmtime::format_err!("guest buffer at {dst}+{} is out of bounds", bytes.len())
    })
}

/// Adds the imports to `linker`, serving `caps`; `ctx` projects the store's data to its [`HostCtx`].
pub fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    ctx: fn(&mut T) -> &mut HostCtx,
    caps: &Arc<Capabilities>,
) -> Result<()> {
    linker.func_wrap(
        abi::IMPORT_MODULE,
        abi::IMPORT_REQUEST_SIZES,
        move |mut caller: Caller<'_, T>, out: u32| -> Result<()> {
            let Some(req) = ctx(caller.data_mut()).request.as_ref() else {
                bail!("no request for this instance");
            };
            let sizes = [req.method.as_str().len(), req.target.len(), req.body.len()];
            let mut bytes = [0u8; 12];
            for (chunk, n) in bytes.chunks_exact_mut(4).zip(sizes) {
                chunk.copy_from_slice(&(n as u32).to_le_bytes());
            }
            write(&mut caller, ctx, out, &bytes)
        },
    )?;
    linker.func_wrap(
        abi::IMPORT_MODULE,
        abi::IMPORT_REQUEST_READ,
        move |mut caller: Caller<'_, T>, method: u32, target: u32, body: u32| -> Result<()> {
            let Some(req) = ctx(caller.data_mut()).request.take() else {
                bail!("request_read called twice or without a request");
            };
            write(&mut caller, ctx, method, req.method.as_str().as_bytes())?;
            write(&mut caller, ctx, target, req.target.as_bytes())?;
            write(&mut caller, ctx, body, &req.body)
        },
    )?;
    let counter = caps.clone();
    linker.func_wrap(
        abi::IMPORT_MODULE,
        abi::IMPORT_STATE_INCREMENT,
        move || -> i64 { counter.increment() as i64 },
    )?;
    let upstream = caps.clone();
    linker.func_wrap_async(
        abi::IMPORT_MODULE,
        abi::IMPORT_PROXY_GET,
        move |mut caller: Caller<'_, T>, (ptr, len): (u32, u32)| {
            let caps = upstream.clone();
            Box::new(async move {
                let memory = guest_memory(&mut caller, ctx)?;
                let target = abi::slice(memory.data(&caller), "proxy target", ptr, len)?;
                let target = match std::str::from_utf8(target) {
                    Ok(t) => t.to_owned(),
                    Err(_) => bail!("proxy target is not UTF-8"),
                };
                let deadline = ctx(caller.data_mut()).deadline;
                let remaining = deadline.saturating_duration_since(Instant::now());
                let Ok(outcome) = tokio::time::timeout(remaining, caps.upstream_get(&target)).await
                else {
                    return Err(DeadlineExceeded.into());
                };
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
            write(&mut caller, ctx, dst, &bytes[..n])?;
            Ok(n as u32)
        },
    )?;
    Ok(())
}
