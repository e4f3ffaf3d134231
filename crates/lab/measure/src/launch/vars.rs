//! Filling a variant's templates: `{name}` placeholders replaced by this run's values (see
//! `wasmlab_model::variant::PLACEHOLDERS`), `{tool:NAME}` by the tool's path, `{container}` by the
//! container engine and its flags.

use std::collections::BTreeMap;
use std::process::Command;

use wasmlab_model::variant::{Piece, parse_template};

/// The values of one variant in one run.
#[derive(Debug, Clone, Default)]
pub struct Vars {
    values: BTreeMap<String, String>,
    /// `{container}`: program and global flags.
    container: Option<Vec<String>>,
    /// Environment for every command of the variant (e.g. the container engine's configuration).
    env: Vec<(String, String)>,
}

impl Vars {
    pub fn set(&mut self, key: &str, value: impl Into<String>) {
        self.values.insert(key.to_owned(), value.into());
    }

    /// A copy with one more value (per launch: the port, the instance name).
    pub fn with(&self, key: &str, value: impl Into<String>) -> Self {
        let mut v = self.clone();
        v.set(key, value);
        v
    }

    pub fn set_container(&mut self, command: Vec<String>, env: Vec<(String, String)>) {
        self.container = Some(command);
        self.env.extend(env);
    }

    /// Environment for every command of the variant (e.g. where `ctr` finds the lab's containerd).
    pub fn add_env(&mut self, env: &[(String, String)]) {
        self.env.extend(env.iter().cloned());
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// One template filled in.
    pub fn expand_one(&self, template: &str) -> anyhow::Result<String> {
        let mut out = String::new();
        for piece in parse_template(template).map_err(anyhow::Error::msg)? {
            match piece {
                Piece::Text(t) => out.push_str(&t),
                Piece::Var(v) => out.push_str(
                    self.values
                        .get(v)
                        .ok_or_else(|| anyhow::anyhow!("no value for {{{v}}} here"))?,
                ),
            }
        }
        Ok(out)
    }

    /// Arguments filled in; `{container}` expands to several.
    pub fn expand(&self, args: &[String]) -> anyhow::Result<Vec<String>> {
        let mut out = Vec::with_capacity(args.len());
        for a in args {
            if a == "{container}" {
                let c = self
                    .container
                    .as_ref()
                    .ok_or_else(|| anyhow::anyhow!("no container engine here"))?;
                out.extend(c.iter().cloned());
            } else {
                out.push(self.expand_one(a)?);
            }
        }
        Ok(out)
    }

    /// A command for `args` (program first), with the variant's environment.
    pub fn command(&self, args: &[String]) -> anyhow::Result<Command> {
        let args = self.expand(args)?;
        let (program, rest) = args
            .split_first()
            .ok_or_else(|| anyhow::anyhow!("empty command"))?;
        let mut cmd = Command::new(program);
        cmd.args(rest);
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        Ok(cmd)
    }

    /// The command line as one string, for messages.
    pub fn show(&self, args: &[String]) -> String {
        self.expand(args)
            .map(|a| a.join(" "))
            .unwrap_or_else(|e| format!("{args:?} ({e})"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_values_tools_and_the_container() {
        let mut v = Vars::default();
        v.set("bin", "/b");
        v.set("tool:wasmtime", "/t/wasmtime");
        v.set_container(
            vec!["podman".into(), "--runtime=runc".into()],
            vec![("CONTAINERS_CONF".into(), "/c".into())],
        );
        let v = v.with("port", "8080");
        let args: Vec<String> = [
            "{container}",
            "run",
            "{bin}/gw",
            "--port={port}",
            "{{.Pid}}",
            "{tool:wasmtime}",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            v.expand(&args).unwrap(),
            [
                "podman",
                "--runtime=runc",
                "run",
                "/b/gw",
                "--port=8080",
                "{{.Pid}}",
                "/t/wasmtime"
            ]
        );
        assert!(
            v.expand_one("{nothing}")
                .unwrap_err()
                .to_string()
                .contains("{nothing}")
        );
        let cmd = v.command(&args).unwrap();
        assert_eq!(cmd.get_program(), "podman");
        assert!(cmd.get_envs().any(|(k, _)| k == "CONTAINERS_CONF"));
        assert!(Vars::default().expand(&["{container}".into()]).is_err());
    }
}
