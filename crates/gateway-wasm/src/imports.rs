//! The `wasmlab` host imports (see `wasmlab-guest-abi`), shared by every executor.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use wasmlab_gateway::{Capabilities, ExecRequest};
use wasmlab_guest_abi as abi;
use wasmtime::{Caller, Extern, Linker, Memory, Result, StoreLimits, bail};

use crate::calls::{Placement, SyncView, block_on_host_call};
use crate::limits::{DeadlineExceeded, GuestCalls, GuestLimits};

/// Per-request host state the imports work on. The capabilities (counter, upstream) are shared by
/// every request, so the linker's functions hold them rather than each request's state.
pub struct HostCtx {
    /// The store's resource limiter (memory growth).
    pub limits: StoreLimits,
    /// When the request started in the guest, and when it must be done: host calls that wait are
    /// cut at the deadline.
    started: Instant,
    deadline: Instant,
    /// Where the guest runs, when called synchronously (see `calls`).
    pub(crate) placement: Placement,
    /// The request a core-module guest reads with `request_sizes` / `request_read`, kept until the
    /// request ends (its path tells the executor which route waited).
    request: Option<ExecRequest>,
    /// Whether `request_read` has copied the request into the guest (it may, once).
    request_read: bool,
    /// Whether a synchronous call waited in a host call (`proxy_get`).
    pub(crate) waited: bool,
    /// The outcome of the last `proxy_get`, until `proxy_take` copies it out.
    proxy_outcome: Option<Result<Bytes, String>>,
    /// The instance's exported memory, once the executor has resolved it by index: the imports
    /// then skip a lookup by name on every call.
    memory: Option<Memory>,
}

impl HostCtx {
    /// For a guest that gets its request some other way (the command guest reads stdin).
    pub fn new(limits: &GuestLimits) -> Self {
        let started = Instant::now();
        Self {
            limits: limits.store_limits(),
            started,
            deadline: started + limits.deadline,
            placement: Placement::Worker,
            request: None,
            request_read: false,
            waited: false,
            proxy_outcome: None,
            memory: None,
        }
    }

    /// When the request must be done.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// What a synchronous call's deadline reads and moves (see `calls`).
    pub(crate) fn sync_view(&mut self) -> SyncView<'_> {
        SyncView {
            started: self.started,
            deadline: self.deadline,
            placement: &mut self.placement,
        }
    }

    pub fn with_request(request: ExecRequest, limits: &GuestLimits) -> Self {
        Self {
            request: Some(request),
            ..Self::new(limits)
        }
    }

    /// Takes the next request in a store kept between requests: its own deadline, nothing left of
    /// the previous request's upstream call.
    pub fn begin(&mut self, request: ExecRequest, limits: &GuestLimits) {
        self.request = Some(request);
        self.request_read = false;
        self.waited = false;
        self.started = Instant::now();
        self.deadline = self.started + limits.deadline;
        self.proxy_outcome = None;
    }

    /// Ends a request in a store kept for the next: a lane slot its guest held goes back, and the
    /// request's body is not kept while the store waits.
    pub fn end(&mut self) {
        self.placement = Placement::Worker;
        self.request = None;
    }

    /// The request's path (without its query), when a synchronous call of it waited in a host
    /// call.
    pub(crate) fn waited_on_path(&self) -> Option<&str> {
        let target = &self.request.as_ref().filter(|_| self.waited)?.target;
        Some(
            target
                .split_once('?')
                .map_or(target.as_str(), |(path, _)| path),
        )
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

/// The target a `proxy_get` names, and how long it may wait for the upstream.
fn proxy_target<T>(
    caller: &mut Caller<'_, T>,
    ctx: fn(&mut T) -> &mut HostCtx,
    ptr: u32,
    len: u32,
) -> Result<(String, Duration)> {
    let memory = guest_memory(caller, ctx)?;
    let target = abi::slice(memory.data(&*caller), "proxy target", ptr, len)?;
    let Ok(target) = std::str::from_utf8(target) else {
        bail!("proxy target is not UTF-8");
    };
    let target = target.to_owned();
    let deadline = ctx(caller.data_mut()).deadline;
    Ok((target, deadline.saturating_duration_since(Instant::now())))
}

/// Keeps the upstream's answer for `proxy_take` and returns `proxy_get`'s code: the body's length,
/// or -(length of the error message) - 1.
fn proxy_outcome<T, E>(
    caller: &mut Caller<'_, T>,
    ctx: fn(&mut T) -> &mut HostCtx,
    outcome: std::result::Result<std::result::Result<Bytes, String>, E>,
) -> Result<i64> {
    let Ok(outcome) = outcome else {
        return Err(DeadlineExceeded.into());
    };
    let code = match &outcome {
        Ok(body) => body.len() as i64,
        Err(msg) => -(msg.len() as i64) - 1,
    };
    ctx(caller.data_mut()).proxy_outcome = Some(outcome);
    Ok(code)
}

/// Adds the imports to `linker`, serving `caps`; `ctx` projects the store's data to its [`HostCtx`].
/// `calls` ([`GuestCalls::Sync`] or [`GuestCalls::Async`]) says how the guest will be called:
/// `proxy_get` waits for its upstream on a fiber, or blocks its thread off the worker.
pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    ctx: fn(&mut T) -> &mut HostCtx,
    caps: &Arc<Capabilities>,
    calls: GuestCalls,
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
            let host = ctx(caller.data_mut());
            if host.request_read {
                bail!("request_read called twice");
            }
            let Some(req) = host.request.take() else {
                bail!("request_read called without a request");
            };
            host.request_read = true;
            let written = write(&mut caller, ctx, method, req.method.as_str().as_bytes())
                .and_then(|()| write(&mut caller, ctx, target, req.target.as_bytes()))
                .and_then(|()| write(&mut caller, ctx, body, &req.body));
            ctx(caller.data_mut()).request = Some(req);
            written
        },
    )?;
    let counter = caps.clone();
    linker.func_wrap(
        abi::IMPORT_MODULE,
        abi::IMPORT_STATE_INCREMENT,
        move || -> i64 { counter.increment() as i64 },
    )?;
    let upstream = caps.clone();
    if calls.is_sync() {
        linker.func_wrap(
            abi::IMPORT_MODULE,
            abi::IMPORT_PROXY_GET,
            move |mut caller: Caller<'_, T>, ptr: u32, len: u32| -> Result<i64> {
                let (target, remaining) = proxy_target(&mut caller, ctx, ptr, len)?;
                ctx(caller.data_mut()).waited = true;
                let outcome = block_on_host_call(tokio::time::timeout(
                    remaining,
                    upstream.upstream_get(&target),
                ))?;
                proxy_outcome(&mut caller, ctx, outcome)
            },
        )?;
    } else {
        linker.func_wrap_async(
            abi::IMPORT_MODULE,
            abi::IMPORT_PROXY_GET,
            move |mut caller: Caller<'_, T>, (ptr, len): (u32, u32)| {
                let caps = upstream.clone();
                Box::new(async move {
                    let (target, remaining) = proxy_target(&mut caller, ctx, ptr, len)?;
                    let outcome = tokio::time::timeout(remaining, caps.upstream_get(&target)).await;
                    proxy_outcome(&mut caller, ctx, outcome)
                })
            },
        )?;
    }
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
