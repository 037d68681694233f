import ArgumentParser
import Foundation
import Tidemark

extension TidemarkCommand {
    /// `tidemark rollback <rev>`
    struct Rollback: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Restore an earlier snapshot.",
            discussion: """
                By default the snapshot is restored as a new commit (history kept); --hard
                resets the branch to it (the reflog keeps the old tip: main@{1}). The
                upstream-tracking ref is untouched: 'tidemark status' then shows what is
                behind, and the next sync re-uses objects already stored instead of
                downloading them again.

                Examples:
                  tidemark rollback HEAD~1
                  tidemark rollback main@{2} --hard
                  tidemark rollback 1a2b3c4 --force
                """)

        @ParentCommand var root: TidemarkCommand
        @OptionGroup var output: OutputOptions

        @Argument(help: "The snapshot to restore (HEAD~1, main@{2}, a commit id).")
        var revision: String

        @Flag(help: "Reset the branch instead of adding a commit.")
        var hard = false

        @Flag(help: "Overwrite local edits, and undo commits of your own on the branch.")
        var force = false

        @Flag(help: "Print a JSON report on stdout.")
        var json = false

        func run() async throws {
            let mirror = try root.openMirror()
            for warning in await mirror.revisionWarnings([revision]) { writeStandardError("warning: \(warning)\n") }
            let report = try await engine(on: mirror, output) { () async throws(MirrorError) in
                try await mirror.rollback(to: revision, hard: hard, force: force)
            }
            if json {
                emitJSON(RollbackJSON(report, hard: hard))
            } else if !output.quiet {
                // A commit of your own (no tidemark trailers) is called so, as `log` heads it.
                let word = (try? await mirror.log(from: report.restored.hex, limit: 1).first?.isOwnCommit) == true ? "commit" : "snapshot"
                if report.current == report.previous {
                    emit("Already at \(word) \(report.restored.short())\(hard ? "" : "'s contents"); nothing to do.\n")
                } else {
                    let files = (report.paths.count == 1 ? "1 file changed" : "\(report.paths.count) files changed")
                        + SnapshotMessage.undid(report.undoneOwnPaths.count)
                    emit(hard ? "Reset the branch to \(word) \(report.restored.short()) (\(files)).\n"
                              : "Restored \(word) \(report.restored.short()) (\(files)); now at \(report.current.short()).\n")
                    if !report.droppedOwnCommits.isEmpty {
                        emit("Took your own commits off the branch (--force; 'git reset --hard ORIG_HEAD' puts them back):\n"
                             + report.droppedOwnCommits.map { "\t\(terminalSafe($0))\n" }.joined())
                    }
                }
                tellOverwrittenEdits(report.overwrittenEdits)
            }
        }
    }
}
