import ArgumentParser
import Foundation
import Tidemark

/// Flags of the commands that talk to upstream (clone, fetch, sync): progress and request logs.
struct TransferOptions: ParsableArguments {
    @Flag(inversion: .prefixedNo, help: "Show a progress line on stderr (default: when stderr is a terminal and not -q).")
    var progress: Bool?

    @Flag(name: .shortAndLong, help: "Print each HTTP request on stderr: method, URL (secrets redacted), status, bytes, time.")
    var verbose = false

    /// The progress line for this run, or nil when neither progress nor request logs are wanted.
    /// An explicit `--progress` wins over `-q`, as in git.
    func reporter(_ output: OutputOptions) -> ProgressLine? {
        let draw = progress ?? (!output.quiet && isatty(STDERR_FILENO) == 1)
        guard draw || verbose else { return nil }
        return ProgressLine(draw: draw, verbose: verbose)
    }
}

extension Mirror {
    /// Sends this mirror's progress events and HTTP requests to `reporter`.
    func report(to reporter: ProgressLine?) async {
        guard let reporter else { return }
        setProgressHandler { reporter.handle($0) }
        setRequestObserver { reporter.handle($0) }
    }
}
