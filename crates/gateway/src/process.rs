//! A process per request: the gateway study's CLI method (`wasmtime run guest.wasm` spawned for
//! each request), for any command that speaks the pipe command shape (`wasmlab_guest_abi::pipe`):
//! the request on its stdin, the host's capabilities over its stdin and stdout, the response on
//! its stdout. The limits are the Wasm executors': a deadline (the process is killed and the
//! client gets 504), a bounded number of live processes with a bounded, timed queue (503), and a
//! cap on what a process may write. Every process is waited for, whatever happens: no zombies.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStdin, Command};
use wasmlab_guest_abi::pipe::{self, Message};

use crate::admission::Admission;
use crate::executor::{ExecRequest, Executor, Failure, Reply};
use wasmlab_capabilities::Capabilities;

#[derive(Debug, Clone, Copy)]
pub struct ProcessLimits {
    /// Processes alive at once; requests beyond this wait for one to end.
    pub max_processes: usize,
    /// Requests allowed to wait; more are answered 503 at once.
    pub max_queue: usize,
    /// Longest wait for a process slot before 503.
    pub queue_timeout: Duration,
    /// Longest a request may take from spawn to exit; past it the process is killed (504).
    pub deadline: Duration,
    /// Most bytes a process may write to stdout (and, kept for the log, to stderr).
    pub max_output_bytes: usize,
}

impl Default for ProcessLimits {
    fn default() -> Self {
        Self {
            max_processes: 64,
            max_queue: 10_000,
            queue_timeout: Duration::from_secs(10),
            deadline: Duration::from_secs(5),
            max_output_bytes: 64 << 20,
        }
    }
}

impl std::fmt::Display for ProcessLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "max_processes={} deadline={} ms max_queue={} queue_timeout={} ms max_output={} MiB",
            self.max_processes,
            self.deadline.as_millis(),
            self.max_queue,
            self.queue_timeout.as_millis(),
            self.max_output_bytes >> 20
        )
    }
}

pub struct ProcessExecutor {
    program: PathBuf,
    args: Vec<String>,
    caps: Arc<Capabilities>,
    admission: Admission,
    limits: ProcessLimits,
}

/// How much of a failed process's stderr the diagnosis quotes.
const STDERR_QUOTED: usize = 400;

impl ProcessExecutor {
    /// Runs `command` (program and arguments) once per request.
    pub fn new(
        command: &[String],
        caps: Arc<Capabilities>,
        limits: ProcessLimits,
    ) -> anyhow::Result<Self> {
        let (program, args) = command
            .split_first()
            .ok_or_else(|| anyhow::anyhow!("no command to run per request"))?;
        let program = resolve(program)?;
        Ok(Self {
            program,
            args: args.to_vec(),
            caps,
            admission: Admission::new(limits.max_processes, limits.max_queue, limits.queue_timeout),
            limits,
        })
    }

    async fn run(&self, req: ExecRequest) -> Result<Reply, Failure> {
        let mut child = Command::new(&self.program)
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A safety net only: every path below waits for the process itself.
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                Failure::new(500, format!("cannot start {}: {e}", self.program.display()))
            })?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let max = self.limits.max_output_bytes;
        let exchange = async {
            let (output, errors) =
                tokio::join!(self.converse(&req, stdin, stdout), read_capped(stderr, max));
            let status = child.wait().await;
            (output, errors, status)
        };
        match tokio::time::timeout(self.limits.deadline, exchange).await {
            Ok((output, errors, status)) => {
                let status = status
                    .map_err(|e| Failure::new(500, format!("waiting for the process: {e}")))?;
                let stderr_tail = tail(&errors.unwrap_or_default());
                if !status.success() {
                    return Err(Failure::new(
                        500,
                        format!("the process exited with {status}: {stderr_tail}"),
                    ));
                }
                let output = output.map_err(|e| {
                    Failure::new(500, format!("{e} (process stderr: {stderr_tail})"))
                })?;
                let resp = wasmlab_guest_abi::decode_command_response(&output).map_err(|e| {
                    Failure::new(500, format!("malformed response from the process: {e}"))
                })?;
                let headers = resp.headers.iter().map(|(k, v)| (k.as_str(), v.as_str()));
                Reply::from_parts(resp.status, headers, resp.body)
                    .map_err(|e| Failure::new(500, format!("the process answered {e}")))
            }
            Err(_) => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                Err(Failure::new(
                    504,
                    format!(
                        "the process did not finish within its deadline of {} ms and was killed",
                        self.limits.deadline.as_millis()
                    ),
                ))
            }
        }
    }

    /// Sends the request, answers the process's host calls, and returns the response it writes
    /// after them (everything up to end of file).
    async fn converse(
        &self,
        req: &ExecRequest,
        mut stdin: ChildStdin,
        mut stdout: impl AsyncRead + Unpin,
    ) -> Result<Vec<u8>, String> {
        let request = pipe::encode_request(req.method.as_str(), &req.target, &req.body);
        // A process that never reads its stdin is not an error here: its output says the rest.
        let _ = stdin.write_all(&request).await;
        let mut stdin = Some(stdin);
        let mut buf = Vec::with_capacity(1024);
        let mut chunk = vec![0u8; 16 << 10];
        loop {
            match pipe::next_message(&buf).map_err(|e| format!("malformed output: {e}"))? {
                Message::Call {
                    name,
                    arg,
                    consumed,
                } => {
                    let reply = self.host_call(name, arg).await;
                    buf.drain(..consumed);
                    if let Some(input) = stdin.as_mut() {
                        let _ = input.write_all(&reply).await;
                    }
                    continue;
                }
                Message::Response => {
                    // No more calls: closing stdin lets a process that reads to its end finish.
                    drop(stdin.take());
                    let rest = read_capped(&mut stdout, self.limits.max_output_bytes - buf.len())
                        .await
                        .map_err(|e| format!("reading the process's output: {e}"))?;
                    buf.extend_from_slice(&rest);
                    return Ok(buf);
                }
                Message::Incomplete => {}
            }
            let n = stdout
                .read(&mut chunk)
                .await
                .map_err(|e| format!("reading the process's output: {e}"))?;
            if n == 0 {
                return Err(if buf.is_empty() {
                    "the process wrote no response".into()
                } else {
                    format!(
                        "the process's output ended inside a host call: {:?}",
                        String::from_utf8_lossy(&buf[..buf.len().min(80)])
                    )
                });
            }
            buf.extend_from_slice(&chunk[..n]);
        }
    }

    async fn host_call(&self, name: &str, arg: &[u8]) -> Vec<u8> {
        match name {
            pipe::CALL_STATE_INCREMENT => {
                pipe::encode_reply(Ok(self.caps.increment().to_string().as_bytes()))
            }
            pipe::CALL_PROXY_GET => {
                let outcome = match std::str::from_utf8(arg) {
                    Ok(target) => self.caps.upstream_get(target).await,
                    Err(_) => Err("the target is not UTF-8".into()),
                };
                match outcome {
                    Ok(body) => pipe::encode_reply(Ok(&body)),
                    Err(msg) => pipe::encode_reply(Err(msg.as_bytes())),
                }
            }
            other => pipe::encode_reply(Err(format!("no host call named {other:?}").as_bytes())),
        }
    }
}

impl Executor for ProcessExecutor {
    fn name(&self) -> &'static str {
        "process"
    }

    async fn execute(&self, req: ExecRequest) -> Result<Reply, Failure> {
        self.admission.admit(|| self.run(req)).await
    }
}

/// Reads to end of file; more than `max` bytes is an error.
async fn read_capped(mut r: impl AsyncRead + Unpin, max: usize) -> std::io::Result<Bytes> {
    let mut out = Vec::new();
    (&mut r).take(max as u64 + 1).read_to_end(&mut out).await?;
    if out.len() > max {
        return Err(std::io::Error::other(format!(
            "more than {max} bytes of output"
        )));
    }
    Ok(out.into())
}

/// The last few hundred bytes of a process's stderr, for a diagnosis.
fn tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    if text.is_empty() {
        return "no stderr".into();
    }
    match text.char_indices().rev().nth(STDERR_QUOTED) {
        Some((i, _)) => format!("…{}", &text[i..]),
        None => text.to_owned(),
    }
}

/// The program as a path: as given if it names a file, else found on PATH.
fn resolve(program: &str) -> anyhow::Result<PathBuf> {
    let given = PathBuf::from(program);
    if program.contains('/') {
        anyhow::ensure!(given.is_file(), "{program} does not exist");
        return Ok(given);
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .ok_or_else(|| anyhow::anyhow!("{program} is not on PATH"))
}
