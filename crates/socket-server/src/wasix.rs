//! The sockets on wasm32-wasip1, where WASI preview 1 has no call that opens, binds or connects
//! one: WASIX's (`wasix_32v1`, which Wasmer implements) through the `wasix` crate's bindings. Each
//! socket, once open, is handed to the standard library and tokio as a file descriptor: reading,
//! writing, accepting (`sock_accept`) and polling (`poll_oneoff`) are preview 1's.
//!
//! `/proxy`'s upstream client is hyper's connection API over such sockets (hyper-util's pooled
//! client opens its own through tokio, which tokio cannot do on this target), keeping idle
//! connections for the next request as the gateways' client does.

use std::net::{SocketAddr, SocketAddrV4};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http_body_util::Empty;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use wasix::{AddrIp4, AddrIp4Port, AddrPort, AddrPortU, Fd};
use wasmlab_capabilities::{answer, within_timeout};

/// A bound, listening socket for tokio, and the address it got (port 0: the one the host chose).
pub fn listen(addr: SocketAddr) -> std::io::Result<(TcpListener, SocketAddr)> {
    let v4 = ipv4(addr)?;
    let socket = open_tcp4()?;
    let fd = socket.as_raw_fd() as Fd;
    // SAFETY (every `unsafe` below): the bindings' calls, on a socket this owns, with pointers to
    // live values.
    unsafe { wasix::sock_set_opt_flag(fd, wasix::SOCK_OPTION_REUSE_ADDR, wasix::BOOL_TRUE) }
        .map_err(|e| errno("SO_REUSEADDR", e))?;
    unsafe { wasix::sock_bind(fd, &addr_port(v4)) }.map_err(|e| {
        if e == wasix::ERRNO_NOTSUP {
            // What Wasmer's runtime answers when it gives the program no network.
            std::io::Error::other(format!(
                "sock_bind: {e}: the runtime gives this program no network (Wasmer: --net host)"
            ))
        } else {
            errno("sock_bind", e)
        }
    })?;
    unsafe { wasix::sock_listen(fd, 1024) }.map_err(|e| errno("sock_listen", e))?;
    let local = unsafe { wasix::sock_addr_local(fd) }.map_err(|e| errno("sock_addr_local", e))?;
    let std = std::net::TcpListener::from(socket);
    std.set_nonblocking(true)?;
    Ok((
        TcpListener::from_std(std)?,
        SocketAddr::V4(socket_addr(local)),
    ))
}

/// A new IPv4 TCP socket, closed when dropped.
fn open_tcp4() -> std::io::Result<OwnedFd> {
    // SAFETY: sock_open writes the new descriptor, which nothing else owns.
    let fd = unsafe {
        wasix::sock_open(
            wasix::ADDRESS_FAMILY_INET4,
            wasix::SOCK_TYPE_SOCKET_STREAM,
            wasix::SOCK_PROTO_TCP,
        )
    }
    .map_err(|e| errno("sock_open", e))?;
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// TCP_NODELAY, which WASI preview 1's standard library cannot set.
pub fn set_nodelay(stream: &TcpStream) -> std::io::Result<()> {
    unsafe {
        wasix::sock_set_opt_flag(
            stream.as_raw_fd() as Fd,
            wasix::SOCK_OPTION_NO_DELAY,
            wasix::BOOL_TRUE,
        )
    }
    .map_err(|e| errno("TCP_NODELAY", e))
}

/// The handlers' host: the counter of `/state` and the upstream client of `/proxy`.
pub struct Capabilities {
    counter: AtomicU64,
    upstream: Option<Upstream>,
}

struct Upstream {
    addr: SocketAddrV4,
    /// Connections whose last exchange ended cleanly, for the next request.
    idle: Mutex<Vec<SendRequest<Empty<Bytes>>>>,
}

impl Capabilities {
    /// `upstream` is an `http://IPv4:port` base URL (no name lookup here); without one, `/proxy`
    /// answers 502.
    pub fn new(upstream: Option<&str>) -> anyhow::Result<Self> {
        let upstream = upstream
            .map(|u| -> anyhow::Result<Upstream> {
                let uri: hyper::Uri = u
                    .parse()
                    .map_err(|e| anyhow::anyhow!("--upstream {u:?} is not a URL: {e}"))?;
                let addr = (uri.scheme_str() == Some("http"))
                    .then(|| uri.authority()?.as_str().parse::<SocketAddrV4>().ok())
                    .flatten()
                    .ok_or_else(|| {
                        anyhow::anyhow!("--upstream {u:?} must be an http://IPv4:port URL on WASIX")
                    })?;
                Ok(Upstream {
                    addr,
                    idle: Mutex::new(Vec::new()),
                })
            })
            .transpose()?;
        Ok(Self {
            counter: AtomicU64::new(0),
            upstream,
        })
    }

    async fn upstream_get(&self, target: &str) -> Result<Vec<u8>, String> {
        let up = self
            .upstream
            .as_ref()
            .ok_or_else(|| "no upstream configured (--upstream)".to_owned())?;
        within_timeout(async {
            let kept = up.idle.lock().expect("not poisoned").pop();
            let mut sender = match kept {
                Some(s) if !s.is_closed() => s,
                _ => connect(up.addr).await?,
            };
            sender.ready().await.map_err(|e| e.to_string())?;
            let req = hyper::Request::get(target)
                .header(hyper::header::HOST, up.addr.to_string())
                .body(Empty::new())
                .map_err(|e| format!("bad target {target:?}: {e}"))?;
            let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
            let body = answer(resp).await?;
            // Read whole: the connection is free for the next request.
            up.idle.lock().expect("not poisoned").push(sender);
            body.map(Vec::from)
        })
        .await
    }
}

impl wasmlab_handlers::Host for Capabilities {
    async fn state_increment(&self) -> Result<u64, String> {
        Ok(self.counter.fetch_add(1, Ordering::Relaxed) + 1)
    }

    async fn proxy_get(&self, target: &str) -> Result<Vec<u8>, String> {
        self.upstream_get(target).await
    }
}

/// A new HTTP/1.1 connection to the upstream; its connection task runs beside.
async fn connect(addr: SocketAddrV4) -> Result<SendRequest<Empty<Bytes>>, String> {
    let stream = (|| -> std::io::Result<TcpStream> {
        let socket = open_tcp4()?;
        // A blocking connect: to the loopback, it is as quick as the kernel's handshake.
        unsafe { wasix::sock_connect(socket.as_raw_fd() as Fd, &addr_port(addr)) }
            .map_err(|e| errno("sock_connect", e))?;
        let std = std::net::TcpStream::from(socket);
        std.set_nonblocking(true)?;
        let stream = TcpStream::from_std(std)?;
        set_nodelay(&stream)?;
        Ok(stream)
    })()
    .map_err(|e| format!("connect to {addr}: {e}"))?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

fn ipv4(addr: SocketAddr) -> std::io::Result<SocketAddrV4> {
    match addr {
        SocketAddr::V4(v4) => Ok(v4),
        SocketAddr::V6(_) => Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "IPv6 is not served on WASIX here",
        )),
    }
}

fn addr_port(addr: SocketAddrV4) -> AddrPort {
    let [n0, n1, h0, h1] = addr.ip().octets();
    AddrPort {
        tag: wasix::ADDRESS_FAMILY_INET4.raw(),
        u: AddrPortU {
            inet4: AddrIp4Port {
                port: addr.port(),
                addr: AddrIp4 { n0, n1, h0, h1 },
            },
        },
    }
}

/// Wasmer reads a port in the program's byte order but writes one in network order (its
/// `read_ip_port` and `write_ip_port`), so an address it returns has its port's bytes swapped.
fn socket_addr(a: AddrPort) -> SocketAddrV4 {
    // SAFETY: Wasmer wrote an IPv4 address (the socket was opened as one).
    let v4 = unsafe { a.u.inet4 };
    let ip = v4.addr;
    SocketAddrV4::new([ip.n0, ip.n1, ip.h0, ip.h1].into(), u16::from_be(v4.port))
}

fn errno(call: &str, e: wasix::Errno) -> std::io::Error {
    std::io::Error::other(format!("{call}: {e}"))
}
