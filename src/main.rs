//! The `sheriff` binary: parse the command line and hand the product's commands to the library.
//! `sheriff bench` is the binary's own ([`bench`](mod@bench)): the benchmarks are no part of the product.

mod bench;

use std::process::ExitCode;

/// mimalloc rather than the system's allocator: a cycle builds and drops many small histograms
/// and group keys, and glibc's malloc and free took about a fifth of `sheriff bench evaluate`'s
/// samples under `perf`; with mimalloc `serve`'s warm cycle takes about 30% less time
/// (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Every command of the binary: the library's, then `bench`.
#[derive(Debug, clap::Subcommand)]
enum Command {
    #[command(flatten)]
    Product(sheriff::edge::cli::Command),
    /// Measure sheriff on generated data (use a release build).
    Bench {
        #[command(subcommand)]
        what: bench::BenchCommand,
    },
}

fn main() -> ExitCode {
    sheriff::edge::cli::main(async |command, settings| match command {
        // Boxed: the future of any of the product's commands is some 20 kB.
        Command::Product(command) => Box::pin(sheriff::edge::cli::run(command, settings)).await,
        Command::Bench { what } => bench::run(what).await,
    })
}
