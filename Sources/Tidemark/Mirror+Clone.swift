import Foundation
import GitStore
import Upstreams

/// Options of `clone`.
public struct CloneOptions: Sendable {
    /// Collections to mirror; empty: the upstream kind's default.
    public var collections: [String] = []
    /// Kind-specific options (`tokenEnv`, `itemsPath`, ...).
    public var options: [String: String] = [:]
    /// Fields left out of every stored item (`tidemark.ignoreField`): JSON pointers such as
    /// `/lastUsed`, `*` standing for any member or element.
    public var ignoredFields: [String] = []
    public var jobs = 8
    /// Fan-out folders: true, false, or nil for automatic.
    public var fanout: Bool?
    public var fetch = FetchOptions()
    public init(collections: [String] = [], options: [String: String] = [:], jobs: Int = 8, fanout: Bool? = nil) {
        self.collections = collections
        self.options = options
        self.jobs = jobs
        self.fanout = fanout
    }
}

extension Mirror {
    /// Creates a mirror of `spec` in `destination` (created; must be missing or empty): lists
    /// the whole collection, downloads every item, commits a first snapshot and checks it out.
    /// On failure the destination is removed again, as `git clone` does, except when some items
    /// downloaded and others failed (``MirrorError/cloneIncomplete(_:kept:)``).
    /// - Parameters:
    ///   - upstream: an adapter of the app's own. The mirror records its ``Upstream/spec`` and
    ///     ``Upstream/collections`` (`spec` and `options.collections` are then not used), and
    ///     ``open(at:upstream:)`` takes it again; it must name at least one collection.
    ///   - progress: receives progress events (see ``setProgressHandler(_:)``).
    ///   - requestObserver: receives every HTTP request (see ``setRequestObserver(_:)``).
    ///   - started: called once the spec, the options and the destination are found usable and
    ///     the destination is claimed, before anything is listed (`Cloning into '...'...`).
    public static func clone(_ spec: String, to destination: String, options: CloneOptions = CloneOptions(),
                             upstream custom: (any Upstream)? = nil,
                             progress: (@Sendable (ProgressEvent) -> Void)? = nil,
                             requestObserver: HTTPRequestObserver? = nil,
                             started: (@Sendable () -> Void)? = nil) async throws(MirrorError) -> (Mirror, SyncReport) {
        let fileManager = FileManager.default
        var isDirectory: ObjCBool = false
        let existed = fileManager.fileExists(atPath: destination, isDirectory: &isDirectory)
        if existed, !isDirectory.boolValue || !((try? fileManager.contentsOfDirectory(atPath: destination)) ?? []).isEmpty {
            // Another clone working there (two started together) is named: the advice for a
            // plain repository would have this one set up a mirror another run is writing.
            let gitDirectory = (destination as NSString).appendingPathComponent(".git") + "/"
            if isDirectory.boolValue, let pid = RunLock.livingHolder(gitDirectory: gitDirectory) {
                throw .locked(pid: pid, path: gitDirectory + "tidemark.lock")
            }
            if isDirectory.boolValue, let repository = try? Repository.open(at: destination, search: false) {
                if let upstream = try? repository.configString("tidemark.upstream") {
                    throw .destinationIsAMirror(destination, upstream: upstream)
                }
                // A repository with no commit and tidemark's run lock, which no process holds: a
                // clone killed before it set the mirror up (git's advice for a repository of one's
                // own would have the user adopt that).
                if (try? repository.revparse("HEAD")) == nil, fileManager.fileExists(atPath: gitDirectory + "tidemark.lock") {
                    throw .invalidArgument("destination path '\(destination)' holds what a tidemark clone killed before it "
                                           + "set the mirror up left: remove it, then clone again")
                }
            }
            throw .destinationNotEmpty(destination)
        }
        for name in options.collections where !CollectionName.isValid(name) {
            throw .unsafeName("invalid collection name '\(Quoting.cQuoted(Array(name.utf8)))': use lower-case letters, digits, '-' and '_' (at most 64)")
        }
        try checkJobs(options.jobs)
        let (ignoredFields, ignoredProblems) = IgnoredFields.checked(options.ignoredFields)
        if let problem = ignoredProblems.first { throw .invalidArgument("ignored field: \(problem)") }
        // A collection given twice is one, as the settings read it again.
        var collections: [String] = []
        for name in options.collections where !collections.contains(name) { collections.append(name) }
        // A certificates file named relative to where the clone was started is stored as a full
        // path (a relative one in the config is relative to the mirror, as a `dir:` folder is).
        var adapterOptions = options.options
        if let path = adapterOptions["sslCAInfo"].map(Mirror.expandingHome), !path.isEmpty {
            adapterOptions["sslCAInfo"] = URL(fileURLWithPath: path).standardizedFileURL.path
        }
        var configuration = UpstreamConfiguration(spec: spec, collections: collections,
                                                  options: adapterOptions, jobs: options.jobs)
        let upstream: any Upstream
        do {
            upstream = try custom ?? UpstreamFactory.make(configuration)
        } catch {
            throw .upstream(error as? UpstreamError ?? .invalidConfiguration(String(describing: error)))
        }
        configuration.spec = upstream.spec
        configuration.collections = upstream.collections
        if custom == nil { await upstream.shutdown() }
        // A mirror of no collection could never hold anything (it cloned "successfully").
        guard !configuration.collections.isEmpty else {
            throw .upstream(.invalidConfiguration("the upstream '\(configuration.spec)' names no collection to mirror"))
        }
        try checkOutside(upstream, destination)
        for name in configuration.collections where !CollectionName.isValid(name) {
            throw .unsafeName("invalid collection name '\(Quoting.cQuoted(Array(name.utf8)))'")
        }
        let settings = MirrorSettings(upstream: configuration.spec, collections: configuration.collections,
                                      jobs: options.jobs, fanout: options.fanout, options: adapterOptions,
                                      ignoredFields: ignoredFields)
        // Claimed with one mkdir, so that of two clones into one destination, one fails here
        // before it writes anything, and its cleanup cannot remove the other's mirror.
        try claim(destination, existed: existed)
        started?()
        do {
            // On the branch `git init` starts (`init.defaultBranch`, else `main`).
            let repository = try mirrorErrors { try Repository.create(at: destination, initialBranch: Library.defaultInitialBranch()) }
            try settings.save(to: repository)
            let mirror = Mirror(repository: repository, settings: settings, upstream: custom)
            await mirror.setProgressHandler(progress)
            await mirror.setRequestObserver(requestObserver)
            var first = SyncOptions(fetch: options.fetch)
            first.holdOnFailures = true
            let report = try await mirror.sync(first)
            return (mirror, report)
        } catch {
            // Some items downloaded, others failed (a rate limit a large clone runs into): what
            // was downloaded stays for `sync` to build on, which downloads only the rest.
            if case .incompleteFetch(let report) = error, report.downloaded > 0, report.current != nil {
                throw .cloneIncomplete(report, kept: destination)
            }
            if existed {
                for entry in (try? fileManager.contentsOfDirectory(atPath: destination)) ?? [] {
                    try? fileManager.removeItem(atPath: destination + "/" + entry)
                }
            } else {
                try? fileManager.removeItem(atPath: destination)
            }
            if case .incompleteFetch(let report) = error { throw .cloneIncomplete(report) }
            // What an interrupted clone downloaded went with its destination.
            if case .interrupted = error { throw .cancelled }
            // The destination is gone: there is no update for a next run to finish.
            if case .workingTreeUnfinished(let cause) = error { throw .git(cause) }
            throw error
        }
    }

    /// Makes `destination` (its parents as needed) unless the folder `existed` (empty), then its
    /// `.git`, failing with ``MirrorError/destinationNotEmpty(_:)`` when another process made
    /// either first: of two clones into one destination, the one whose `mkdir` of `.git` fails
    /// has written nothing there.
    static func claim(_ destination: String, existed: Bool) throws(MirrorError) {
        var folders = [destination + "/.git"]
        if !existed {
            let parent = (destination as NSString).deletingLastPathComponent
            if !parent.isEmpty { try? FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true) }
            folders.insert(destination, at: 0)
        }
        for folder in folders where mkdir(folder, 0o777) != 0 {
            if errno == EEXIST { throw .destinationNotEmpty(destination) }
            throw .invalidArgument("cannot create '\(folder)': \(String(cString: strerror(errno)))")
        }
    }

    /// Throws when `destination` is a `dir` upstream's folder or inside it: the mirror's own files
    /// would be listed as items on the next fetch.
    static func checkOutside(_ upstream: any Upstream, _ destination: String) throws(MirrorError) {
        guard let folder = upstream as? DirectoryUpstream, folder.contains(destination) else { return }
        throw .invalidArgument("destination path '\(Quoting.cQuoted(Array(destination.utf8)))' is inside the upstream folder "
            + "'\(Quoting.cQuoted(Array(folder.spec.dropFirst(4).utf8)))': its files would be listed as items; clone outside it")
    }
}
