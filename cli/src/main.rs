//! The `tensorbits` command-line tool: runs any op on `.npy` files with the library's own semantics,
//! prints support tables, lists devices, and benchmarks.
//!
//! Exit status: 0 on success; 2 for bad input or usage, with one line on stderr starting `error:`; 1
//! for a device failure. No output file is left behind on failure.

/// `println!` for the tool's output: a reader that goes away (`tensorbits ops | head`) ends the
/// program quietly instead of panicking on the broken pipe.
macro_rules! say {
    ($($t:tt)*) => { $crate::emit(format_args!($($t)*)) };
}

mod bench;
mod binary;
mod literal;
mod npy;
mod output;
mod run;

fn emit(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    if let Err(e) = writeln!(std::io::stdout().lock(), "{args}")
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(0);
    }
}

use clap::{CommandFactory, Parser, Subcommand};
use std::process::ExitCode;

/// Why the tool failed, and so which exit status it returns.
#[derive(Debug)]
pub enum Fail {
    /// Bad input or usage: exit 2.
    Input(String),
    /// The device failed: exit 1.
    Device(String),
}

impl Fail {
    /// A bad-input failure with this message.
    pub fn input(msg: impl Into<String>) -> Fail {
        Fail::Input(msg.into())
    }
}

impl From<tensorbits::Error> for Fail {
    fn from(e: tensorbits::Error) -> Fail {
        if e.is_device_failure() {
            Fail::Device(e.to_string())
        } else {
            Fail::Input(e.to_string())
        }
    }
}

#[derive(Parser)]
#[command(
    name = "tensorbits",
    version,
    about = "Bitwise tensor ops on .npy files, with tensorbits' exact semantics"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run an op on .npy inputs and write the result to a .npy file.
    Run(run::RunArgs),
    /// For each row of A, the k nearest rows of B (Hamming distance, or another pairwise sum).
    Knn(run::KnnArgs),
    /// For each row of A, every row of B within a threshold (FAISS's range_search layout).
    Range(run::RangeArgs),
    /// The exact merge of knn results over shards of B: each row's best k, ties by the lower index.
    Merge(run::MergeArgs),
    /// Binary codes of numbers: np.packbits(x > threshold, axis=-1) of a .npy file.
    Binarize(binary::BinarizeArgs),
    /// Print support tables (all ops, or one), in the layout of DirectML's pages.
    Ops {
        /// An op name in any spelling (xor, ELEMENT_WISE_BIT_XOR, BitwiseXor, bitwise_xor, ...).
        op: Option<String>,
    },
    /// List the CPU and the GPU adapters, with the features and limits that matter here.
    Devices,
    /// Measure an op's throughput and compare it with a plain copy of the same bytes.
    Bench(bench::BenchArgs),
}

fn main() -> ExitCode {
    quiet_wayland();
    // A bug must still end with one line, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        report(&format!("internal error{at}: {msg} (please report this)"));
    }));
    output::clean_up_on_signals();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => return usage_error(e),
    };
    let Some(command) = cli.command else {
        let names: Vec<String> = Cli::command()
            .get_subcommands()
            .map(|c| c.get_name().to_owned())
            .collect();
        report(&format!(
            "no subcommand given; expected one of: {} (see `tensorbits --help`)",
            names.join(", ")
        ));
        return ExitCode::from(2);
    };
    let result = std::panic::catch_unwind(|| match command {
        Command::Run(args) => run::run(args),
        Command::Knn(args) => run::knn(args),
        Command::Range(args) => run::range(args),
        Command::Merge(args) => run::merge(args),
        Command::Binarize(args) => binary::binarize(args),
        Command::Ops { op } => run::ops(op.as_deref()),
        Command::Devices => run::devices(),
        Command::Bench(args) => bench::bench(args),
    });
    match result {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(Fail::Input(m))) => {
            report(&m);
            ExitCode::from(2)
        }
        Ok(Err(Fail::Device(m))) => {
            report(&m);
            ExitCode::from(1)
        }
        Err(_) => ExitCode::from(1),
    }
}

/// The one `error:` line. A stderr that cannot be written (full, closed) loses the message, not the
/// exit status.
fn report(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "error: {}", one_line(msg));
}

/// libwayland, loaded by Mesa's Vulkan drivers, prints `error: XDG_RUNTIME_DIR is invalid or not set`
/// on headless machines, which would break the one-line error contract. It only checks that the
/// variable holds an absolute path.
#[allow(
    unsafe_code,
    reason = "set_var before any thread exists; see the SAFETY note"
)]
fn quiet_wayland() {
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        // SAFETY: called first thing in main, before this process starts any other thread, so no
        // other code can be reading the environment concurrently.
        unsafe { std::env::set_var("XDG_RUNTIME_DIR", std::env::temp_dir()) };
    }
}

/// One line, safe for a terminal: whitespace runs become one space, and other control characters
/// (a hostile file's header may hold escape sequences) are printed escaped, as `\u{1b}`.
fn one_line(s: &str) -> String {
    let words: Vec<String> = s
        .split_whitespace()
        .map(|w| {
            w.chars()
                .flat_map(|c| {
                    let escaped: Vec<char> = if c.is_control() {
                        c.escape_default().collect()
                    } else {
                        vec![c]
                    };
                    escaped
                })
                .collect()
        })
        .collect();
    words.join(" ")
}

/// clap's errors span several lines (the error, usage, a tip); the contract is one line. Help and
/// version requests go to stdout with status 0.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        };
    }
    let text = e.render().to_string();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:"))
        .filter(|l| {
            !(l.is_empty() || l.starts_with("tip:") || l.starts_with("For more information"))
        })
        .collect();
    let msg = lines.join(" ");
    let msg = msg.strip_prefix("error: ").unwrap_or(&msg);
    report(&format!("{msg} (see `tensorbits --help`)"));
    ExitCode::from(2)
}
