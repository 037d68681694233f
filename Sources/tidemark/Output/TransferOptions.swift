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

/// `--jobs N` outside ``MirrorSettings/jobsRange`` is a usage error (exit 129).
func validateJobs(_ jobs: Int?) throws {
    if let message = MirrorSettings.jobsProblem(jobs) { throw ValidationError(message) }
}

/// Flags of the commands that fetch (fetch, sync): the mass-deletion guard and downloads at once.
struct FetchFlags: ParsableArguments {
    @Flag(help: "Accept a listing that deletes all items, or more than half of a collection.")
    var allowMassDelete = false

    @Option(help: "Requests at once for this run: item downloads, and DocuSign listing pages (at most 8) (1-256; default: tidemark.jobs).")
    var jobs: Int?

    @Flag(help: "List every item, not only those changed since the last sync (sinceParam), to find items deleted upstream; scan a watched folder.")
    var full = false

    func validate() throws { try validateJobs(jobs) }

    /// The engine's options for this run.
    var options: FetchOptions { FetchOptions(allowMassDelete: allowMassDelete, jobs: jobs, fullListing: full) }
}

/// Warns on stderr when `upstream`'s credentials would go over plain http to a host other than
/// this machine (``UpstreamConfiguration/hostGettingCredentialsInClear``: a mistyped `http://` for
/// `https://`). Sent all the same, as curl sends them: a server on a trusted network may speak
/// only http.
func warnIfCredentialsInClear(_ upstream: UpstreamConfiguration) {
    guard let host = upstream.hostGettingCredentialsInClear else { return }
    writeStandardError("warning: the credentials go to \(host) over plain http, unencrypted; use https:// unless that network is trusted\n")
}
