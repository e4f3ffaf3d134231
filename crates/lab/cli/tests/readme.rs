//! Every `wasmlab` command the README and the docs index show, and every example in `wasmlab run
//! --help` and `wasmlab load --help`, parses with the CLI as it is: each is run with `--help`
//! appended, which clap prints only once every argument before it was accepted (an unknown option
//! or a bad value fails first). A doc that falls behind a renamed flag fails here.

mod support;

use support::WASMLAB;

/// The commands in `text`'s shell blocks (```sh) that run wasmlab, as its arguments.
fn commands_in_markdown(text: &str) -> Vec<String> {
    text.split("```sh")
        .skip(1)
        .filter_map(|block| block.split("```").next())
        .flat_map(str::lines)
        .filter_map(wasmlab_arguments)
        .collect()
}

/// The arguments of a line that runs wasmlab (`wasmlab …`, `./wasmlab …`, `target/release/wasmlab
/// …` or `cargo run --release -p wasmlab -- …`), without a trailing comment; not `./wasmlab test`,
/// which the script runs as `cargo test` (checked below).
fn wasmlab_arguments(line: &str) -> Option<String> {
    let line = line.split(" # ").next()?.trim();
    [
        "cargo run --release -p wasmlab -- ",
        "target/release/wasmlab ",
        "./wasmlab ",
        "wasmlab ",
    ]
    .iter()
    .find_map(|prefix| line.strip_prefix(prefix))
    .filter(|args| *args != "test" && !args.starts_with("test "))
    .map(str::to_owned)
}

/// The example commands a subcommand's help lists.
fn examples_in_help(subcommand: &str) -> Vec<String> {
    let out = std::process::Command::new(WASMLAB)
        .args([subcommand, "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    let examples: Vec<String> = help
        .split("Examples:")
        .nth(1)
        .unwrap_or_else(|| panic!("`wasmlab {subcommand} --help` has no examples"))
        .lines()
        .filter_map(|l| wasmlab_arguments(l.trim()))
        .collect();
    assert!(examples.len() >= 3, "{subcommand}: {examples:?}");
    examples
}

/// Runs `wasmlab ARGS --help` through the shell (which splits and unquotes the arguments as a
/// reader's shell would) and says why it failed, if it did.
fn parses(arguments: &str) -> Result<(), String> {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("exec \"$0\" {arguments} --help"))
        .arg(WASMLAB)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`wasmlab {arguments}`: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

#[test]
fn every_command_the_readme_and_the_help_show_parses() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
    let mut commands = Vec::new();
    for doc in ["README.md", "docs/README.md"] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        let found = commands_in_markdown(&text);
        assert!(
            !found.is_empty() || doc != "README.md",
            "{doc} shows no command"
        );
        commands.extend(found);
    }
    commands.extend(examples_in_help("run"));
    commands.extend(examples_in_help("load"));
    let failures: Vec<String> = commands.iter().filter_map(|c| parses(c).err()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_command_with_a_wrong_flag_is_caught() {
    // The check above can fail: a renamed flag, a bad value.
    assert!(parses("run --suite quick").is_ok());
    assert!(parses("run --suites quick").is_err());
    assert!(parses("load http://127.0.0.1:1/ -d banana").is_err());
    assert_eq!(
        wasmlab_arguments("cargo run --release -p wasmlab -- run --suite quick   # the main job"),
        Some("run --suite quick".to_owned())
    );
}

#[test]
fn the_readme_s_two_commands_are_the_script_s_and_ci_ends_with_the_second() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let block = readme
        .split("## Two commands")
        .nth(1)
        .and_then(|s| s.split("```sh").nth(1))
        .and_then(|s| s.split("```").next())
        .expect("README.md has a block under \"Two commands\"");
    let commands: Vec<&str> = block
        .lines()
        .filter_map(|l| l.split(" # ").next())
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(
        commands,
        ["./wasmlab run --suite quick", "./wasmlab test"],
        "{block}"
    );
    let script = std::fs::read_to_string(root.join("wasmlab")).unwrap();
    assert!(
        script.contains("exec cargo test --release --workspace \"$@\""),
        "{script}"
    );
    assert!(script.contains("rustup toolchain install"), "{script}");
    // CI's last command is the README's second (its output kept to count the skips).
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    let last_command = ci
        .lines()
        .map(str::trim)
        .rfind(|l| l.starts_with("./") || l.starts_with("cargo "))
        .unwrap();
    assert!(last_command.starts_with("./wasmlab test"), "{last_command}");
}
