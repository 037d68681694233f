import Foundation
import GitStore
import Upstreams

/// How a fetch listed a `dir` upstream.
public enum FolderListing: Sendable, Equatable {
    /// From the answer of `tidemark watch`: only these changed names were checked.
    case watcher(changedNames: Int)
    /// By an `lstat` of every file, and why no watcher's answer could stand in.
    case scan(reason: String)
}

/// What `tidemark watch` watches, once it is ready.
public struct WatchStarted: Sendable {
    public let folder: String
    public let folders: Int
    public let itemFiles: Int
}

extension Mirror {
    /// Where `tidemark watch` listens.
    var watchSocket: String { stateFolder + "watch.sock" }
    /// The token of the last fetch a watcher's answer covered: `token <token>`, `commit <the
    /// upstream-tracking commit it left>`, `scanned <Unix time of its last full scan>`, `root <folder>`.
    static let watchState = "watch-token"

    /// Runs the watcher of this mirror's `dir` upstream until `stop` (a pipe's read end) is
    /// readable: inotify on the folder, answering fetches on `.git/tidemark/watch.sock` which
    /// names changed since their last run. One per mirror.
    ///
    /// - Throws: when the upstream is not a folder, another watcher runs, or the folder cannot be
    ///   watched (or goes away while watched).
    public func watch(stop: Int32, ready: (WatchStarted) -> Void) throws(MirrorError) {
        #if os(Linux)
        guard settings.upstreamConfiguration.kind == "dir" else {
            throw .invalidArgument("watch: only a dir upstream can be watched; '\(settings.upstream)' lists its changes itself")
        }
        guard let folder = (try makeUpstream() as? DirectoryUpstream)?.folderPath else {
            throw .invalidArgument("watch: only a dir upstream can be watched")
        }
        try? FileManager.default.createDirectory(atPath: stateFolder, withIntermediateDirectories: true)
        // One watcher per mirror: the lock is held for the watcher's life (the kernel drops it
        // with the process), and names its pid.
        let lockPath = stateFolder + "watch.lock"
        let lock = Glibc.open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard lock >= 0 else { throw .invalidArgument("cannot open \(lockPath): \(String(cString: strerror(errno)))") }
        defer { close(lock) }
        guard flock(lock, LOCK_EX | LOCK_NB) == 0 else {
            let pid = FileManager.default.contents(atPath: lockPath).flatMap {
                Int32(String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
            }
            throw .invalidArgument("a watcher already runs for this mirror\(pid.map { " (pid \($0))" } ?? ""); stop it first")
        }
        ftruncate(lock, 0)
        let pid = Array("\(getpid())\n".utf8)
        _ = pid.withUnsafeBytes { pwrite(lock, $0.baseAddress, $0.count, 0) }
        do {
            let watcher = try FolderWatcher(root: folder)
            try watcher.serve(at: watchSocket, stop: stop) {
                ready(WatchStarted(folder: watcher.root, folders: watcher.folderCount, itemFiles: watcher.itemFileCount))
            }
        } catch let error as UpstreamError {
            throw .upstream(error)
        } catch let error as WatcherUnavailable {
            throw .invalidArgument("watch: \(error.description)")
        } catch {
            throw .invalidArgument("watch: \(error)")
        }
        #else
        throw .invalidArgument("watch: needs Linux (inotify)")
        #endif
    }

    /// A watcher's answer for this fetch, and how each collection is then listed: from the
    /// answer when it covers all since `previous`, the upstream-tracking commit the last fetch
    /// left (its token was saved with that commit), else by a scan (the reason is reported).
    func watchedChanges(previous: Commit?, upstream: any Upstream) -> (changes: FolderChanges?, usable: Bool, reason: String) {
        guard let folder = upstream as? DirectoryUpstream else { return (nil, false, "not a dir upstream") }
        let saved = WatchState(readState(Mirror.watchState) ?? "")
        let changes: FolderChanges
        do {
            changes = try FolderChanges.ask(socket: watchSocket, since: saved?.token)
        } catch {
            return (nil, false, error.description)
        }
        guard changes.root == folder.folderPath else {
            return (nil, false, "the watcher watches another folder (\(changes.root))")
        }
        guard let saved, let previous, saved.commit == previous.id.description, saved.root == changes.root else {
            return (changes, false, "first fetch since the watcher started")
        }
        guard changes.names != nil else { return (changes, false, "the watcher asks for a full scan (it restarted or lost events)") }
        guard Date().timeIntervalSince1970 - saved.scanned < FolderChanges.fullScanInterval else {
            return (changes, false, "the hourly full scan")
        }
        return (changes, true, "")
    }

    /// Saves the token of `changes` once a fetch stored everything its answer covers, with the
    /// upstream-tracking commit it left.
    func saveWatchToken(_ changes: FolderChanges, commit: ObjectID, scannedAll: Bool) {
        let previous = WatchState(readState(Mirror.watchState) ?? "")
        let scanned = scannedAll ? Date().timeIntervalSince1970 : previous?.scanned ?? 0
        let state = WatchState(token: changes.token, commit: commit.description, scanned: scanned, root: changes.root)
        try? writeState(Mirror.watchState, state.text)
    }
}

/// The saved state of ``Mirror/saveWatchToken(_:commit:scannedAll:)``.
struct WatchState {
    var token: String
    var commit: String
    var scanned: TimeInterval
    var root: String

    init(token: String, commit: String, scanned: TimeInterval, root: String) {
        self.token = token
        self.commit = commit
        self.scanned = scanned
        self.root = root
    }

    init?(_ text: String) {
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let space = line.firstIndex(of: " ") else { continue }
            fields[String(line[..<space])] = String(line[line.index(after: space)...])
        }
        guard let token = fields["token"], let commit = fields["commit"], let scanned = fields["scanned"].flatMap(Double.init),
              let root = fields["root"] else { return nil }
        self.init(token: token, commit: commit, scanned: scanned, root: root)
    }

    var text: String { "token \(token)\ncommit \(commit)\nscanned \(Int(scanned))\nroot \(root)\n" }
}
