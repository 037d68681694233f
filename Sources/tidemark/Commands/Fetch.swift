import ArgumentParser
import Foundation
import Tidemark

extension TidemarkCommand {
    /// `tidemark fetch`
    struct Fetch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List upstream and download the items that changed, onto refs/tidemark/upstream.",
            discussion: """
                Touches neither the branch nor the working tree. Afterwards 'tidemark status'
                tells what is behind and 'git diff main tidemark/upstream' shows it.

                Examples:
                  tidemark fetch
                  tidemark fetch --json | jq .behind
                  tidemark fetch -v                 # log every HTTP request (secrets redacted)
                """)

        @ParentCommand var root: TidemarkCommand
        @OptionGroup var output: OutputOptions
        @OptionGroup var transfer: TransferOptions

        @OptionGroup var fetchOptions: FetchFlags

        @Flag(help: "Print a JSON report on stdout.")
        var json = false

        func run() async throws {
            let mirror = try root.openMirror()
            warnIfCredentialsInClear(mirror.settings.upstreamConfiguration)
            let reporter = transfer.reporter(output)
            defer { reporter?.finish() }
            let interruption = DownloadInterruption()
            await mirror.report(to: reporter, interruption: interruption)
            let options = fetchOptions.options
            let report = try await engine(on: mirror, output, settle: { reporter?.finish() }) { () async throws(MirrorError) in
                do throws(MirrorError) {
                    return try await interruption.run { () async throws(MirrorError) in try await mirror.fetch(options) }
                } catch .incompleteFetch(let report) {
                    return report  // reported below, then exits 128
                } catch .interrupted(let report) {
                    return report  // reported below, then ends by the signal
                }
            }
            if transfer.verbose { tellFolderListing(report) }
            tellVanished(report)
            if json {
                emitJSON(FetchJSON(report))
            } else if !output.quiet {
                emit(Fetch.summary(report) + "\n")
            }
            if report.interrupted { writeStandardError(MirrorError.interrupted(report).description + "\n") }
            interruption.endIfInterrupted(report.interrupted)
            if !report.failures.isEmpty { throw CommandFailure(.incompleteFetch(report)) }
        }

        /// One line: what the fetch found and downloaded.
        static func summary(_ report: FetchReport) -> String {
            let moved = !report.updated ? "tidemark/upstream unchanged"
                : report.previous == nil ? "tidemark/upstream made at \(report.current?.short() ?? "-")"
                : "\(report.previous!.short())..\(report.current?.short() ?? "-")  tidemark/upstream"
            let dropped = report.collections.filter(\.dropped).map { "; collection '\($0.name)' dropped: not in tidemark.collection" }
            return "Listed \(report.listed) item\(report.listed == 1 ? "" : "s"), downloaded \(report.downloaded); behind: \(report.behind.summary)"
                + dropped.joined() + " (\(moved))"
        }
    }
}
