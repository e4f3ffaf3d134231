//! What a run found on the machine for its variants: the tools they run, with the versions they
//! printed, and the container engine with the settings that work here.

use serde::{Deserialize, Serialize};

/// A tool that was found, and the version it printed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FoundTool {
    pub name: String,
    pub path: String,
    pub version: String,
}

/// A container engine and the settings that work here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContainerEngine {
    /// `docker` or `podman`, with its global flags: what `{container}` expands to.
    pub command: Vec<String>,
    /// Environment every command of it needs (podman's CONTAINERS_CONF).
    pub env: Vec<(String, String)>,
    /// What `--version` printed.
    pub version: String,
}

impl ContainerEngine {
    pub fn describe(&self) -> String {
        let settings: Vec<String> = self.command[1..]
            .iter()
            .cloned()
            .chain(self.env.iter().map(|(k, v)| format!("{k}={v}")))
            .collect();
        if settings.is_empty() {
            self.version.clone()
        } else {
            format!("{} with {}", self.version, settings.join(" "))
        }
    }
}

/// The containerd the lab runs for a run's containerd variants, and what their commands get.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Containerd {
    /// `ctr`'s path: what `{ctr}` expands to.
    pub ctr: String,
    /// Environment every command of a containerd variant gets: the daemon's address, the lab's
    /// namespace, the snapshotter (`CONTAINERD_ADDRESS`, `CONTAINERD_NAMESPACE`,
    /// `CONTAINERD_SNAPSHOTTER`, which `ctr` reads).
    pub env: Vec<(String, String)>,
    /// The snapshotter that worked here (`overlayfs`, else `native`).
    pub snapshotter: String,
    /// What `containerd --version` printed.
    pub version: String,
}

impl Containerd {
    pub fn describe(&self) -> String {
        format!(
            "{} (the lab's own daemon; snapshotter {})",
            self.version, self.snapshotter
        )
    }
}
