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
