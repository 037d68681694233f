import ArgumentParser
import Foundation
import Tidemark

extension TidemarkCommand {
    /// `tidemark diff [<rev>] [<rev>] [-- <item>...]`
    struct DiffCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "diff",
            abstract: "Show changes between snapshots, the upstream-tracking ref and the working tree.",
            discussion: """
                Forms:
                  tidemark diff                   HEAD against upstream (what sync would do)
                  tidemark diff <rev>             <rev> against the working tree
                  tidemark diff <rev> <rev>       the first against the second
                  tidemark diff <rev>..<rev>      the same
                  tidemark diff <rev>...<rev>     their merge base against the second

                The name upstream means refs/tidemark/upstream (also upstream~1,
                upstream@{1}); any git revision works (HEAD~2, main@{1}). Limit to items
                with: -- templates/<id> ...

                Examples:
                  tidemark diff
                  tidemark diff --stat HEAD~1 HEAD
                  tidemark diff --stat --json
                  tidemark diff HEAD -- templates/3f1c2a9e-8b1d-4c55-9a0e-1d2b3c4d5e01
                  tidemark diff --exit-code --name-status upstream
                  tidemark diff --name-only HEAD~1 HEAD
                """)

        @ParentCommand var root: TidemarkCommand
        @OptionGroup var output: OutputOptions

        @Flag(help: "Show a diffstat instead of the patch.")
        var stat = false

        @Flag(help: "Show only the status letter and path of changed files.")
        var nameStatus = false

        @Flag(help: "Show only the paths of changed files.")
        var nameOnly = false

        @Flag(help: "Show lines added and removed per file, tab-separated, as git's --numstat ('-' for a binary file).")
        var numstat = false

        @Flag(help: "Show only the last line of --stat: files changed, insertions, deletions.")
        var shortstat = false

        @Flag(help: "Exit with 1 when there are differences.")
        var exitCode = false

        @Flag(help: "Print a JSON report (files with their item, status and line counts).")
        var json = false

        @Argument(help: "The old side (default: HEAD).")
        var from: String?

        @Argument(help: "The new side (default: upstream when no revision is given, else the working tree).")
        var to: String?

        /// Operands after the first two, before `--` (``TidemarkCommand/pathsAfterTwoRevisions(_:)``).
        @Option(name: .customLong("path-operand"), help: .private)
        var pathOperands: [String] = []

        @Argument(parsing: .postTerminator, help: "After --: items (<collection>/<id>) or paths (from the current folder; :/<path> from the top) to limit the diff to.")
        var items: [String] = []

        func validate() throws {
            if nameOnly && nameStatus { throw ValidationError("options '--name-only' and '--name-status' cannot be used together") }
            // git prints them one after the other; one rendering is made here.
            if [numstat, stat, shortstat].filter({ $0 }).count > 1 && !nameOnly && !nameStatus {
                throw ValidationError("--numstat, --stat and --shortstat together are not supported: give one")
            }
        }

        func run() async throws {
            var revisions = [from, to].compactMap { $0 } + pathOperands
            var items = items
            // As git: the name formats win over the counts (--name-status over --stat).
            let format: DiffFormat = nameStatus ? .nameStatus : nameOnly ? .nameOnly : numstat ? .numstat : stat ? .stat
                : shortstat ? .shortstat : .patch
            let mirror = try root.openMirror()
            // As git: without `--`, arguments from the first that is no revision on are paths when
            // each is a file or folder there, or looks like a pathspec (`tidemark diff items/a.json`,
            // `diff HEAD items/`, `diff HEAD 'items/*.json'`, `diff HEAD ':!items/a.json'`).
            var firstPath: Int?
            for (index, revision) in revisions.enumerated() where await !mirror.isRevision(revision) { firstPath = index; break }
            if let first = firstPath {
                let isPath = { (argument: String) in
                    FileManager.default.fileExists(atPath: root.path(argument)) || Self.looksLikePathspec(argument)
                }
                if revisions[first...].allSatisfy(isPath) {
                    items = Array(revisions[first...]) + items
                    revisions.removeSubrange(first...)
                } else if self.items.isEmpty, let unknown = revisions[first...].first(where: { !isPath($0) }),
                          case .unknownRevision? = await mirror.revisionError(unknown) {
                    // As git: neither a revision nor a path (an item new upstream has no file yet).
                    // After `--` the arguments before it are revisions, and the error is the engine's.
                    // The command is spelled out only for arguments that all read as paths.
                    var named = !revisions[first...].contains { $0.contains("~") || $0.contains("^") || $0.contains("@{") || $0.contains("..") }
                    for argument in revisions[first...] where await mirror.isRevision(argument) { named = false }
                    let suggested = named ? (["tidemark diff"] + revisions[..<first] + ["--"] + revisions[first...]).joined(separator: " ")
                        : "tidemark diff [<revision>...] -- [<path>...]"
                    throw CommandFailure.fatal("ambiguous argument '\(unknown)': unknown revision or path not in the working tree; "
                                               + "give items or paths after --, as: \(suggested)")
                }
            }
            if revisions.count > 2 {
                if firstPath == nil {
                    // Three snapshots: git's combined diff, which libgit2 does not make.
                    throw CommandFailure.fatal("diff takes at most two revisions, and '\(revisions[2])' is a third (git's combined diff "
                                               + "of several is not supported); compare two at a time, or give paths after --")
                }
                // As git: "ambiguous argument", one that is neither.
                let unknown = revisions.dropFirst(2).first { !FileManager.default.fileExists(atPath: root.path($0)) } ?? revisions[2]
                throw CommandFailure.fatal("ambiguous argument '\(unknown)': neither a revision nor a file or folder here; give items "
                                           + "or paths after --, as: tidemark diff \(revisions[0]) \(revisions[1]) -- \(unknown)")
            }
            for warning in await mirror.revisionWarnings(revisions) { writeStandardError("warning: \(warning)\n") }
            let result = try await engine { () async throws(MirrorError) in
                // Only what is shown is worked out: `--quiet` renders nothing, and the items and
                // line counts of every file are read for JSON alone (a `--stat` counts its lines).
                try await mirror.diff(revisions, items: items, relativeTo: root.path("."),
                                      format: json || output.quiet ? nil : format, detail: json ? .all : [])
            }
            if json {
                emitJSON(DiffJSON(result))
            } else if !output.quiet {
                emit(format == .patch && output.useColor ? Self.colored(patch: result.text, output) : result.text)
            }
            // As git's `diff --quiet`: nothing printed, and the exit status tells.
            if (exitCode || output.quiet) && !result.entries.isEmpty { throw CommandFailure.silent(1) }
        }

        /// Whether `argument` reads as a pathspec though no file has its name, as git's
        /// `verify_filename` takes one: a glob character, or magic (`:!x`, `:(glob)x`, `:/x`).
        static func looksLikePathspec(_ argument: String) -> Bool {
            argument.hasPrefix(":") || argument.contains(where: { "*?[\\".contains($0) })
        }

        /// `patch` coloured as `git diff --color` colours one: each file's header lines bold, the
        /// `@@ ... @@` of a hunk header cyan, removed lines red, added lines green.
        static func colored(patch: String, _ output: OutputOptions) -> String {
            var inHeader = false
            return patch.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
                let text = String(line)
                if text.hasPrefix("diff --git ") { inHeader = true }
                if text.hasPrefix("@@") {
                    inHeader = false
                    guard let end = text.range(of: "@@", range: text.index(text.startIndex, offsetBy: 2)..<text.endIndex) else {
                        return output.paint(text, "36")
                    }
                    return output.paint(String(text[..<end.upperBound]), "36") + text[end.upperBound...]
                }
                // A name's TAB (`+++ b/a b<TAB>`) after the colour's end, as git writes it.
                if inHeader { return text.hasSuffix("\t") ? output.paint(String(text.dropLast()), "1") + "\t" : output.paint(text, "1") }
                if text.hasPrefix("+") { return output.green(text) }
                if text.hasPrefix("-") { return output.red(text) }
                return text
            }.joined(separator: "\n")
        }
    }
}
