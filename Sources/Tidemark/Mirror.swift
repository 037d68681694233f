import Foundation
import GitStore
import Upstreams

/// A tidemark mirror: a git repository whose working tree caches an upstream collection.
///
/// Every operation runs on this actor, which owns the repository handle (libgit2 objects are
/// used by one thread at a time). Operations that write take the mirror's run lock first.
///
/// ```swift
/// let mirror = try Mirror.open(at: "templates-cache")
/// let report = try await mirror.sync()
/// print(report.counts.summary)       // "3 changed, 1 new, 0 deleted"
/// ```
public actor Mirror {
    /// The upstream-tracking ref: upstream as last seen by `fetch`.
    public static let upstreamRef = "refs/tidemark/upstream"
    /// Where manifests live in every snapshot.
    public static let metadataFolder = ".tidemark"

    let repository: Repository
    /// The mirror's settings, from `[tidemark]` in `.git/config`.
    public nonisolated let settings: MirrorSettings
    /// The working tree folder (ends in `/`).
    public nonisolated let workingTree: String
    /// The `.git` folder (ends in `/`).
    public nonisolated let gitDirectory: String
    /// Receives progress events of long operations.
    var progress: (@Sendable (ProgressEvent) -> Void)?
    /// Told about every HTTP request the upstream adapter makes.
    var requestObserver: HTTPRequestObserver?
    /// An upstream supplied by the app instead of the one the settings name.
    let customUpstream: (any Upstream)?
    /// Parsed manifests by blob id (blobs never change, so entries never go stale).
    var manifestCache: [ObjectID: Manifest] = [:]
    /// The index file being read on another thread while a sync's fetch writes objects; the
    /// sync's local-edit check adopts it.
    var indexPreload: IndexPreload?
    /// The sync a killed run left unfinished that this handle's last `fetch`, `sync` or
    /// `rollback` finished before its own work (nil when there was none).
    public internal(set) var finishedInterruptedSync: InterruptedSync?
    /// The items edited locally that this handle's last forced branch move wrote over or removed.
    var overwrittenEdits: [String] = []
    /// With `--force`, the local edits ``recoverInterruptedSync(force:)`` wrote over (named).
    var finishingOverwrote: [String] = []
    /// Whether a `fetch` or `sync` of this handle holds the run lock, and the calls waiting for it
    /// (``takeTurn()``).
    private var turnTaken = false
    private var turnsWaiting: [CheckedContinuation<Void, Never>] = []

    init(repository: Repository, settings: MirrorSettings, upstream: (any Upstream)? = nil) {
        // A snapshot a ref points to must be on disk: objects, packs, refs, reflogs and the
        // index are fsynced before being renamed into place.
        Library.enableFsync()
        self.repository = repository
        self.settings = settings
        self.customUpstream = upstream
        self.workingTree = repository.workdir ?? repository.gitDirectory
        self.gitDirectory = repository.gitDirectory
    }

    /// Starts the one-time set-up of the git library (libgit2 reads the system's CA certificates,
    /// about 5 ms) on another thread, for a program to do its own start meanwhile. A program that
    /// started it calls ``finishPreparing()`` before it exits.
    package static func prepareInBackground() { Library.initialiseInBackground() }

    /// The CLI's download window (GitStore's ``SignalWindow``): opened, closed, and the signal
    /// it noted.
    package static func openSignalWindow() { SignalWindow.open() }
    package static func closeSignalWindow() { SignalWindow.close() }
    package static var signalNoted: Int32? { SignalWindow.received }

    /// Waits for the set-up ``prepareInBackground()`` started; at once when none was started.
    package static func finishPreparing() { Library.finishInitialisation() }

    /// The current folder's absolute path, however long (relative paths are resolved against it:
    /// Foundation's gives `/` past 1,024 bytes).
    public static var currentDirectory: String { GitStore.currentDirectory() }

    /// The current folder's path as bytes when they are not UTF-8 (``currentDirectory`` cannot
    /// name it then); nil when they are.
    public static var currentDirectoryIfNotUTF8: [UInt8]? { GitStore.currentDirectoryIfNotUTF8() }

    /// Opens the mirror containing `path` (searching parent folders, like git).
    /// - Parameter upstream: an adapter of the app's own to use instead of the configured one; it
    ///   must mirror the mirror's collections.
    /// - Throws: ``MirrorError/notAMirror(_:isRepository:)`` when there is no mirror there.
    public static func open(at path: String, upstream: (any Upstream)? = nil) throws(MirrorError) -> Mirror {
        let repository: Repository
        do {
            repository = try Repository.open(at: path)
        } catch let error where error.code == .notFound {
            throw .notAMirror(path)
        } catch {
            throw .git(error)
        }
        // A worktree's settings are its repository's: one of a bare repository that has none
        // but holds snapshots is named as the worktree it is, not as a clone to configure.
        let loaded: Result<MirrorSettings, MirrorError> = Result { () throws(MirrorError) in try MirrorSettings.load(from: repository) }
        if repository.isLinkedWorktree {
            if case .failure(let error) = loaded, case .notAMirror = error { throw error }
            // Its index, HEAD and tidemark state are not the mirror's, its objects are: a sync
            // there would split one mirror's state in two.
            let common = URL(fileURLWithPath: repository.commonDirectory)
            let worktree = "'\(repository.workdir ?? path)' is a linked worktree (git worktree add); tidemark works in the mirror's own working tree"
            guard common.lastPathComponent == ".git" else {
                // A bare repository's worktree: the repository has no working tree to name.
                throw .invalidArgument(worktree + ", and its repository '\(common.path)' is bare, with none: fetch, log, config and "
                                       + "diff between snapshots run there (tidemark -C \(common.path)); to sync, use a clone with a "
                                       + "working tree of its own (git clone \(common.path))")
            }
            throw .invalidArgument(worktree + ": tidemark -C \(common.deletingLastPathComponent().path)")
        }
        let settings = try loaded.get()
        // Listed for a collection it does not mirror, it would list nothing: every item deleted.
        if let upstream, let missing = settings.collections.first(where: { !upstream.collections.contains($0) }) {
            throw .invalidArgument("the upstream given (\(upstream.spec)) has no collection '\(missing)', which the mirror holds "
                                   + "(its collections: \(settings.collections.joined(separator: ", ")))")
        }
        return Mirror(repository: repository, settings: settings, upstream: upstream)
    }

    /// Runs `body` with the adapter, then releases the adapter's connections (an app's own
    /// adapter stays the app's to shut down). `jobs` overrides `tidemark.jobs` for this run.
    func withUpstream<R>(jobs: Int? = nil, _ body: (any Upstream) async throws(MirrorError) -> R) async throws(MirrorError) -> R {
        let upstream = try makeUpstream(jobs: jobs)
        let owned = customUpstream == nil
        do {
            let result = try await body(upstream)
            if owned { await upstream.shutdown() }
            return result
        } catch {
            if owned { await upstream.shutdown() }
            throw error
        }
    }

    /// Throws for a bare repository (a mirror shared through `git clone --bare`): `command` works
    /// on the working tree, which it lacks (git says "this operation must be run in a work tree").
    /// `fetch`, `log`, `diff` between snapshots and `config` work there.
    func requireWorkingTree(for command: String) throws(MirrorError) {
        guard repository.workdir == nil else { return }
        throw .invalidArgument("'\(repository.gitDirectory.dropLast())' is a bare repository: \(command) needs a working tree "
                               + "(clone it into one: git clone \(repository.gitDirectory.dropLast()) <folder>)")
    }

    /// The settings' upstream configuration, its paths made absolute: a relative `dir:` folder
    /// or `sslCAInfo` file is relative to the mirror (as a relative git remote is to its
    /// repository), not to wherever tidemark was started: `-C` and subfolders find it too.
    var upstreamConfiguration: UpstreamConfiguration {
        var configuration = settings.upstreamConfiguration
        if configuration.kind == "dir", !configuration.location.isEmpty, !configuration.location.hasPrefix("/") {
            configuration.spec = "dir:" + workingTree + configuration.location
        }
        if let path = configuration.options["sslCAInfo"].map(Mirror.expandingHome), !path.isEmpty {
            configuration.options["sslCAInfo"] = path.hasPrefix("/") ? path : workingTree + path
        }
        return configuration
    }

    /// The ISO 8601 date-time of a version written as a Unix time (`1704153600123`), for display;
    /// nil for any other text, and for a number of fewer than 9 digits (a `0` meaning "never", a
    /// revision counter), which names no date worth showing.
    package static func dateOfUnixTime(_ text: String) -> String? {
        guard let time = Timestamp(text), time.isUnixTime, time.seconds >= 100_000_000 else { return nil }
        return Timestamp(seconds: time.seconds, nanoseconds: time.nanoseconds).raw
    }

    /// `path` with a leading `~/` (or `~` alone) read as the home folder (`$HOME`), as git reads a path setting.
    package static func expandingHome(_ path: String) -> String {
        guard path == "~" || path.hasPrefix("~/") else { return path }
        let home = ProcessInfo.processInfo.environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + path.dropFirst()
    }

    /// The adapter this mirror reads from.
    func makeUpstream(jobs: Int? = nil) throws(MirrorError) -> any Upstream {
        // A bad value a fetch would use (`--jobs` stands in for `tidemark.jobs`; only
        // `sync --if-stale` reads `tidemark.refreshInterval`).
        for key in settings.problems.keys.sorted()
        where !(key == "tidemark.jobs" && jobs != nil) && key != "tidemark.refreshInterval" {
            throw .invalidArgument(settings.problems[key]!)
        }
        if let customUpstream { return customUpstream }
        var configuration = upstreamConfiguration
        if let jobs { configuration.jobs = jobs }
        do {
            return try UpstreamFactory.make(configuration, settings: HTTPSettings(requestObserver: requestObserver))
        } catch let error as MirrorError {
            throw error
        } catch UpstreamError.invalidConfiguration(let message) {
            // A kind tidemark does not know in a mirror: one an app made with an upstream of its own.
            let hint = message.hasPrefix("unknown upstream kind")
                ? "; a mirror made by an app with an upstream of its own is opened by that app (Mirror.open(at:upstream:))" : ""
            throw .upstream(.invalidConfiguration(Mirror.namingConfigKey(message) + hint))
        } catch UpstreamError.unreachable(let message) where configuration.kind == "dir" {
            // The folder moved or was renamed: say how to point the mirror at its new place.
            throw .upstream(.unreachable(message + "; if it moved, point the mirror at it: git config tidemark.upstream dir:<folder>"))
        } catch {
            throw .upstream(error as? UpstreamError ?? .invalidConfiguration(String(describing: error)))
        }
    }

    /// An adapter's message about `option <name>` (as `clone --option` gives it), naming the
    /// config key a mirror reads it from instead (`config tidemark.timeout must be ...`).
    static func namingConfigKey(_ message: String) -> String {
        guard message.hasPrefix("option ") else { return message }
        let name = message.dropFirst(7).prefix { $0.isLetter || $0.isNumber }
        guard !name.isEmpty else { return message }
        return "config tidemark." + name + message.dropFirst(7 + name.count)
    }

    /// Sets the receiver of progress events. It is called on the mirror's executor, possibly once
    /// per downloaded item: keep it cheap and throttle any drawing yourself.
    public func setProgressHandler(_ handler: (@Sendable (ProgressEvent) -> Void)?) {
        progress = handler
    }

    /// Sets the receiver of a record for every HTTP request the configured upstream makes (method,
    /// redacted URL, status, bytes, time; never credentials). It is called from concurrent tasks.
    /// An app's own ``Upstream`` passed to ``open(at:upstream:)`` is not observed.
    public func setRequestObserver(_ observer: HTTPRequestObserver?) {
        requestObserver = observer
    }

    // MARK: - Reading snapshots

    /// The branch HEAD names, e.g. `refs/heads/main`; `HEAD` when HEAD is detached.
    func branch() throws(MirrorError) -> String {
        try mirrorErrors { try repository.headBranch() ?? "HEAD" }
    }

    /// The branch a sync or rollback moves, HEAD's; throws ``MirrorError/detachedHead(_:)`` when
    /// HEAD is detached (moving `main` then would leave HEAD and the working tree apart), or
    /// ``MirrorError/operationInProgress(_:by:)`` when a rebase or `am` detached it.
    func checkedOutBranch(by command: String = "sync") throws(MirrorError) -> String {
        let branch = try branch()
        if branch == "HEAD", let head = try headCommit() {
            // A rebase (or `am`, or a bisect) detaches HEAD while it runs: it is to finish, not
            // `git switch` (git refuses that then; a bisect stays under way).
            if let operation = operationInProgress(headDetached: true) { throw .operationInProgress(operation, by: command) }
            throw .detachedHead(head.id)
        }
        return branch
    }

    /// The git operation under way: a merge, revert, cherry-pick, rebase or `am`, or a bisect
    /// while it has HEAD detached (`git bisect reset` ends it); nil when there is none.
    func operationInProgress(headDetached: Bool) -> String? {
        repository.operationInProgress() ?? (headDetached && repository.isBisecting ? "bisect" : nil)
    }

    /// A branch's short name: `main` for `refs/heads/main`.
    package static func shortBranchName(_ branch: String) -> String {
        branch.hasPrefix("refs/heads/") ? String(branch.dropFirst("refs/heads/".count)) : branch
    }

    /// The commit the checked-out branch points at; nil before its first snapshot.
    public func branchTip() throws(MirrorError) -> ObjectID? { try headCommit()?.id }

    /// The items the last fetch could not download (`collection/id: reason`), as
    /// ``StatusReport/fetchFailures`` has them, without the rest of a status.
    public func pendingFetchFailures() -> [String] { stateLines(Mirror.fetchFailuresState) }

    /// The first parent of `commit`; nil for a root commit, and for one at a shallow clone's
    /// boundary (whose parents it does not have), where history ends as it does for `git log`.
    func firstParent(of commit: Commit) throws(MirrorError) -> Commit? {
        guard let parent = commit.parents.first else { return nil }
        do {
            return try repository.commit(parent)
        } catch {
            if repository.shallowBoundary().contains(commit.id) { return nil }
            throw .git(error)
        }
    }

    /// The commit HEAD points to, nil before the first snapshot.
    func headCommit() throws(MirrorError) -> Commit? {
        try mirrorErrors { try repository.resolveReference("HEAD").map { try repository.commit($0) } }
    }

    /// The upstream-tracking snapshot (nil before the first fetch): `refs/tidemark/upstream`, or a newer snapshot on the
    /// branch that descends from it (``newerSnapshotOnHead(than:)``).
    func upstreamCommit() throws(MirrorError) -> Commit? {
        let tracked = try trackedUpstreamCommit()
        return try newerSnapshotOnHead(than: tracked) ?? tracked
    }

    /// `refs/tidemark/upstream` as it is.
    func trackedUpstreamCommit() throws(MirrorError) -> Commit? {
        try mirrorErrors { try repository.resolveReference(Mirror.upstreamRef).map { try repository.commit($0) } }
    }

    /// Throws ``MirrorError/upstreamNotASnapshot(_:)`` when `commit` (the upstream-tracking
    /// ref's) is no snapshot: neither tidemark's trailers nor the mirror's files (`.tidemark/`,
    /// which a snapshot reworded by `git commit --amend` keeps, and a fetch that finds nothing
    /// new takes for upstream's). A sync would apply its tree as upstream's, and status compare
    /// with it, though no fetch made it.
    func requireSnapshot(_ commit: Commit) throws(MirrorError) {
        guard SnapshotMessage.parse(commit.message) == nil else { return }
        let metadata = try mirrorErrors { try repository.treeEntry(at: Mirror.metadataFolder, in: commit.tree) }
        if metadata == nil { throw .upstreamNotASnapshot(commit.id) }
    }

    /// The newest snapshot of this upstream and these collections on HEAD's first-parent line, as
    /// tidemark wrote it (a fetch's or a sync's, or one only reworded since), passing over commits
    /// of the user's own, rollbacks and amended snapshots, when it is newer than `tracked`: it descends from it, or
    /// (a sibling: this clone fetched meanwhile, or `git pull --rebase` dropped its own snapshot)
    /// its listing was taken later and `tracked` does not already hold it. Snapshots another
    /// clone of the mirror made, brought in by `git pull`: `refs/tidemark/upstream` is this
    /// repository's own and stays behind them, and taken as upstream it would have a sync put
    /// their items back to older versions. Nil otherwise.
    ///
    /// A merge on that line (`git pull` of clones that both synced) is looked through too: the
    /// newest such snapshot on the first-parent lines of its other parents counts, when newer
    /// than the one its first parent leads to.
    func newerSnapshotOnHead(than tracked: Commit?) throws(MirrorError) -> Commit? {
        guard let tracked, let head = try headCommit(), head.id != tracked.id else { return nil }
        var snapshotsByTree: [ObjectID: [Commit]]?
        var budget = 1000
        // The first snapshot of this upstream down a first-parent line, before `tracked`.
        func firstSnapshot(from start: Commit, passing: (Commit) -> Void = { _ in }) throws(MirrorError) -> (commit: Commit, message: SnapshotMessage)? {
            try firstWrittenSnapshot(along: start, before: tracked.id, budget: &budget, accept: isSnapshotOfThisUpstream,
                                     passing: passing, snapshotsByTree: &snapshotsByTree)
        }
        var merges: [Commit] = []
        let found = try firstSnapshot(from: head) { if $0.parents.count > 1 { merges.append($0) } }
        var best: Commit?
        if let (commit, message) = found, isNewerSnapshot(commit, message, than: tracked) { best = commit }
        for merge in merges {
            // A merge's other parents may be beyond a shallow clone's boundary.
            for parent in merge.parents.dropFirst() {
                guard let side = try? repository.commit(parent),
                      let (commit, message) = try firstSnapshot(from: side),
                      isNewerSnapshot(commit, message, than: best ?? tracked) else { continue }
                best = commit
            }
        }
        return best
    }

    /// Whether the snapshot `commit` (its `message`, parsed when not given) is newer than `other`:
    /// it descends from it, or is a sibling listed later that `other` does not hold. Not when that
    /// cannot be told (a shallow clone lacks the history between them).
    func isNewerSnapshot(_ commit: Commit, _ message: SnapshotMessage? = nil, than other: Commit) -> Bool {
        guard commit.id != other.id, let descends = try? repository.isDescendant(commit.id, of: other.id) else { return false }
        if descends { return true }
        guard let listed = (message ?? SnapshotMessage.parse(commit.message))?.listedAt.flatMap(Timestamp.init),
              let otherListed = SnapshotMessage.parse(other.message)?.listedAt.flatMap(Timestamp.init),
              listed > otherListed, let held = try? repository.isDescendant(other.id, of: commit.id) else { return false }
        return !held
    }

    /// Whether `message` is that of a fetch's or sync's snapshot (no rollback) of this mirror's
    /// upstream (however its spec is spelled: ``UpstreamConfiguration/sameUpstream(_:_:relativeTo:)``) and collections.
    func isSnapshotOfThisUpstream(_ message: SnapshotMessage) -> Bool {
        message.restores == nil && UpstreamConfiguration.sameUpstream(message.upstream, settings.upstream, relativeTo: workingTree)
            && Set(message.collections.map(\.name)) == Set(settings.collections)
    }

    /// The newest snapshot on `head`'s first-parent line whose tree is the one tidemark wrote (or
    /// a snapshot only reworded since): what upstream held, below the commits of the user's own.
    func lastSnapshot(from head: Commit?) throws(MirrorError) -> Commit? {
        guard let head else { return nil }
        var budget = 1000
        var snapshotsByTree: [ObjectID: [Commit]]?
        return try firstWrittenSnapshot(along: head, budget: &budget, snapshotsByTree: &snapshotsByTree)?.commit
    }

    /// The first commit down `start`'s first-parent line (`start` included) that is a snapshot
    /// as tidemark wrote it (``writtenSnapshotMessage(_:snapshotsByTree:)``) whose message
    /// `accept`s, with that message. Nil when the line ends (a root, a shallow clone's boundary,
    /// a parent that cannot be read) or reaches `stop` first, or once `budget` commits were
    /// looked at (each look spends one). `passing` is told each commit passed on the way.
    func firstWrittenSnapshot(along start: Commit, before stop: ObjectID? = nil, budget: inout Int,
                              accept: (SnapshotMessage) -> Bool = { _ in true }, passing: (Commit) -> Void = { _ in },
                              snapshotsByTree: inout [ObjectID: [Commit]]?) throws(MirrorError) -> (commit: Commit, message: SnapshotMessage)? {
        var commit = start
        while budget > 0, commit.id != stop {
            budget -= 1
            if let message = try writtenSnapshotMessage(commit, snapshotsByTree: &snapshotsByTree), accept(message) {
                return (commit, message)
            }
            passing(commit)
            guard let parent = (try? firstParent(of: commit)) ?? nil else { return nil }
            commit = parent
        }
        return nil
    }

    /// The message of `commit` when it is a snapshot whose tree is the one tidemark wrote: its
    /// own, or (a snapshot only reworded since, or snapshots squashed into one,
    /// ``copiedSnapshot(_:snapshotsByTree:)``) that of the snapshot whose tree it holds. Nil for
    /// a commit of the user's and an amended snapshot. `snapshotsByTree` is filled on the first
    /// commit that needs it.
    func writtenSnapshotMessage(_ commit: Commit) throws(MirrorError) -> SnapshotMessage? {
        var snapshotsByTree: [ObjectID: [Commit]]?
        return try writtenSnapshotMessage(commit, snapshotsByTree: &snapshotsByTree)
    }

    func writtenSnapshotMessage(_ commit: Commit, snapshotsByTree: inout [ObjectID: [Commit]]?) throws(MirrorError) -> SnapshotMessage? {
        if let message = SnapshotMessage.parse(commit.message), Mirror.upstreamTree(of: commit, message: message) == commit.tree {
            return message
        }
        return try copiedSnapshot(commit, snapshotsByTree: &snapshotsByTree).flatMap { SnapshotMessage.parse($0.message) }
    }

    /// Moves `refs/tidemark/upstream` forward to ``newerSnapshotOnHead(than:)`` when there is
    /// one, before a fetch or sync builds on it (under the run lock).
    func catchUpUpstreamRef() throws(MirrorError) {
        guard let tracked = try trackedUpstreamCommit(), let newer = try newerSnapshotOnHead(than: tracked) else { return }
        try updateRef(Mirror.upstreamRef, to: newer.id, expected: tracked.id,
                      message: "tidemark: caught up with the branch's snapshot \(newer.id.short())")
        // A sibling (another clone's listing, incremental perhaps) may still hold items this
        // clone's last whole listing found deleted: the next listing is whole, to find them again.
        if (try? repository.isDescendant(newer.id, of: tracked.id)) != true { removeState(Mirror.fullListingState) }
    }

    static func manifestPath(_ collection: String) -> String {
        "\(metadataFolder)/\(collection).manifest"
    }

    /// The blob id of a collection's manifest in `tree`, nil when absent.
    func manifestBlob(_ collection: String, in tree: ObjectID?) throws(MirrorError) -> ObjectID? {
        try Mirror.manifestBlob(collection, in: tree, on: repository)
    }

    /// ``manifestBlob(_:in:)`` read on `repository` (any handle of this mirror's).
    static func manifestBlob(_ collection: String, in tree: ObjectID?, on repository: Repository) throws(MirrorError) -> ObjectID? {
        guard let tree else { return nil }
        return try mirrorErrors { try repository.treeEntry(at: Mirror.manifestPath(collection), in: tree)?.id }
    }

    /// A collection's manifest in `tree` (empty when the tree has none).
    func manifest(_ collection: String, in tree: ObjectID?) throws(MirrorError) -> Manifest {
        guard let blob = try manifestBlob(collection, in: tree) else { return Manifest() }
        return try manifest(collection, blob: blob)
    }

    /// ``manifest(_:in:)`` of a configured collection, or of one `tree` holds that the settings
    /// no longer name (dropped since, its snapshots still hold it); empty for a folder that is
    /// no collection, and for an unconfigured one whose manifest does not parse.
    func collectionManifest(_ collection: String, in tree: ObjectID?) throws(MirrorError) -> Manifest {
        try readingCollection(collection, empty: Manifest()) { () throws(MirrorError) in try manifest(collection, in: tree) }
    }

    /// What `read` gives of `collection`'s manifest: its error for a configured collection, else
    /// (a folder that is no collection, or one dropped since) `empty` when it fails.
    func readingCollection<T>(_ collection: String, empty: T, _ read: () throws(MirrorError) -> T) throws(MirrorError) -> T {
        if settings.collections.contains(collection) { return try read() }
        return (try? read()) ?? empty
    }

    /// A parsed manifest, kept for the rest of this operation: a sync reads the same manifests
    /// (HEAD's, the upstream snapshot's) several times, and each is 100k lines on large mirrors.
    func manifest(_ collection: String, blob: ObjectID) throws(MirrorError) -> Manifest {
        if let cached = manifestCache[blob] { return cached }
        let data = try manifestData(blob, of: collection)
        do {
            let manifest = try Manifest.parse(data)
            if manifestCache.count >= 8 { manifestCache.removeAll() }
            manifestCache[blob] = manifest
            return manifest
        } catch {
            throw .corruptManifest(collection: collection, reason: error.description)
        }
    }

    /// The items whose versions differ between two manifest blobs (nil: no manifest), found
    /// by comparing lines, without parsing the unchanged ones.
    func manifestChanges(_ collection: String, from old: ObjectID?, to new: ObjectID?) throws(MirrorError) -> [ManifestChange] {
        if old == new { return [] }
        return try manifestChanges(collection, from: try manifestData(old, of: collection), to: try manifestData(new, of: collection))
    }

    /// The items whose versions differ between two manifest files.
    func manifestChanges(_ collection: String, from old: Data, to new: Data) throws(MirrorError) -> [ManifestChange] {
        do {
            return try Manifest.changes(from: old, to: new)
        } catch {
            throw .corruptManifest(collection: collection, reason: error.description)
        }
    }

    /// Collections `tree` holds (a `.tidemark/<name>.manifest`) that the settings no longer name:
    /// a later snapshot drops them.
    func unconfiguredCollections(in tree: ObjectID?) throws(MirrorError) -> [String] {
        guard let tree, let folder = try mirrorErrors({ try repository.treeEntry(at: Mirror.metadataFolder, in: tree) }),
              folder.isTree else { return [] }
        let suffix = ".manifest"
        return try mirrorErrors { try repository.treeEntries(folder.id) }.compactMap { entry in
            let name = String(decoding: entry.name, as: UTF8.self)
            guard name.hasSuffix(suffix), case let collection = String(name.dropLast(suffix.count)),
                  CollectionName.isValid(collection), !settings.collections.contains(collection) else { return nil }
            return collection
        }
    }

    /// The collections whose changes between two trees count: the configured ones, and those
    /// `old` holds that the settings no longer name (all their items are deleted), or `new` does
    /// (a rollback to a snapshot that held them brings their items back).
    func comparedCollections(from old: ObjectID?, to new: ObjectID? = nil) throws(MirrorError) -> [String] {
        var names = settings.collections + (try unconfiguredCollections(in: old))
        for name in try unconfiguredCollections(in: new) where !names.contains(name) { names.append(name) }
        return names
    }

    /// Collections no longer configured, as a fetch from `base` over `head` meets them:
    /// `fromBase`, those the new snapshot drops (refused with ``MirrorError/droppedCollection(_:items:)``
    /// unless `allowed`, as dropping one deletes all its items), and `all`, those `head` holds
    /// too, whose items a sync deletes.
    func droppedCollections(base: ObjectID?, head: ObjectID?, allowed: Bool) throws(MirrorError)
        -> (fromBase: [String], all: [String]) {
        let fromBase = try unconfiguredCollections(in: base)
        if !allowed, let base, !fromBase.isEmpty {
            var counts: [Int] = []
            for name in fromBase { counts.append(try filePaths(under: name, in: base).count) }
            throw .droppedCollection(fromBase, items: counts)
        }
        return (fromBase, Set(fromBase + (try unconfiguredCollections(in: head))).sorted())
    }

    /// The number of items the manifest of `collection` in `tree` lists (0 without one).
    func itemCount(_ collection: String, in tree: ObjectID?) throws(MirrorError) -> Int {
        guard let blob = try manifestBlob(collection, in: tree) else { return 0 }
        return try manifestTable(collection, blob: blob).count
    }

    /// Paths among `paths` that `head` does not hold but the working tree has a file (or folder)
    /// at: untracked files a checkout would have to overwrite. Not those already holding what
    /// `targetBlob` says the checkout writes there and that the index stages as that or not at
    /// all (``alreadyWritten(_:targetBlob:)``).
    func untrackedPaths(among paths: [String], head: ObjectID?,
                        targetBlob: (String) throws(MirrorError) -> ObjectID? = { _ in nil }) throws(MirrorError) -> [String] {
        var found: [String] = []
        for path in paths {
            var info = stat()
            guard lstat(workingTree + path, &info) == 0 else { continue }
            if let head, try mirrorErrors({ try repository.treeEntry(at: path, in: head) }) != nil { continue }
            found.append(path)
        }
        let written = try alreadyWritten(found, targetBlob: targetBlob)
        return found.filter { !written.contains($0) }
    }

    /// Those of `paths` (files in a checkout's way) that hold, as regular files, the blob
    /// `targetBlob` gives, and that the index stages as that blob or not at all: the files a
    /// `git reset --soft` over a sync that added them leaves staged, or a copy made by hand.
    /// Nothing is lost when the checkout writes them (``removeAlreadyWritten(among:head:target:)``).
    func alreadyWritten(_ paths: [String], targetBlob: (String) throws(MirrorError) -> ObjectID?) throws(MirrorError) -> Set<String> {
        var holding: [(path: String, blob: ObjectID)] = []
        for path in paths {
            if let blob = try targetBlob(path), holds(blob, at: path) { holding.append((path, blob)) }
        }
        let staged = try mirrorErrors { try repository.stagedBlobs(at: holding.map(\.path)) }
        return Set(holding.filter { held in staged[held.path].map { $0 == held.blob } ?? true }.map(\.path))
    }

    /// Whether the working tree's file at `path` is a regular file holding `blob`.
    func holds(_ blob: ObjectID?, at path: String) -> Bool {
        guard let blob else { return false }
        var info = stat()
        guard lstat(workingTree + path, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
              let data = FileManager.default.contents(atPath: workingTree + path) else { return false }
        return ObjectID.hashBlob(data) == blob
    }

    /// The paths of every file below `folder` in `tree`.
    func filePaths(under folder: String, in tree: ObjectID) throws(MirrorError) -> [String] {
        guard let entry = try mirrorErrors({ try repository.treeEntry(at: folder, in: tree) }), entry.isTree else { return [] }
        var paths: [String] = []
        for child in try mirrorErrors({ try repository.treeEntries(entry.id) }) {
            let path = folder + "/" + String(decoding: child.name, as: UTF8.self)
            if child.isTree { paths += try filePaths(under: path, in: tree) } else { paths.append(path) }
        }
        return paths
    }

    /// `changes` without the items whose file holds the same blob in both trees: a new version
    /// with the same body (a touched `dir` file, an upstream save that changed nothing) changes
    /// no content, only the manifest, and is not counted or shown as changed. Nor is an item new
    /// to the old manifest whose file the old tree already holds as the new one does (a commit
    /// of the user's own removed its manifest line).
    func contentChanges(_ changes: [ManifestChange], in collection: String,
                        from old: ObjectID?, to new: ObjectID?) throws(MirrorError) -> [ManifestChange] {
        guard let old, let new else { return changes }
        var kept: [ManifestChange] = []
        for change in changes {
            if let after = change.new, case let before = change.old ?? after,
               let a = try mirrorErrors({ try repository.treeEntry(at: "\(collection)/\(before.path)", in: old) }),
               let b = try mirrorErrors({ try repository.treeEntry(at: "\(collection)/\(after.path)", in: new) }),
               a.id == b.id {
                continue
            }
            kept.append(change)
        }
        return kept
    }

    /// The bytes of `collection`'s manifest blob (empty for none), read from the working tree's
    /// manifest file when that holds them (usually: the snapshot checked out is the last fetched).
    func manifestData(_ blob: ObjectID?, of collection: String) throws(MirrorError) -> Data {
        try manifestData(blob, of: collection, on: repository)
    }

    /// ``manifestData(_:of:)`` read on `repository` (any handle of this mirror's).
    nonisolated func manifestData(_ blob: ObjectID?, of collection: String, on repository: Repository) throws(MirrorError) -> Data {
        guard let blob else { return Data() }
        return try mirrorErrors { try repository.readBlob(blob, copyAt: manifestCopy(collection)) }
    }

    /// Where the working tree has `collection`'s manifest file.
    nonisolated func manifestCopy(_ collection: String) -> String {
        workingTree + Mirror.manifestPath(collection)
    }

    /// A manifest blob as a ``ManifestTable`` (empty for none): what a fetch works on.
    func manifestTable(_ collection: String, blob: ObjectID?) throws(MirrorError) -> ManifestTable {
        guard let blob else { return ManifestTable() }
        return try ManifestLoad.table(of: blob, in: repository, copy: manifestCopy(collection), collection: collection)
    }

    /// Warnings for `revisions` (ranges included) that name `upstream` while a branch, tag or
    /// remote of that name exists too: tidemark takes it as its upstream-tracking ref, where git
    /// would take the other (git warns of such an ambiguous name too).
    package func revisionWarnings(_ revisions: [String]) -> [String] {
        let names = revisions.flatMap { revision in RevisionRange(revision).map { [$0.from, $0.to] } ?? [revision] }
        guard names.contains(where: Mirror.namesUpstream) else { return [] }
        return ["refs/heads/upstream", "refs/tags/upstream", "refs/remotes/upstream/HEAD"]
            .filter { (try? repository.resolveReference($0)) ?? nil != nil }.map {
                let name = $0.dropFirst("refs/".count).replacingOccurrences(of: "/HEAD", with: "")
                return "refname 'upstream' is ambiguous: tidemark takes it as \(Mirror.upstreamRef), not \($0) (name that one \(name))"
            }
    }

    /// Whether `text` names a commit, or a range of two (`A..B`, `A...B`), as `diff` and `log`
    /// take them: git takes an argument that is none, but a file, as a path.
    package func isRevision(_ text: String) -> Bool { revisionError(text) == nil }

    /// Why `text` names no commit (nor a range of two), nil when it names one:
    /// ``MirrorError/unknownRevision(_:)`` for a name git would not know either, another error for
    /// one it cannot read (a damaged commit on the way, nothing fetched yet).
    package func revisionError(_ text: String) -> MirrorError? {
        let sides = RevisionRange(text).map { [$0.from, $0.to] } ?? [text]
        for side in sides {
            do { _ = try resolve(side) } catch { return error }
        }
        return nil
    }

    /// Whether `revision` starts with the name `upstream`, alone or followed by git's suffixes.
    static func namesUpstream(_ revision: String) -> Bool {
        let suffix = revision.dropFirst("upstream".count)
        return revision.hasPrefix("upstream") && (suffix.first.map { "~^@".contains($0) } ?? true)
    }

    /// Resolves a revision to a commit; `upstream` names the upstream-tracking snapshot, alone or
    /// followed by git's suffixes (`upstream~1`, `upstream^2`, `upstream@{1}`): the one `status`
    /// and a sync take for upstream's (``upstreamCommit()``), a newer one on the branch, which a
    /// `git pull` of another clone brought, before the ref catches up with it (`diff` showed the
    /// pull undone where `status` saw nothing to sync); `@{n}` reads the ref's reflog.
    func resolve(_ revision: String) throws(MirrorError) -> ObjectID {
        var spec = revision
        let namesUpstream = Mirror.namesUpstream(revision)
        if namesUpstream {
            let suffix = revision.dropFirst("upstream".count)
            // `upstream~1`, `upstream^2` count from that snapshot too; `upstream@{1}` reads the
            // ref's own reflog.
            if !suffix.hasPrefix("@"), let upstream = try upstreamCommit() {
                if suffix.isEmpty { return upstream.id }
                spec = upstream.id.hex + suffix
            } else {
                spec = Mirror.upstreamRef + suffix
            }
        }
        // git's `@` for HEAD, followed by a suffix (`@~1`, `@^`), which libgit2 takes only alone or as `@{...}`.
        if let suffix = spec.dropFirst().first, spec.hasPrefix("@"), suffix == "~" || suffix == "^" { spec = "HEAD" + spec.dropFirst() }
        do {
            return try repository.revparse(spec)
        } catch {
            // A commit on the way that cannot be read is no unknown revision (`HEAD~1` damaged).
            if error.damagedObjectStore, !error.message.contains("object not found") { throw .git(error) }
            if namesUpstream, (try? repository.resolveReference(Mirror.upstreamRef)) ?? nil == nil {
                throw .nothingFetched("unknown revision '\(revision)'")
            }
            throw .unknownRevision(revision)
        }
    }

    // MARK: - State files (.git/tidemark/)

    nonisolated var stateFolder: String { gitDirectory + "tidemark/" }

    /// Replaces a state file durably, like libgit2 writes refs: a temporary file, fsync,
    /// rename, fsync of the folder (the sync journal must survive a power cut too). With
    /// `durable` false, without the fsyncs: for what a power cut may set back to the file before,
    /// or lose, without harm (when the last fetch or sync ran, a watcher's token), not for
    /// what the next run decides by (the journal, the lock notes). About 0.5 ms each.
    nonisolated func writeState(_ name: String, _ text: String, durable: Bool = true) throws(MirrorError) {
        let path = stateFolder + name
        func fail(_ what: String) -> MirrorError {
            .invalidArgument("cannot write \(path): \(what): \(String(cString: strerror(errno)))")
        }
        do {
            try FileManager.default.createDirectory(atPath: stateFolder, withIntermediateDirectories: true)
        } catch {
            throw .invalidArgument("cannot write \(path): \(error.localizedDescription)")
        }
        let temporary = path + ".tmp-\(getpid())"
        // A new file, never one found there (a symbolic link planted under that name would have
        // the write go where it leads): what a killed process of the same pid left goes first.
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC
        var fd = Glibc.open(temporary, flags, 0o666)
        if fd < 0, errno == EEXIST, unlink(temporary) == 0 { fd = Glibc.open(temporary, flags, 0o666) }
        guard fd >= 0 else { throw fail("open") }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = !durable || fsync(fd) == 0
        close(fd)
        guard written == bytes.count, synced, rename(temporary, path) == 0 else {
            let error = fail("write")
            unlink(temporary)
            throw error
        }
        guard durable else { return }
        let folder = Glibc.open(stateFolder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folder >= 0 {
            _ = fsync(folder)
            close(folder)
        }
    }

    /// The temporary files of ``writeState(_:_:)`` that a killed process left (`<name>.tmp-<pid>`,
    /// that process gone); a living one's may be about to be renamed, and stay.
    func removeStaleStateTemporaries() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: stateFolder) else { return }
        for name in names {
            guard let marker = name.range(of: ".tmp-", options: .backwards), let pid = Int32(name[marker.upperBound...]),
                  pid > 0, pid != getpid(), !RunLock.isLiving(pid) else { continue }
            unlink(stateFolder + name)
        }
    }

    /// The state file listing the items the last fetch could not download.
    static let fetchFailuresState = "fetch-failures"
    /// Why the last fetch was refused (a mass deletion), until a fetch stores.
    static let fetchRefusedState = "fetch-refused"
    /// Why the last fetch failed before it stored anything (its listing: upstream unreachable, a
    /// folder unreadable, a malformed page), until a fetch stores.
    static let fetchFailedState = "fetch-failed"
    /// What the last fetch, interrupted, did not get, until a fetch gets everything.
    static let fetchInterruptedState = "fetch-interrupted"
    /// After a fetch that failed or was interrupted: the id of the snapshot the next builds on,
    /// the time it listed, then the racily clean items it did not check, `collection TAB id` (the
    /// id escaped as in a manifest), one a line (``racyCheck(after:)``).
    static let racyPendingState = "racy-pending"

    /// Writes the state file `name`: the time now, then `text` (one line).
    nonisolated func writeTimedState(_ name: String, _ text: String) throws(MirrorError) {
        try writeStateLines(name, [Timestamp(date: Date()).raw, text])
    }

    /// The text of the state file `name` that ``writeTimedState(_:_:)`` wrote, unless a fetch
    /// that got everything (`last-fetch`) started after it: a build that knows nothing of the
    /// file (an older one) leaves it behind.
    func timedStateSinceLastFetch(_ name: String) -> String? {
        let lines = stateLines(name)
        guard lines.count >= 2, let written = Timestamp(lines[0]) else { return nil }
        if let fetched = stateTime("last-fetch"), !(fetched < written) { return nil }
        return lines.dropFirst().joined(separator: "\n")
    }
    /// The state file listing the items the last fetch found gone since its listing.
    static let fetchVanishedState = "fetch-vanished"
    /// The items the last fetch's listing left out whose deletion it could not confirm.
    static let fetchUnconfirmedState = "fetch-unconfirmed"
    /// The state file holding when the last whole listing that was due or asked for started
    /// (``fullListingDue(now:)``).
    static let fullListingState = "last-full-listing"
    /// ``bodySettings`` as the stored items follow them, with the items still to download again
    /// (``bodyReshape(base:)``).
    static let bodySettingsState = "body-settings"

    func readState(_ name: String) -> String? {
        FileManager.default.contents(atPath: stateFolder + name).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The lines of the state file `name` (``writeStateLines(_:_:)``); none when there is no such file.
    func stateLines(_ name: String) -> [String] {
        readState(name).map { $0.split(separator: "\n").map(String.init) } ?? []
    }

    /// Writes `lines` as the state file `name`, one a line (a newline in one written as a
    /// space); removes the file when there are none.
    nonisolated func writeStateLines(_ name: String, _ lines: [String]) throws(MirrorError) {
        guard !lines.isEmpty else { return removeState(name) }
        try writeState(name, lines.map { $0.replacingOccurrences(of: "\n", with: " ") }.joined(separator: "\n") + "\n")
    }

    nonisolated func removeState(_ name: String) {
        try? FileManager.default.removeItem(atPath: stateFolder + name)
    }

    /// The time the state file `name` holds (`last-fetch`, ...; written as a `Tidemark-Listed-At`
    /// is), if it holds one.
    func stateTime(_ name: String) -> Timestamp? {
        readState(name).flatMap { Timestamp($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// When the last successful fetch and sync finished (local clock), if ever.
    public func lastActivity() -> (fetch: Date?, sync: Date?) {
        (stateTime("last-fetch")?.date, stateTime("last-sync")?.date)
    }

    /// Where the branch and the upstream-tracking ref of `repository` point: a run that moved
    /// either keeps the object store in shape (``keepObjectsInShape(_:whenPackCombined:)``).
    static func refTips(of repository: Repository) -> [ObjectID?] {
        ["HEAD", Mirror.upstreamRef].map { try? repository.resolveReference($0) }
    }

    /// What `git gc --auto` does that libgit2 never does, with git's settings: loose objects
    /// packed past `gc.auto` (6,700), then the smaller packs combined past `gc.autoPackLimit`
    /// (50). Either is off when set to 0 or less (`gc.auto` 0 turns both off) or not a number.
    /// Upkeep: a failure leaves the objects as they were, to be tried again by the next run; it
    /// is returned (the first one), for `status` to show.
    static func keepObjectsInShape(_ repository: Repository, whenPackCombined: () -> Void) -> String? {
        guard let auto = try? repository.configInteger("gc.auto") ?? 6_700, auto > 0 else { return nil }
        // Packs a killed upkeep left without their index, an hour on (git renames the index of a
        // pack it stores into place a moment after the pack).
        let hourAgo = Int(Date().timeIntervalSince1970) - 3_600
        repository.removeOrphanPacks { $0.tv_sec < hourAgo }
        var failure: String?
        do {
            _ = try repository.packLooseObjects(above: Int(clamping: auto))
        } catch {
            failure = "packing loose objects: \(error.message)"
        }
        guard let limit = try? repository.configInteger("gc.autoPackLimit") ?? 50, limit > 0 else { return failure }
        do {
            _ = try repository.combinePacks(above: Int(clamping: limit), whenStored: whenPackCombined)
        } catch {
            failure = failure ?? "combining packs: \(error.message)"
        }
        return failure
    }

    /// The state file holding why the last upkeep failed (``keepObjectsInShape(_:whenPackCombined:)``).
    static let upkeepFailedState = "upkeep-failed"

    /// How the keep files of a run's packs start (`tidemark <pid> on <host>`).
    static let packKeepPrefix = "tidemark "

    /// This machine's name, as gethostname(2) gives it (no DNS lookup).
    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Waits until no other `fetch` or `sync` of this handle runs: an actor lets a second call in
    /// while the first awaits the network, and the run lock (held by this very process) would
    /// refuse it. Pair with ``endTurn()``.
    func takeTurn() async {
        guard turnTaken else {
            turnTaken = true
            return
        }
        await withCheckedContinuation { turnsWaiting.append($0) }
    }

    /// Lets the next waiting call of ``takeTurn()`` run.
    func endTurn() {
        if turnsWaiting.isEmpty { turnTaken = false } else { turnsWaiting.removeFirst().resume() }
    }

    /// Takes the run lock (see ``RunLock``), clears what a killed run left, and keeps the packs
    /// this run stores until the lock is released.
    func lock() throws(MirrorError) -> RunLock {
        let lock = try RunLock(gitDirectory: gitDirectory)
        removeOwnStaleGitLock()
        removeStaleStateTemporaries()
        // What the killed run was writing: packs it had not finished are garbage to git.
        if let start = lock.abandonedRunStart { repository.removeObjectWritingLeftovers(modifiedSince: start) }
        // The packs this run stores are kept from `git repack -a -d` and `git gc` until its refs
        // name them; then its keeps and any a killed run left go (this run holds the lock, so no
        // other tidemark run made them), unless a journal still names an unfinished snapshot.
        repository.packKeepNote = "\(Mirror.packKeepPrefix)\(getpid()) on \(Mirror.hostName())"
        let repository = repository, journal = stateFolder + "sync-journal"
        // A run that moved a ref keeps the object store in shape, as git runs `gc --auto` after a
        // fetch or commit.
        let refsBefore = Mirror.refTips(of: repository)
        lock.onRelease = { [self] in
            repository.packKeepNote = nil
            if !FileManager.default.fileExists(atPath: journal) {
                repository.releaseKeptPacks(notedWith: Mirror.packKeepPrefix)
                if Mirror.refTips(of: repository) != refsBefore {
                    let failure = Mirror.keepObjectsInShape(repository, whenPackCombined: { crashPoint("after-combined-pack") })
                    // For `status`, until an upkeep succeeds.
                    try? writeStateLines(Mirror.upkeepFailedState, failure.map { [$0] } ?? [])
                }
            }
        }
        crashPoint("after-lock")
        return lock
    }

    /// Throws ``MirrorError/gitLocked(_:)`` for the first of git's lock files (`index.lock`,
    /// `<ref>.lock`) that exists. A lock file left by another git process, or by one that crashed,
    /// is reported and never deleted: only the user knows whether its owner is gone.
    func checkGitLocks(index: Bool, refs: [String]) throws(MirrorError) {
        let paths = (index ? ["index.lock"] : []) + refs.map { $0 + ".lock" }
        // Held a moment by another git command (`git gc` packing refs): waited for, as in
        // ``updateRef(_:to:expected:message:)``.
        for path in paths where !Mirror.waitBriefly(while: { FileManager.default.fileExists(atPath: gitDirectory + path) }) {
            throw .gitLocked(gitDirectory + path)
        }
    }

    /// Who a snapshot's commit names, as git would (`user.name`, `user.email`, the `GIT_AUTHOR_*` /
    /// `GIT_COMMITTER_*` environment), or `tidemark <tidemark@localhost>` where git would refuse
    /// for want of a name: a sync is the tool's commit.
    func signature(_ role: Repository.SignatureRole = .author) -> Signature {
        repository.signature(for: role, fallbackName: "tidemark", fallbackEmail: "tidemark@localhost")
    }

    /// Test-only crash and pause points. `TIDEMARK_CRASH_AT=<step>` makes the process kill itself
    /// there. `TIDEMARK_PAUSE_AT=<step>` with `TIDEMARK_PAUSE_FILE=<path>` writes the pid to
    /// `<path>.reached`, then waits (at most 120 s) until `<path>` exists, so a test can act
    /// (commit, start a second run) at an exact moment of a run. `TIDEMARK_TRACE_STEPS=1` prints
    /// each step reached to stderr with a monotonic time in seconds and the CPU time the process
    /// has used so far, to time the phases of a run and see how many cores each kept busy.
    nonisolated func crashPoint(_ step: String) {
        let environment = ProcessInfo.processInfo.environment
        if environment["TIDEMARK_TRACE_STEPS"] != nil {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            var usage = rusage()
            getrusage(RUSAGE_SELF.rawValue, &usage)
            let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
                + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
            // write(2), not FileHandle: a closed stderr must not trap.
            let line = Array(String(format: "%.3f %@ (cpu %.3f)\n", Double(now.tv_sec) + Double(now.tv_nsec) / 1e9, step, cpu).utf8)
            _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        }
        if environment["TIDEMARK_CRASH_AT"] == step {
            kill(getpid(), SIGKILL)
        }
        if environment["TIDEMARK_PAUSE_AT"] == step, let file = environment["TIDEMARK_PAUSE_FILE"] {
            _ = FileManager.default.createFile(atPath: file + ".reached", contents: Data("\(getpid())\n".utf8))
            let deadline = Date().addingTimeInterval(120)
            while !FileManager.default.fileExists(atPath: file), Date() < deadline {
                usleep(20_000)
            }
        }
    }
}

/// Progress of a long operation, for a progress line.
public enum ProgressEvent: Sendable, Equatable {
    /// Listing a collection: sent with 0 items when the listing starts, then with the number of
    /// items it found.
    case listing(collection: String, items: Int)
    /// Downloading item bodies: done of total, sent after each item.
    case downloading(collection: String, done: Int, total: Int)
    /// The fetch's listings and downloads are over (or were interrupted): it now writes what it
    /// got. Cancelling the task before this stores what was downloaded
    /// (``MirrorError/interrupted(_:)``); from here on the run goes to its end.
    case storing
    /// Updating the working tree.
    case checkingOut(files: Int)
}
