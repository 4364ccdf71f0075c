//! The `sheriff` binary: parse the command line, hand over to the library.

fn main() -> std::process::ExitCode {
    sheriff::cli::main()
}
