import ArgumentParser
import Foundation
import Tidemark

extension TidemarkCommand {
    /// `tidemark status`
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show which cached items are behind upstream and which are edited locally.",
            discussion: """
                Never contacts upstream: it compares HEAD with refs/tidemark/upstream (as of
                the last fetch) and the working tree with HEAD.

                --porcelain prints one line per item, 'XY <collection>/<id>':
                  X (upstream side): M changed (upstream, or by a commit of your own a sync
                                     would undo), A new, D deleted upstream, ' ' same
                  Y (local side):    M edited in the working tree, D deleted, ? an untracked
                                     file where a new item goes, U unmerged (a conflict
                                     git left), ' ' same
                Lines are sorted by collection and id. Then 'XY <path>' per changed path that
                is not an item: ' M' an edited manifest, 'D ' a file a commit of your own
                added, which a sync deletes. Unusual ids are quoted like git quotes paths; -z
                ends lines with NUL and quotes nothing but an id holding a NUL byte.

                Examples:
                  tidemark status
                  tidemark status --porcelain
                  tidemark status --json | jq '.items[] | select(.upstream == "changed") | .id'
                  tidemark status --exit-code >/dev/null || tidemark sync
                """)

        @ParentCommand var root: TidemarkCommand
        @OptionGroup var output: OutputOptions

        @Flag(help: "Stable, machine-readable output.")
        var porcelain = false

        @Flag(name: .customShort("z"), help: "With --porcelain: end lines with NUL, do not quote.")
        var nulTerminated = false

        @Flag(help: "Print a JSON report.")
        var json = false

        @Flag(help: "Exit with 1 when anything differs, or the last fetch failed, was refused or could not download some items.")
        var exitCode = false

        func validate() throws {
            // One format at a time: JSON won silently, and a script asking for both got the other.
            if json && (porcelain || nulTerminated) {
                throw ValidationError("--json cannot be used together with \(porcelain ? "--porcelain" : "-z"): choose one format")
            }
        }

        func run() async throws {
            let mirror = try root.openMirror()
            let report = try await engine { () async throws(MirrorError) in try await mirror.status() }
            if json {
                emitJSON(StatusJSON(report))
            } else if porcelain || nulTerminated {
                emit(StatusFormatter.porcelain(report, nulTerminated: nulTerminated))
            } else {
                emit(StatusFormatter.human(report, output: output))
            }
            if exitCode && !report.isClean { throw CommandFailure.silent(1) }
        }
    }
}
