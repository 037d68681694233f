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
    /// Where `tidemark watch` listens, and the lock it holds while it runs.
    var watchSocket: String { stateFolder + "watch.sock" }
    var watchLock: String { stateFolder + "watch.lock" }
    /// The token of the last fetch a watcher's answer covered: `token <token>`, `commit <the
    /// upstream-tracking commit it left>`, `scanned <Unix time of its last full scan>`, `root
    /// <folder>`, `collections <tidemark.collection, tab-separated>`.
    static let watchState = "watch-token"

    /// Runs the watcher of this mirror's `dir` upstream until `stop` (a pipe's read end) is
    /// readable: inotify on the folder, answering fetches on `.git/tidemark/watch.sock` which
    /// names changed since their last run. One per mirror.
    ///
    /// It runs on a thread of its own, not on one of Swift's shared ones (with as many watchers as
    /// cores, every other task of the app waited), and does not hold this handle meanwhile:
    /// fetches and syncs through it (or another) are answered by it, as the CLI's `tidemark
    /// watch` and `tidemark sync` are two processes. `ready` is called on that thread.
    ///
    /// - Throws: when the upstream is not a folder, another watcher runs, or the folder cannot be
    ///   watched (or goes away while watched).
    public func watch(stop: Int32, ready: @escaping @Sendable (WatchStarted) -> Void) async throws(MirrorError) {
        #if os(Linux)
        guard settings.upstreamConfiguration.kind == "dir", let upstream = try makeUpstream() as? DirectoryUpstream else {
            throw .invalidArgument("watch: only a dir upstream can be watched; '\(settings.upstream)' lists its changes itself")
        }
        let folder = upstream.folderPath
        try? FileManager.default.createDirectory(atPath: stateFolder, withIntermediateDirectories: true)
        // One watcher per mirror: a lock like the run lock, held for the watcher's life (the
        // kernel drops it with the process), naming its pid.
        let lock: RunLock
        do {
            lock = try RunLock(path: watchLock)
        } catch .locked(let pid, _) {
            throw .invalidArgument("a watcher already runs for this mirror\(pid.map { " (pid \($0))" } ?? ""); stop it first")
        }
        defer { withExtendedLifetime(lock) {} }
        let socket = watchSocket, configured = String(upstream.spec.dropFirst(4))
        let outcome: Result<Void, MirrorError> = await withCheckedContinuation { continuation in
            // The watcher blocks in poll(2) for its whole life.
            let thread = Thread {
                do {
                    let watcher = try FolderWatcher(root: folder)
                    try watcher.serve(at: socket, stop: stop, configured: configured) {
                        ready(WatchStarted(folder: watcher.root, folders: watcher.folderCount, itemFiles: watcher.itemFileCount))
                    }
                    continuation.resume(returning: .success(()))
                } catch let error as UpstreamError {
                    continuation.resume(returning: .failure(.upstream(error)))
                } catch let error as WatcherUnavailable {
                    continuation.resume(returning: .failure(.invalidArgument("watch: \(error.description)")))
                } catch {
                    continuation.resume(returning: .failure(.invalidArgument("watch: \(error)")))
                }
            }
            thread.name = "tidemark watch"
            thread.start()
        }
        try outcome.get()
        #else
        throw .invalidArgument("watch: needs Linux (inotify)")
        #endif
    }

    /// The watcher running for this mirror: its pid (from `watch.lock`) and the folder it
    /// watches, when it answers on its socket. One that holds the lock without answering (still
    /// walking the folder before it listens, or suspended) has no folder. Takes no lock, so a
    /// watcher starting meanwhile is not refused.
    public func runningWatcher() -> (pid: Int32?, folder: String?)? {
        let pid = RunLock.livingHolder(of: watchLock, includingOwn: true)
        if let answer = try? FolderChanges.ask(socket: watchSocket, since: nil) { return (pid, answer.root) }
        return pid.map { ($0, nil) }
    }

    /// Stops the watcher running for this mirror (SIGTERM to its pid, then SIGCONT, as a shell's
    /// `kill` wakes a stopped job to take it), waiting up to 10 s for it to end; returns its pid,
    /// nil when none runs. Throws when it is still there.
    public func stopWatcher() throws(MirrorError) -> Int32? {
        guard let running = runningWatcher() else { return nil }
        if running.pid == getpid() {
            throw .invalidArgument("the watcher runs in this process: end it through the pipe its watch(stop:) polls")
        }
        guard let pid = running.pid, pid > 0 else {
            throw .invalidArgument("cannot stop the watcher: its lock (\(watchLock)) names no process; stop it yourself")
        }
        guard kill(pid, SIGTERM) == 0 else {
            throw .invalidArgument("cannot stop the watcher (pid \(pid)): \(String(cString: strerror(errno))); stop it yourself")
        }
        kill(pid, SIGCONT)
        let deadline = Date().addingTimeInterval(10)
        // The lock is held for the watcher's life, its socket removed before it is released.
        func gone() -> Bool { RunLock.livingHolder(of: watchLock) != pid }
        while !gone(), Date() < deadline { usleep(20_000) }
        // One started with SIGTERM ignored (under `nohup`-like wrappers) is still there.
        guard gone() else {
            throw .invalidArgument("the watcher (pid \(pid)) did not stop within 10 s of SIGTERM; stop it yourself")
        }
        return pid
    }

    /// What the watcher answers this fetch, if one runs, and whether the answer can stand in for
    /// a scan: when it covers everything since `previous`, the upstream-tracking commit the last
    /// fetch left (its token was saved with that commit), the last full scan is under an hour
    /// old, and no `fullListing` was asked for. Otherwise the collections are scanned, and the
    /// reason is reported.
    func watchedChanges(previous: Commit?, folder: DirectoryUpstream, fullListing: Bool = false) -> WatchUse {
        let saved = WatchState(readState(Mirror.watchState) ?? "")
        let changes: FolderChanges
        do {
            changes = try FolderChanges.ask(socket: watchSocket, since: saved?.token)
        } catch {
            return WatchUse(folder: folder, changes: nil, saved: saved, scanReason: error.description)
        }
        guard changes.watches(folder.folderPath) else {
            return WatchUse(folder: folder, changes: nil, saved: saved, scanReason: "the watcher watches another folder (\(changes.root))")
        }
        let collections = settings.collections.joined(separator: "\t")
        let reason: String? =
            if changes.names == nil { "the watcher asks for a full scan (\(changes.rescanReason ?? "events were lost"))" }
            else if fullListing { "a full listing was asked for (--full)" }
            else if saved == nil || saved?.commit != previous?.id.description || saved?.root != changes.root {
                "the last fetch did not end with this watcher's answer (the first since it started, or one failed "
                    + "or listed another folder)"
            } else if saved?.collections != collections { "tidemark.collection changed since the last fetch" }
            else if !(0..<FolderChanges.fullScanInterval).contains(Date().timeIntervalSince1970 - saved!.scanned) {
                "the hourly full scan"
            }
            else { nil }
        return WatchUse(folder: folder, changes: changes, saved: saved, scanReason: reason)
    }

    /// Saves the token of the watcher's answer once a fetch stored everything it covers, with
    /// the upstream-tracking commit that fetch left.
    func saveWatchToken(_ watch: WatchUse, commit: ObjectID) {
        guard let changes = watch.changes else { return }
        let scanned = watch.answeredAny ? watch.saved?.scanned ?? 0 : Date().timeIntervalSince1970
        let state = WatchState(token: changes.token, commit: commit.description, scanned: scanned, root: changes.root,
                               collections: settings.collections.joined(separator: "\t"))
        try? writeState(Mirror.watchState, state.text, durable: false)
    }
}

/// What a fetch makes of `tidemark watch`: its answer, and how each collection was listed.
struct WatchUse {
    let folder: DirectoryUpstream
    let changes: FolderChanges?
    let saved: WatchState?
    /// Why the collections are scanned; nil while the answer stands in for scans.
    var scanReason: String?
    /// True once a collection was listed from the answer.
    private(set) var answeredAny = false

    init(folder: DirectoryUpstream, changes: FolderChanges?, saved: WatchState?, scanReason: String?) {
        self.folder = folder
        self.changes = changes
        self.saved = saved
        self.scanReason = scanReason
    }

    /// `collection` listed from the answer; nil when it must be scanned (the reason is kept).
    mutating func list(_ collection: String, cached: ManifestLoad, hasManifest: Bool) throws -> Listing? {
        guard scanReason == nil, let changes else { return nil }
        guard hasManifest else {
            scanReason = "collection '\(collection)' is new"
            return nil
        }
        guard let listing = try folder.list(collection: collection, cached: cached, changes: changes) else {
            scanReason = "the answer cannot stand in for a scan of '\(collection)' (over a quarter of it changed, "
                + "its folder is hidden, or a folder name is not UTF-8)"
            return nil
        }
        answeredAny = true
        return listing
    }

    /// How the folder was listed, for `-v`.
    var listing: FolderListing {
        scanReason.map { .scan(reason: $0) } ?? .watcher(changedNames: changes?.names?.count ?? 0)
    }
}

/// The saved state of ``Mirror/saveWatchToken(_:commit:)``.
struct WatchState {
    var token: String
    var commit: String
    var scanned: TimeInterval
    var root: String
    /// `tidemark.collection`, tab-separated: the same folder is listed in another layout when they change.
    var collections: String
}

extension WatchState {
    init?(_ text: String) {
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let space = line.firstIndex(of: " ") else { continue }
            fields[String(line[..<space])] = String(line[line.index(after: space)...])
        }
        guard let token = fields["token"], let commit = fields["commit"], let scanned = fields["scanned"].flatMap(Double.init),
              let root = fields["root"], let collections = fields["collections"] else { return nil }
        self.init(token: token, commit: commit, scanned: scanned, root: root, collections: collections)
    }

    var text: String { "token \(token)\ncommit \(commit)\nscanned \(Int(scanned))\nroot \(root)\ncollections \(collections)\n" }
}
