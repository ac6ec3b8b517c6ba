//! The `nightshift` binary: parse the command line, run the command, print, exit.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
