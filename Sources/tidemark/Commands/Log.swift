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
                  tidemark log HEAD...upstream    each side's snapshots since they parted
                  tidemark log -- templates/<id>  the snapshots that changed that item, with
                                                  its upstream version in each
                  tidemark log upstream -3 -- items/a items/b
                """)

        @ParentCommand var root: TidemarkCommand
        @OptionGroup var output: OutputOptions

        @Argument(help: "Start from this revision (default: HEAD; 'upstream' for the upstream-tracking ref), or show a range: A..B, A...B (either side, not both), ^A B, or X^! (X alone). After --: items (<collection>/<id>) or paths (from the current folder; :/<path> from the top) to show only the snapshots that changed them.")
        var revisions: [String] = []

        @Option(name: [.customShort("n", allowingJoined: true), .long],
                help: "Show at most this many snapshots (also -n3 and -3, as in git).")
        var maxCount: Int?

        @Flag(help: "Print a JSON array.")
        var json = false

        /// The items and paths after `--` (``TidemarkCommand/countingLikeGitLog(_:)`` passes each
        /// as `--log-path=<argument>`: argument-parser takes no operands after an array of them).
        @Option(name: .customLong("log-path"), help: .private)
        var items: [String] = []

        func validate() throws {
            // Here, not in run(): a usage error of log's shows log's usage.
            _ = try Self.range(revisions, limit: maxCount)
        }

        func run() async throws {
            let mirror = try root.openMirror()
            var revisions = revisions
            var items = items
            // As git: without `--`, a lone argument that is no revision but an item or a path
            // HEAD (or the last fetch) holds, or a file here, is what to follow (`log items/a1`).
            if revisions.count == 1, items.isEmpty, case let argument = revisions[0],
               case .unknownRevision? = await mirror.revisionError(argument) {
                let names = await mirror.namesHistory(argument, relativeTo: root.path("."))
                if names || FileManager.default.fileExists(atPath: root.path(argument)) {
                    items = revisions
                    revisions = []
                } else if !["~", "^", "@{", ".."].contains(where: { argument.contains($0) }) {
                    // An item deleted before HEAD has no file to tell it by: git's message, and the
                    // way. `HEAD~9` stays an unknown revision.
                    let shown = terminalSafe(argument)
                    throw CommandFailure.fatal("ambiguous argument '\(shown)': unknown revision or path not in the working tree; "
                                               + "give items or paths after --, as: tidemark log -- '\(shown)'")
                }
            }
            let (revision, limit, alone) = try Self.range(revisions, limit: maxCount)
            for warning in await mirror.revisionWarnings(revision.map { [$0] } ?? []) { writeStandardError("warning: \(warning)\n") }
            let snapshots = try await engine { () async throws(MirrorError) in
                try await mirror.log(from: revision, limit: limit, alone: alone, items: items, relativeTo: root.path("."))
            }
            if json { emitJSON(snapshots); return }
            // Nothing in HEAD's history, but the upstream snapshot's has it (an item new upstream,
            // not synced yet): say where.
            if snapshots.isEmpty, !items.isEmpty, revision == nil, limit != 0, !output.quiet,
               let fetched = try? await mirror.log(from: "HEAD..upstream", limit: 1, items: items, relativeTo: root.path(".")), !fetched.isEmpty {
                writeStandardError("No snapshot in HEAD's history changed \(items.count == 1 ? "it" : "them"); one in the upstream "
                                   + "snapshot's did: tidemark log upstream -- \(items.map { terminalSafe($0) }.joined(separator: " "))\n")
            }
            for snapshot in snapshots {
                let refs = snapshot.refs.isEmpty ? "" : " (" + snapshot.refs.joined(separator: ", ") + ")"
                // A commit of your own (no tidemark trailers) is headed as git heads it.
                let word = snapshot.isOwnCommit ? "commit" : "snapshot"
                emit(output.yellow("\(word) \(snapshot.commit)") + refs + "\n")
                emit("Date:      \(snapshot.date)\n")
                if let items = snapshot.items { emit("Items:     \(items)\n") }
                for mark in snapshot.collections {
                    // A Unix time is shown with its date too.
                    let date = mark.watermark.flatMap(Mirror.dateOfUnixTime).map { " (\($0))" } ?? ""
                    emit("Watermark: \(mark.name) \(mark.watermark ?? "none")\(date)\n")
                }
                for change in snapshot.changes ?? [] { emit(Self.line(change)) }
                emit("\n    \(snapshot.summary)\n\n")
            }
        }

        /// A change of `log -- <item or path>`: `Item:      changed items/a (version 2026-...)`,
        /// or for a path that is no item `Path:      deleted notes.txt`; names C-quoted as
        /// status quotes them.
        static func line(_ change: SnapshotChange) -> String {
            let name = Quoting.cQuoted(Array((change.item ?? change.path).utf8))
            let word = change.status == "A" ? "new" : change.status == "D" ? "deleted" : "changed"
            let version = change.version.map { change.status == "D" ? " (was version \($0))" : " (version \($0))" } ?? ""
            return (change.item == nil ? "Path:      " : "Item:      ") + "\(word) \(name)\(version)\n"
        }

        /// The revision (or `A..B` range) and count git's other forms of a range give: `^A B`
        /// (or `B ^A`) is `A..B`; `X^!` is X alone, without its parents (`alone`).
        static func range(_ arguments: [String], limit: Int?) throws -> (revision: String?, limit: Int?, alone: Bool) {
            let excluded = arguments.filter { $0.hasPrefix("^") && $0.count > 1 }
            let included = arguments.filter { !($0.hasPrefix("^") && $0.count > 1) }
            switch (excluded.count, included.count) {
            case (0, 0): return (nil, limit, false)
            case (0, 1) where included[0].hasSuffix("^!") && included[0].count > 2:
                return (String(included[0].dropLast(2)), limit.flatMap { $0 < 0 ? nil : min($0, 1) } ?? 1, true)
            case (0, 1): return (included[0], limit, false)
            case (1, 1): return (String(excluded[0].dropFirst()) + ".." + included[0], limit, false)
            // Only excluded commits: nothing, as git shows.
            case (1, 0): return (nil, 0, false)
            default:
                throw ValidationError("log takes one revision or one range (A..B, A...B, ^A B, X^!), not '\(arguments.joined(separator: " "))'; "
                                      + "give items or paths after --, as: tidemark log [<revision>] -- <item or path>...")
            }
        }
    }
}
