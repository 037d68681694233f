import ArgumentParser
import Foundation
import Tidemark

extension TidemarkCommand {
    /// `tidemark log`
    struct Log: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show snapshots with their change counts and watermarks.",
            discussion: """
                Follows first parents from HEAD (or the given revision), newest first. The
                counts and watermarks come from each snapshot's trailers, which plain git
                shows too (git log --format='%h %s%n%(trailers)').

                Examples:
                  tidemark log
                  tidemark log -3
                  tidemark log upstream --json
                  tidemark log HEAD..upstream     snapshots fetched, not yet synced
                """)

        @ParentCommand var root: TidemarkCommand
        @OptionGroup var output: OutputOptions

        @Argument(help: "Start from this revision (default: HEAD; 'upstream' for the upstream-tracking ref), or show a range A..B.")
        var revision: String?

        @Option(name: [.customShort("n", allowingJoined: true), .long],
                help: "Show at most this many snapshots (also -n3 and -3, as in git).")
        var maxCount: Int?

        @Flag(help: "Print a JSON array.")
        var json = false

        func run() async throws {
            let mirror = try root.openMirror()
            for warning in await mirror.revisionWarnings(revision.map { [$0] } ?? []) { writeStandardError("warning: \(warning)\n") }
            let snapshots = try await engine { () async throws(MirrorError) in
                try await mirror.log(from: revision, limit: maxCount)
            }
            if json { emitJSON(snapshots); return }
            for snapshot in snapshots {
                let refs = snapshot.refs.isEmpty ? "" : " (" + snapshot.refs.joined(separator: ", ") + ")"
                emit(output.yellow("snapshot \(snapshot.commit)") + refs + "\n")
                emit("Date:      \(snapshot.date)\n")
                if let items = snapshot.items { emit("Items:     \(items)\n") }
                for mark in snapshot.collections {
                    emit("Watermark: \(mark.name) \(mark.watermark)\n")
                }
                emit("\n    \(snapshot.summary)\n\n")
            }
        }
    }
}
