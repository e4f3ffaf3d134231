//! Every `wasmlab` command the README and the docs index show, and every example in `wasmlab run
//! --help` and `wasmlab load --help`, parses with the CLI as it is: each is run with `--help`
//! appended, which clap prints only once every argument before it was accepted (an unknown option
//! or a bad value fails first). A doc that falls behind a renamed flag fails here.

use crate::support;

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
        script.contains("exec cargo test --release --workspace --no-fail-fast \"$@\""),
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

/// The figures the README quotes are a run kept in the repository, docs/results/RUN (the first
/// such directory the README names): the answer's ratios with their intervals are rows of that
/// run's summary.md, its other ratios and milliseconds figures of summary.md, at the README's
/// precision (within half its last digit), and the terminal excerpt is lines of the run's
/// terminal.txt. Re-quoting the README after a new run means keeping that run beside it.
#[test]
fn the_readme_s_figures_are_the_kept_run_s() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let id: String = readme
        .split("docs/results/")
        .nth(1)
        .expect("README.md names the run it quotes, docs/results/RUN")
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    let dir = root.join("docs/results").join(&id);
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.join(name).display()))
    };
    let summary = read("summary.md");
    let terminal = read("terminal.txt");
    let run: serde_json::Value = serde_json::from_str(&read("run.json")).unwrap();
    assert_eq!(run["run_id"], id.as_str(), "run.json is another run's");
    assert!(summary.contains(&format!("# wasmlab run {id}: quick")));

    let answer = readme
        .split("**The answer, today**")
        .nth(1)
        .and_then(|s| s.split("\n\n").next())
        .expect("README.md has its answer paragraph")
        .replace("**", "")
        .replace('\n', " ");
    let rows = intervals(&summary);
    let quoted = intervals(&answer);
    assert!(quoted.len() >= 5, "{answer}");
    for q in &quoted {
        assert!(
            rows.iter()
                .any(|r| q.iter().zip(r).all(|(q, r)| q.holds(r.value))),
            "README quotes {} [{}–{}], which no row of {}/summary.md has",
            q[0].text,
            q[1].text,
            q[2].text,
            dir.display()
        );
    }
    // A ratio is a figure with an interval; milliseconds are the cold starts' and warm latency's.
    let ratios: Vec<f64> = rows.iter().map(|r| r[0].value).collect();
    let timings: Vec<f64> = summary
        .split("## Cold start")
        .nth(1)
        .and_then(|s| s.split("## Open loop").next())
        .map(numbers)
        .expect("summary.md has cold starts and warm latency")
        .iter()
        .map(|q| q.value)
        .collect();
    for (unit, figures) in [("×", &ratios), (" ms", &timings)] {
        for q in numbers_before(&answer, unit) {
            assert!(
                figures.iter().any(|f| q.holds(*f)),
                "README says {}{unit}, which {}/summary.md does not",
                q.text,
                dir.display()
            );
        }
    }

    let excerpt = readme
        .split("## What the terminal shows")
        .nth(1)
        .and_then(|s| s.split("```").nth(1))
        .expect("README.md shows the terminal");
    let lines: Vec<&str> = excerpt.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines.len() >= 10, "{excerpt}");
    for line in lines.into_iter().filter(|l| l.trim() != "…") {
        assert!(
            terminal.lines().any(|t| t.trim_end() == line.trim_end()),
            "README's terminal line is not in {}/terminal.txt:\n{line}",
            dir.display()
        );
    }
}

/// A number as written: its value and how many decimals it was given.
#[derive(Debug, Clone)]
struct Quoted {
    text: String,
    value: f64,
    decimals: i32,
}

impl Quoted {
    /// `value` written at this number's precision gives this number.
    fn holds(&self, value: f64) -> bool {
        (value - self.value).abs() <= 0.5 * 10f64.powi(-self.decimals) + 1e-9
    }
}

/// Every number in `text` (digits, thousands commas, a decimal point), with where it starts and
/// ends.
fn numbers_at(text: &str) -> Vec<(Quoted, usize, usize)> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit()
            || (i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'.'))
        {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len()
            && (b[i].is_ascii_digit()
                || ((b[i] == b',' || b[i] == b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit)))
        {
            i += 1;
        }
        let text = text[start..i].replace(',', "");
        let decimals = text.split_once('.').map_or(0, |(_, d)| d.len() as i32);
        if let Ok(value) = text.parse() {
            out.push((
                Quoted {
                    text,
                    value,
                    decimals,
                },
                start,
                i,
            ));
        }
    }
    out
}

fn numbers(text: &str) -> Vec<Quoted> {
    numbers_at(text).into_iter().map(|(q, _, _)| q).collect()
}

/// The numbers written right before `unit` ("1.8×", "3.0 ms").
fn numbers_before(text: &str, unit: &str) -> Vec<Quoted> {
    numbers_at(text)
        .into_iter()
        .filter(|(_, _, end)| text[*end..].starts_with(unit))
        .map(|(q, _, _)| q)
        .collect()
}

/// Every "VALUE[×] [LOW–HIGH]" in `text`: a figure with its interval.
fn intervals(text: &str) -> Vec<[Quoted; 3]> {
    let found = numbers_at(text);
    found
        .windows(3)
        .filter(|w| {
            let (first, second) = (&text[w[0].2..w[1].1], &text[w[1].2..w[2].1]);
            (first == " [" || first == "× [") && second == "–" && text[w[2].2..].starts_with(']')
        })
        .map(|w| [w[0].0.clone(), w[1].0.clone(), w[2].0.clone()])
        .collect()
}

#[test]
fn figures_are_read_as_written() {
    let t = intervals("costs 1.80× [1.67–1.94] native, 1.004 [0.968–1.041] n=4 | 110,000 |");
    assert_eq!(t.len(), 2);
    assert!(t[0][0].holds(1.795) && !t[0][0].holds(1.8051));
    assert!(t[1][2].holds(1.041) && !t[1][2].holds(1.0416));
    let ms = numbers_before(
        "100 ms to start against native's 3.0 ms, 92× at 100 req/s",
        " ms",
    );
    assert_eq!(ms.iter().map(|q| q.value).collect::<Vec<_>>(), [100.0, 3.0]);
    assert!(ms[0].holds(100.4) && !ms[0].holds(100.6));
    let x = numbers_before("937× saturated, 2-core, 11.1×", "×");
    assert_eq!(x.iter().map(|q| q.value).collect::<Vec<_>>(), [937.0, 11.1]);
}

/// A heading's anchor as GitHub makes it: lower case, punctuation but `-` and `_` dropped,
/// spaces made `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The relative links of a markdown text (`[text](target)`), with their line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            rest = &rest[i + 2..];
            let Some(end) = rest.find([')', ' ']) else {
                break;
            };
            let target = &rest[..end];
            if !target.contains("://") && !target.starts_with("mailto:") && !target.is_empty() {
                out.push((n + 1, target.to_owned()));
            }
            rest = &rest[end..];
        }
    }
    out
}

/// Every page of docs/ (results kept as examples aside) and the README.
fn pages(workspace: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![workspace.join("README.md")];
    let mut dirs = vec![workspace.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() && !path.ends_with("results") {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    out
}

/// What in `pages` links to a file that is not there, or to a heading its page does not have.
fn broken_links(pages: &[std::path::PathBuf]) -> Vec<String> {
    let headings = |path: &std::path::Path| -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.strip_prefix('#'))
            .map(|l| anchor(l.trim_start_matches('#')))
            .collect()
    };
    let mut broken = Vec::new();
    for page in pages {
        let text = std::fs::read_to_string(page).unwrap();
        for (line, target) in links(&text) {
            let (file, fragment) = target.split_once('#').unwrap_or((&target, ""));
            let path = match file {
                "" => page.clone(),
                f => page.parent().unwrap().join(f),
            };
            if !path.exists() {
                broken.push(format!("{}:{line}: {target}: no such file", page.display()));
            } else if !fragment.is_empty()
                && path.extension().is_some_and(|e| e == "md")
                && !headings(&path).iter().any(|h| h == fragment)
            {
                broken.push(format!(
                    "{}:{line}: {target}: no such heading",
                    page.display()
                ));
            }
        }
    }
    broken
}

/// Pages move and headings are renamed (method.md's evidence went to pages of its own): every
/// relative link of the README and docs/ reaches a file, and a heading of it where it names one.
#[test]
fn every_link_of_the_docs_reaches_its_page_and_heading() {
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
    let pages = pages(&workspace);
    assert!(pages.len() > 40, "{} pages", pages.len());
    let broken = broken_links(&pages);
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn a_link_to_a_missing_page_or_heading_is_found() {
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("a.md");
    std::fs::write(tmp.path().join("b.md"), "# B: the page\n\n## Its `part`\n").unwrap();
    std::fs::write(
        &page,
        "[ok](b.md) [ok](b.md#b-the-page) [ok](b.md#its-part) [ok](#here)\n\n# Here\n\
         [gone](c.md) [no heading](b.md#nothing) [web](https://example.com/x.md)\n",
    )
    .unwrap();
    let broken = broken_links(&[page]);
    assert_eq!(broken.len(), 2, "{broken:?}");
    assert!(
        broken[0].ends_with("a.md:4: c.md: no such file"),
        "{broken:?}"
    );
    assert!(
        broken[1].ends_with("a.md:4: b.md#nothing: no such heading"),
        "{broken:?}"
    );
}
