//! Which HTTP a connection speaks. In cleartext with `--http2`, the first bytes decide: HTTP/2 by
//! prior knowledge opens with the connection preface (RFC 9113 §3.4), anything else is HTTP/1.1.
//! Over TLS, ALPN decides (see `tls.rs`).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

/// What an HTTP/2 client sends first, and what no HTTP/1.1 request can start with (`PRI` is
/// registered as a method only to make that so).
pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Http {
    One,
    Two,
}

/// Reads until the bytes either are the HTTP/2 preface or can no longer become it (usually the
/// first read decides), and returns the stream with those bytes put back in front.
pub(crate) async fn sniff<S: AsyncRead + Unpin>(mut stream: S) -> io::Result<(Http, Replayed<S>)> {
    let mut read = Vec::with_capacity(PREFACE.len());
    let mut buf = [0u8; PREFACE.len()];
    let http = loop {
        let want = PREFACE.len() - read.len();
        let n = stream.read(&mut buf[..want]).await?;
        read.extend_from_slice(&buf[..n]);
        if n == 0 || !PREFACE.starts_with(&read) {
            // A close or a diverging byte: HTTP/1.1 (hyper answers or ends what it gets).
            break Http::One;
        }
        if read.len() == PREFACE.len() {
            break Http::Two;
        }
    };
    Ok((
        http,
        Replayed {
            front: read,
            at: 0,
            inner: stream,
        },
    ))
}

/// A stream whose first reads give back the bytes `sniff` took from it.
#[derive(Debug)]
pub(crate) struct Replayed<S> {
    front: Vec<u8>,
    at: usize,
    inner: S,
}

impl<S: AsyncRead + Unpin> AsyncRead for Replayed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.at < this.front.len() {
            let n = out.remaining().min(this.front.len() - this.at);
            out.put_slice(&this.front[this.at..this.at + n]);
            this.at += n;
            if this.at == this.front.len() {
                this.front = Vec::new();
                this.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, out)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Replayed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// Sends `chunks` with a pause between them, sniffs, and returns the verdict and every byte
    /// the replayed stream then reads.
    async fn sniffed(chunks: &[&[u8]]) -> (Http, Vec<u8>) {
        let (mut client, server) = tokio::io::duplex(1024);
        let chunks: Vec<Vec<u8>> = chunks.iter().map(|c| c.to_vec()).collect();
        let writer = tokio::spawn(async move {
            for c in chunks {
                client.write_all(&c).await.unwrap();
                tokio::task::yield_now().await;
            }
        });
        let (http, mut replayed) = sniff(server).await.unwrap();
        writer.await.unwrap();
        let mut all = Vec::new();
        replayed.read_to_end(&mut all).await.unwrap();
        (http, all)
    }

    #[tokio::test]
    async fn the_preface_is_http2_even_split_byte_by_byte() {
        let mut sent = PREFACE.to_vec();
        sent.extend_from_slice(b"\x00\x00\x00\x04\x00\x00\x00\x00\x00");
        let (http, all) = sniffed(&[&sent[..1]]).await;
        assert_eq!(http, Http::One, "a lone 'P' then a close is not HTTP/2");
        assert_eq!(all, b"P");
        let bytes: Vec<&[u8]> = sent.chunks(1).collect();
        let (http, all) = sniffed(&bytes).await;
        assert_eq!(http, Http::Two);
        assert_eq!(all, sent, "every byte read back, the preface first");
    }

    #[tokio::test]
    async fn http1_requests_are_told_at_their_first_differing_byte_and_kept_whole() {
        for req in [
            &b"GET / HTTP/1.1\r\nhost: x\r\n\r\n"[..],
            b"POST /echo HTTP/1.1\r\ncontent-length: 0\r\n\r\n",
            b"PRI /not-the-preface HTTP/1.1\r\n\r\n",
            b"PUT / HTTP/1.1\r\n\r\n",
        ] {
            let (http, all) = sniffed(&[req]).await;
            assert_eq!(http, Http::One, "{}", String::from_utf8_lossy(req));
            assert_eq!(all, req);
        }
        let (http, all) = sniffed(&[b"PO", b"ST / HTTP/1.1\r\n\r\n"]).await;
        assert_eq!(http, Http::One);
        assert_eq!(all, b"POST / HTTP/1.1\r\n\r\n");
    }

    #[tokio::test]
    async fn a_client_that_closes_at_once_is_http1_with_nothing_to_read() {
        let (http, all) = sniffed(&[]).await;
        assert_eq!(http, Http::One);
        assert!(all.is_empty());
    }
}
