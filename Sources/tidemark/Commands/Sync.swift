import ArgumentParser
import Foundation
import Tidemark

extension TidemarkCommand {
    /// `tidemark sync`
    struct Sync: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Fetch, then move the branch to the new snapshot and update the working tree.",
            // Written out: with all its flags the generated line was cut to `tidemark sync <options>`.
            usage: "tidemark sync [--dry-run] [--force] [--offline] [--if-stale [<duration>]] [--full] [--allow-mass-delete] "
                + "[--jobs <jobs>] [--json] [-q] [-v] [--[no-]progress] [--[no-]color]",
            discussion: """
                Refuses (exit 1, nothing changed) when items it would overwrite are edited
                locally, unless --force. --if-stale skips everything when the last sync is
                younger than the duration (e.g. 90, 30s, 15m, 6h, 2d, 1w), no fetched snapshot
                waits to be applied and the last fetch failed no item; without a duration (or
                with auto) it uses tidemark.refreshInterval.

                Examples:
                  tidemark sync
                  tidemark sync --dry-run
                  tidemark sync --if-stale 6h
                  git config tidemark.refreshInterval 6h && tidemark sync --if-stale
                  tidemark sync --force --json
                """)

        @ParentCommand var root: TidemarkCommand
        @OptionGroup var output: OutputOptions
        @OptionGroup var transfer: TransferOptions

        @Flag(help: "Print the plan and the number of requests it would make; change nothing.")
        var dryRun = false

        @Option(help: ArgumentHelp("Do nothing when the last sync is younger than this (alone: tidemark.refreshInterval).", valueName: "duration"))
        var ifStale: String?

        @Flag(help: "Overwrite local edits of the items the sync changes, and replace commits of your own that the sync would undo (the history keeps them); other edits stay ('git restore .' drops them).")
        var force = false

        @Flag(help: "Do not contact upstream; apply what the last fetch stored.")
        var offline = false

        @OptionGroup var fetchOptions: FetchFlags

        @Flag(help: "Print a JSON report on stdout.")
        var json = false

        func validate() throws {
            // Options of the fetch that --offline leaves out would be passed over in silence.
            if offline, let option = fetchOptions.full ? "--full" : fetchOptions.jobs != nil ? "--jobs" : nil {
                throw ValidationError("\(option) is for the fetch, which --offline does not make: drop one of them")
            }
            if let ifStale, ifStale != "auto", DurationText.seconds(ifStale) == nil {
                throw ValidationError("--if-stale takes a duration like 30s, 15m, 6h or 1d (or auto), not '\(ifStale)'")
            }
        }

        func run() async throws {
            let mirror = try root.openMirror()
            var staleSeconds = ifStale.flatMap(DurationText.seconds)
            if ifStale == "auto" {
                guard let interval = mirror.settings.refreshInterval else {
                    throw CommandFailure.fatal("--if-stale without a duration needs tidemark.refreshInterval (git config tidemark.refreshInterval 6h)")
                }
                guard let seconds = DurationText.seconds(interval) else {
                    throw CommandFailure.fatal(mirror.settings.problems["tidemark.refreshInterval"] ?? "bad tidemark.refreshInterval")
                }
                staleSeconds = seconds
            }
            let options = SyncOptions(dryRun: dryRun, ifStaleSeconds: staleSeconds, force: force, offline: offline,
                                      fetch: fetchOptions.options)
            if !offline { warnIfCredentialsInClear(mirror.settings.upstreamConfiguration) }
            let reporter = transfer.reporter(output)
            defer { reporter?.finish() }
            let interruption = DownloadInterruption()
            await mirror.report(to: reporter, interruption: interruption)
            let report: SyncReport
            do {
                report = try await engine(on: mirror, output, settle: { reporter?.finish() }) { () async throws(MirrorError) in
                    do throws(MirrorError) {
                        return try await interruption.run { () async throws(MirrorError) in try await mirror.sync(options) }
                    } catch .incompleteFetch(let fetch), .interrupted(let fetch) {
                        // Reported below, then exits 128 or ends by the signal: the JSON still names
                        // the failed items.
                        return SyncReport(incompleteFetch: fetch, branchAt: (try? await mirror.branchTip()) ?? nil)
                    } catch .incompleteSync(let report) {
                        // The rest applied: told as a sync, then the failures, exiting 128.
                        return report
                    }
                }
            } catch {
                throw dryRun ? error : await notingFetchFailures(error, of: mirror)
            }
            if transfer.verbose { tellFolderListing(report.fetch) }
            tellVanished(report.fetch)
            for warning in report.warnings { writeStandardError("warning: \(terminalSafe(warning))\n") }
            if json { emitJSON(SyncJSON(report)) }
            if report.outcome == .interrupted, let fetch = report.fetch {
                writeStandardError(MirrorError.interrupted(fetch).description
                                   + "\nThe branch is unchanged: 'tidemark sync --offline' applies what was stored.\n")
            }
            interruption.endIfInterrupted(report.outcome == .interrupted)
            if !report.droppedMerge.isEmpty, report.outcome != .planned {
                // Said even with -q and --json: the other side of the merge is not in the branch.
                writeStandardError("warning: ended the merge of \(report.droppedMerge.joined(separator: " ")) as 'git reset --hard' does: "
                                   + "what it merges holds commits of someone's own, so it is not recorded as merged (merge it "
                                   + "again and resolve the conflict by hand, then 'git commit', to keep them)\n")
            }
            if report.outcome == .incompleteFetch {
                if !json, !output.quiet, report.current != report.previous { tellUpdated(report) }
                throw CommandFailure.fatal(MirrorError.incompleteSync(report).description)
            }
            guard !json, !output.quiet else { return }
            switch report.outcome {
            case .incompleteFetch, .interrupted:
                break
            case .fresh(let last):
                emit("Cache is fresh (last sync \(relative(last))); nothing to do.\n")
            case .upToDate:
                emit("Already up to date.\n")
                tellOverwrittenEdits(report.overwrittenEdits)
            case .planned:
                if let interrupted = report.interruptedSync {
                    emit("An interrupted run left a \(interrupted.command) unfinished (\(interrupted.branch) \(interrupted.range)); the sync finishes it first.\n")
                }
                let undone = report.undoneOwnPaths.isEmpty ? "" : "; would undo your own commits in \(report.undoneOwnPaths.count) file\(report.undoneOwnPaths.count == 1 ? "" : "s")"
                emit("Would apply: \(report.counts.summary)\(undone)\n")
                let undoneOwn = Set(report.undoneOwnPaths)
                for path in report.paths { emit("\t\(path)\(undoneOwn.contains(path) ? " (your commit's change undone)" : "")\n") }
                if offline {
                    emit("Requests: none (the last fetch's snapshot is applied as it is).\n")
                } else {
                    emit("Requests: \(report.listingRequests) to list upstream (made for this plan; the sync makes them again), "
                         + "plus \(report.plannedDownloads) item download\(report.plannedDownloads == 1 ? "" : "s")"
                         + (report.plannedBodiesInListing == 0 ? ".\n"
                            : report.plannedBodiesInListing == 1 ? " (1 item's body comes with the listing).\n"
                            : " (\(report.plannedBodiesInListing) items' bodies come with the listing).\n"))
                }
                if !report.overwrittenEdits.isEmpty {
                    emit("Would overwrite your local changes (--force):\n" + report.overwrittenEdits.map { "\t\($0)\n" }.joined())
                }
                if !report.finishedMerge.isEmpty {
                    emit("Would finish the merge of \(report.finishedMerge.joined(separator: " ")) with upstream's snapshot (--force; "
                         + "both sides its parents).\n")
                }
                if !report.droppedMerge.isEmpty {
                    emit("Would end the merge of \(report.droppedMerge.joined(separator: " ")) as 'git reset --hard' does (--force): "
                         + "it holds commits of someone's own, not recorded as merged.\n")
                }
            case .updated:
                tellUpdated(report)
            }
        }
    }
}

/// What a sync that moved the branch says: the range, what it applied, and what it wrote over.
func tellUpdated(_ report: SyncReport) {
    emit("Updating \(report.previous?.short() ?? "(none)")..\(report.current?.short() ?? "-")\n")
    // With --force over commits of the user's own, files change that upstream did not.
    let undone = report.undoneOwnPaths.count
    let summary = (undone > 0 && report.counts.total == 0 ? "no changes upstream" : report.counts.summary)
        + SnapshotMessage.undid(undone)
    emit("Synced: \(summary) (\(report.fetch?.downloaded ?? 0) downloaded)\n")
    if !report.finishedMerge.isEmpty {
        emit("Finished the merge of \(report.finishedMerge.joined(separator: " ")) with upstream's snapshot (both sides its parents).\n")
    }
    tellOverwrittenEdits(report.overwrittenEdits)
}

/// The local changes a forced sync or rollback wrote over, named after its summary.
func tellOverwrittenEdits(_ names: [String]) {
    guard !names.isEmpty else { return }
    emit("Overwrote your local changes (--force):\n" + names.map { "\t\($0)\n" }.joined())
}

/// A sync's refusal (local edits in the way of what its fetch brought) with the items that
/// fetch could not download, which the refusal alone said nothing of; other failures as they are.
private func notingFetchFailures(_ failure: CommandFailure, of mirror: Mirror) async -> CommandFailure {
    guard case .refused(let refusal) = failure else { return failure }
    let failures = await mirror.pendingFetchFailures()
    guard !failures.isEmpty else { return failure }
    let one = failures.count == 1
    return .refused(refusal + "\n(The fetch could not download \(failures.count) item\(one ? "" : "s") either: 'tidemark status' "
                    + "names \(one ? "it" : "them"), and the next sync asks for \(one ? "it" : "them") again.)")
}
