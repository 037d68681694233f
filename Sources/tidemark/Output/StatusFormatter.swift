import Foundation
import Tidemark

/// Renders `status` for people and for scripts.
enum StatusFormatter {
    /// `XY <collection>/<id>` per item; C-quoted unless `nulTerminated`.
    static func porcelain(_ report: StatusReport, nulTerminated: Bool) -> String {
        var out = ""
        for item in report.items {
            // With -z nothing is quoted, but a NUL in an id would end the record early and let
            // the rest of the id pose as another line: such a name is quoted there too.
            let shown = nulTerminated && !item.id.bytes.contains(0) ? item.collection + "/" + item.id.description : quotedName(item)
            out += "\(item.upstream.rawValue)\(item.local.rawValue) \(shown)" + (nulTerminated ? "\0" : "\n")
        }
        // Then the other changed paths (an edited manifest) by their working-tree path, as git shows them.
        for other in report.otherPaths {
            let shown = nulTerminated ? other.path : Quoting.cQuoted(Array(other.path.utf8))
            out += "\(other.upstream.rawValue)\(other.local.rawValue) \(shown)" + (nulTerminated ? "\0" : "\n")
        }
        return out
    }

    /// `collection/id`, quoted whole when unusual, as git quotes a path (`"templates/caf\303\251"`).
    static func quotedName(_ item: ItemStatus) -> String {
        Quoting.cQuoted(Array(item.collection.utf8) + [UInt8(ascii: "/")] + item.id.bytes)
    }

    /// git-like status text.
    /// `lines`, a tab before each, at most ten, then how many more.
    private static func indented(_ lines: [String], style: (String) -> String = { $0 }) -> String {
        lines.prefix(10).map { "\t" + style($0) + "\n" }.joined() + (lines.count > 10 ? "\t... and \(lines.count - 10) more\n" : "")
    }

    static func human(_ report: StatusReport, output: OutputOptions) -> String {
        var out = report.branch == "HEAD"
            ? "HEAD detached at \(report.head?.short() ?? "?") (sync and rollback need a branch checked out)\n"
            : "On branch \(Mirror.shortBranchName(report.branch))\n"
        if let interrupted = report.interruptedSync, let pid = interrupted.runningPid {
            out += "A \(interrupted.command) is running (pid \(pid), \(interrupted.range)); until it ends, the files it writes show as edited.\n"
        } else if let interrupted = report.interruptedSync {
            out += "An interrupted run left a \(interrupted.command) unfinished (\(interrupted.range)); "
                + (interrupted.command == "rollback"
                    ? "until 'tidemark fetch' finishes it (a sync would finish it, then sync past it), the files it wrote show as edited.\n"
                    : "until 'tidemark sync' finishes it, the files it wrote show as edited.\n")
        }
        if let lost = report.lostBranch {
            out += "\n" + MirrorError.lostBranch(branch: Mirror.shortBranchName(report.branch), lost).description + "\n"
        } else if report.head == nil {
            // A new branch (`git checkout --orphan`), or a clone whose first fetch stored some items.
            let waiting = report.upstream == nil ? 0 : report.behind.total
            out += "\nNo snapshots yet (run 'tidemark sync')"
                + (waiting == 0 ? "" : ": \(waiting) item\(waiting == 1 ? " waits" : "s wait") on 'tidemark/upstream'") + ".\n"
        }
        guard report.head != nil else {
            if let left = report.fetchInterrupted {
                out += "The last fetch was interrupted (\(terminalSafe(left))); 'tidemark sync' gets the rest.\n"
            }
            // A clone whose downloads partly failed kept the rest: the sync downloads these.
            if !report.fetchFailures.isEmpty {
                out += "The last fetch could not download \(report.fetchFailures.count) item\(report.fetchFailures.count == 1 ? "" : "s"); "
                    + "'tidemark sync' tries \(report.fetchFailures.count == 1 ? "it" : "them") again:\n" + indented(report.fetchFailures, style: output.red)
            }
            return out
        }
        if report.operationInProgress == "bisect" {
            out += "You are bisecting ('git bisect reset' ends it); a sync refuses to run until it is finished\n"
        } else if let operation = report.operationInProgress {
            out += "You have an unfinished \(operation) ('git \(operation) --abort' ends it); a sync refuses to run until it is finished"
            if operation == "merge" {
                out += report.mergeOfSnapshots
                    ? " (it merges another clone's snapshots: 'tidemark sync --force' finishes it with upstream's snapshot)\n"
                    : " (what it merges holds commits of someone's own: resolve it by hand and 'git commit' to keep them; "
                        + "'tidemark sync --force' drops them, as 'git reset --hard' does)\n"
            } else {
                out += "\n"
            }
        }
        if report.unrelatedBranch {
            out += "Your branch holds no snapshot of this mirror (its history is not the mirror's); a sync refuses it: "
                + "switch to the mirror's branch ('git branch --contains tidemark/upstream' names it)\n"
        } else if !report.ownCommits.isEmpty {
            out += "Your branch has \(report.ownCommits.count) commit\(report.ownCommits.count == 1 ? "" : "s") of your own that a sync would undo:\n"
                + report.ownCommits.prefix(10).map { "\t\($0)\n" }.joined()
                + "  (revert them, or 'tidemark sync --force' replaces them with upstream's version)\n"
        }
        // A fetch that stored some items but not all (or was cut short) is not a complete one.
        // One that failed since is not the one timed (it said "last fetch 2 seconds ago" of the
        // fetch before the one that had just failed).
        let partlyFetched = !report.fetchFailures.isEmpty || report.fetchInterrupted != nil
        let kind = partlyFetched ? "complete " : report.fetchFailed != nil ? "successful " : ""
        let fetched = report.lastFetch.map { "last \(kind)fetch \(relative($0))" }
            ?? (kind.isEmpty ? "never fetched" : "no \(kind)fetch yet")
        let behind = report.behind
        // Paths that are not items, which a sync changes (commits of the user's own).
        let otherBehind = report.otherPaths.filter { $0.upstream != .unchanged }
        if report.upstream == nil {
            out += "No upstream-tracking snapshot yet (\(fetched)); run 'tidemark fetch'.\n"
        } else if behind.total == 0 && otherBehind.isEmpty {
            out += "Your cache is up to date with 'tidemark/upstream' (\(fetched)).\n"
        } else {
            let others = otherBehind.isEmpty ? "" : " and \(otherBehind.count) other path\(otherBehind.count == 1 ? "" : "s")"
            out += "Your cache is behind 'tidemark/upstream' by \(behind.total) item\(behind.total == 1 ? "" : "s") (\(behind.summary))\(others); \(fetched).\n"
            out += "  (use \"tidemark sync\" to update the cache, \"tidemark diff\" to see the changes)\n"
        }
        if !report.fetchFailures.isEmpty {
            let one = report.fetchFailures.count == 1
            // A fetch that failed since (stored nothing) leaves the record of the one before.
            let which = report.fetchFailed == nil ? "The last fetch" : "The last fetch that stored anything"
            out += "\(which) could not download \(report.fetchFailures.count) item\(one ? "" : "s"), which may be behind too "
                + "(deletions upstream in \(one ? "its collection wait" : "their collections wait") for \(one ? "it" : "them")); "
                + "'tidemark fetch' tries \(one ? "it" : "them") again:\n"
                + indented(report.fetchFailures, style: output.red)
        }
        if let left = report.fetchInterrupted {
            out += "The last fetch was interrupted, so 'tidemark/upstream' may be behind upstream (\(terminalSafe(left))); "
                + "'tidemark fetch' gets the rest.\n"
        }
        switch report.reshapePending {
        case .everyItem?:
            out += "\(StatusReport.bodySettingKeys) changed since the items were stored: the next fetch downloads every item again.\n"
        case .items(let count)?:
            out += "\(count) item\(count == 1 ? "" : "s") \(count == 1 ? "waits" : "wait") to be downloaded under the changed "
                + "\(StatusReport.bodySettingKeys): the next fetch asks for \(count == 1 ? "it" : "them") again.\n"
        case nil:
            break
        }
        // Without an upstream-tracking snapshot (a `git clone` of a mirror before its first
        // fetch) there is no earlier fetch's to speak of.
        let earlier = report.upstream == nil ? "" : ", so 'tidemark/upstream' is an earlier fetch's"
        if let failed = report.fetchFailed {
            out += "The last fetch failed and stored nothing\(earlier):\n" + indented([terminalSafe(failed)], style: output.red)
        }
        if let refused = report.fetchRefused {
            out += "The last fetch was refused and stored nothing\(earlier):\n" + indented([terminalSafe(refused)], style: output.red)
        }
        if !report.fetchVanished.isEmpty {
            let one = report.fetchVanished.count == 1
            let them = one ? "it" : "them"
            out += "The last fetch found \(report.fetchVanished.count) item\(one ? "" : "s") gone or changed upstream after its listing named "
                + "\(them), left as \(one ? "it was" : "they were"); the next fetch lists \(them) again:\n"
                + indented(report.fetchVanished)
        }
        if !report.fetchUnconfirmed.isEmpty {
            let one = report.fetchUnconfirmed.count == 1
            out += "The last fetch could not confirm the deletion of \(report.fetchUnconfirmed.count) item\(one ? "" : "s") its listing "
                + "left out (asked for, \(one ? "it" : "they") answered neither 404 nor 410): kept, and no deletion applied until a "
                + "listing confirms \(one ? "it" : "them"):\n" + indented(report.fetchUnconfirmed)
        }
        if report.indexMissing {
            out += "Local edits are not shown: " + MirrorError.indexMissingText + " (a sync refuses to run until then, or "
                + "rebuilds it with --force).\n"
        }
        if let failure = report.upkeepFailure {
            out += "The object store upkeep of the last sync or fetch failed (the next one tries again; 'git fsck' checks the objects):\n"
                + indented([terminalSafe(failure)], style: output.red)
        }
        let upstreamItems = report.items.filter { $0.upstream != .unchanged }
        if !upstreamItems.isEmpty || !otherBehind.isEmpty {
            out += "\nBehind upstream:\n"
            let names = upstreamItems.map { ($0.upstream, StatusFormatter.quotedName($0)) }
                + otherBehind.map { ($0.upstream, Quoting.cQuoted(Array($0.path.utf8))) }
            for (change, name) in names {
                switch change {
                case .changed: out += "\t" + output.red("changed:   \(name)") + "\n"
                case .added: out += "\t" + output.green("new:       \(name)") + "\n"
                case .deleted: out += "\t" + output.red("deleted:   \(name)") + "\n"
                case .unchanged: break
                }
            }
        }
        let unmergedItems = report.items.filter { $0.local == .unmerged }
        let unmergedOthers = report.otherPaths.filter { $0.local == .unmerged }
        if !unmergedItems.isEmpty || !unmergedOthers.isEmpty {
            out += "\nUnmerged (a conflict git left; sync and rollback refuse until it is resolved: edit the file, then 'git add' it, "
                + "or 'git rm' it to take a deletion):\n"
            let conflicts = unmergedItems.map { ($0.conflict, StatusFormatter.quotedName($0)) }
                + unmergedOthers.map { ($0.conflict, Quoting.cQuoted(Array($0.path.utf8))) }
            for (conflict, name) in conflicts {
                // Labels padded as git pads them ("deleted by them:" the longest).
                let label = (conflict ?? .bothModified).label + ":"
                out += "\t" + output.red(label.padding(toLength: 17, withPad: " ", startingAt: 0) + name) + "\n"
            }
        }
        let localItems = report.items.filter { $0.local != .unchanged && $0.local != .unmerged }
        let localOthers = report.otherPaths.filter { $0.local != .unchanged && $0.local != .unmerged }
        if !localItems.isEmpty || !localOthers.isEmpty {
            out += "\nEdited locally (a sync keeps these; it refuses to overwrite one changed upstream without --force):\n"
            for item in localItems {
                let name = StatusFormatter.quotedName(item)
                switch item.local {
                case .deleted: out += "\t" + output.red("deleted:   " + name) + "\n"
                case .untracked: out += "\t" + output.red("untracked: " + name) + " (a file of yours where the new item goes)\n"
                default: out += "\t" + output.red("modified:  " + name) + "\n"
                }
            }
            for other in localOthers {
                let name = Quoting.cQuoted(Array(other.path.utf8))
                out += "\t" + output.red((other.local == .deleted ? "deleted:   " : other.isNew ? "new file:  " : "modified:  ") + name) + "\n"
            }
        }
        if report.isClean {
            // Not "working tree clean": untracked files are not looked for (git status names them).
            out += "\nnothing to sync, no local edits\n"
        }
        return out
    }
}
