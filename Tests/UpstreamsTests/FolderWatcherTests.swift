#if os(Linux)
import Foundation
import Testing
import TestSupport
@testable import Upstreams

/// Cached versions sorted by id, made from a listing as a mirror's manifest would hold them.
private struct Versions: CachedVersions {
    var entries: [(id: ItemID, etag: String)]
    /// Reported as still being read: the watcher's listing then reads the changed files ahead.
    var pretendsNotReady = false
    var isReady: Bool { !pretendsNotReady }
    var count: Int { entries.count }
    func position(of id: ItemID) -> Int? { entries.firstIndex { $0.id == id } }
    func id(at position: Int) -> ItemID { entries[position].id }
    func etag(at position: Int) -> String? { entries[position].etag }

    /// What a mirror caches after `listing` against `self`.
    func after(_ listing: Listing) -> Versions {
        var kept = listing.unchanged.map { entries[$0] }
        kept += listing.items.map { ($0.id, $0.etag ?? "") }
        return Versions(entries: kept.sorted { $0.id.description < $1.id.description })
    }
}

/// A listing reduced to what a fetch uses of it.
private struct Summary: Equatable, CustomStringConvertible {
    var unchanged: Set<String>
    var items: Set<String>
    init(_ listing: Listing, _ cached: Versions) {
        unchanged = Set(listing.unchanged.map { cached.id(at: $0).description })
        items = Set(listing.items.map { "\($0.id) \($0.etag ?? "-") \($0.lastModified.raw) \($0.body.map { $0.count } ?? -1)" })
    }
    var description: String { "unchanged \(unchanged.sorted()), items \(items.sorted())" }
}

@Suite("dir upstream: listing from the watcher's answer")
struct FolderWatcherTests {
    private func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    private func item(_ id: String, _ round: Int) -> String {
        "{\"id\": \"\(id)\", \"lastModified\": \"2025-01-01T00:00:\(String(format: "%02d", round % 60))Z\", \"round\": \(round)}\n"
    }

    /// The watcher's answer since `token`.
    private func ask(_ watcher: FolderWatcher, since token: String?) throws -> FolderChanges {
        try #require(FolderChanges(answer: watcher.answer(since: token)))
    }

    /// Lists from the watcher's answer and by a scan, against the same cached versions; both must
    /// agree (or fail alike). Returns the scan's listing.
    private func bothListings(_ upstream: DirectoryUpstream, _ changes: FolderChanges, _ cached: Versions,
                              sameWords: Bool = false, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Listing? {
        let scanned: Result<Listing, any Error>
        do { scanned = .success(try await upstream.list(collection: "items", since: nil, cached: cached)) } catch { scanned = .failure(error) }
        let watched: Result<Listing?, any Error> = Result { try upstream.list(collection: "items", cached: cached, changes: changes) }
        // The same when the files are read ahead, while the versions are "still being read".
        var notReady = cached
        notReady.pretendsNotReady = true
        let readAhead: Result<Listing?, any Error> = Result { try upstream.list(collection: "items", cached: notReady, changes: changes) }
        switch (watched, readAhead) {
        case (.success(let one?), .success(let other?)):
            #expect(Summary(one, cached) == Summary(other, cached), sourceLocation: sourceLocation)
        case (.success(nil), .success(nil)), (.failure, .failure):
            break
        default:
            Issue.record("watcher \(watched), read ahead \(readAhead)", sourceLocation: sourceLocation)
        }
        switch (scanned, watched) {
        case (.success(let scan), .success(let fromWatcher?)):
            #expect(Summary(fromWatcher, cached) == Summary(scan, cached), sourceLocation: sourceLocation)
            return scan
        case (.failure(let scanError), .failure(let watchError)):
            // With one problem, both name it in the same words; with several (two ids in two
            // folders each, a dangling link beside), each names the first it meets.
            if sameWords { #expect("\(watchError)" == "\(scanError)", sourceLocation: sourceLocation) }
            return nil
        default:
            Issue.record("scan \(scanned), watcher \(watched)", sourceLocation: sourceLocation)
            return nil
        }
    }

    /// Names that Swift's `String` takes for equal (NFC and NFD, the Kelvin sign and `K`) are
    /// distinct files: each item gets its own file's bytes, read ahead or not.
    @Test func canonicallyEquivalentNamesAreDistinctFiles() async throws {
        try await withScratch { path in
            let root = path + "/up"
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            let upstream = try DirectoryUpstream(UpstreamConfiguration(spec: "dir:" + root))
            let watcher = try FolderWatcher(root: root)
            let token = try ask(watcher, since: nil).token
            let names = ["caf\u{E9}", "cafe\u{301}", "\u{212A}", "K"]
            #expect(Set(names).count == 2, "String equality joins them")
            for (index, name) in names.enumerated() { try write("{\"n\": \(index)}", to: "\(root)/\(name).json") }
            let changes = try ask(watcher, since: token)
            for pretendsNotReady in [false, true] {
                let cached = Versions(entries: [], pretendsNotReady: pretendsNotReady)
                let listing = try #require(try upstream.list(collection: "items", cached: cached, changes: changes))
                let bodies = Dictionary(uniqueKeysWithValues: listing.items.map { ($0.id.bytes, $0.body.map { String(decoding: $0, as: UTF8.self) }) })
                #expect(bodies.count == 4)
                for (index, name) in names.enumerated() {
                    #expect(bodies[Array(name.utf8)] == "{\"n\": \(index)}", "\(name) read ahead: \(pretendsNotReady)")
                }
            }
        }
    }

    @Test(arguments: 1...6 as ClosedRange<UInt64>)
    func filesChangedAtRandomListTheSameFromTheAnswerAsByAScan(seed: UInt64) async throws {
        try await withScratch { path in
            let root = path + "/up"
            let shards = ["a", "b", "c", "b/deep"]
            for shard in shards { try FileManager.default.createDirectory(atPath: "\(root)/\(shard)", withIntermediateDirectories: true) }
            try FileManager.default.createDirectory(atPath: "\(root)/.hidden", withIntermediateDirectories: true)
            for index in 0..<24 { try write(item("i\(index)", 0), to: "\(root)/\(shards[index % 4])/i\(index).json") }
            let upstream = try DirectoryUpstream(UpstreamConfiguration(spec: "dir:" + root))
            let watcher = try FolderWatcher(root: root)
            var cached = Versions(entries: [])
            cached = cached.after(try await upstream.list(collection: "items", since: nil, cached: cached))
            var token = try ask(watcher, since: nil).token
            var generator = SplitMix(seed: seed)
            var answered = 0
            for round in 1...(ProcessInfo.processInfo.environment["TIDEMARK_WATCH_ROUNDS"].flatMap(Int.init) ?? 60) {
                for _ in 0..<(1 + generator.next(4)) {
                    let id = "i\(generator.next(30))"
                    let shard = shards[generator.next(shards.count)]
                    let file = "\(root)/\(shard)/\(id).json"
                    let existing = shards.map { "\(root)/\($0)/\(id).json" }.filter { FileManager.default.fileExists(atPath: $0) }
                    switch generator.next(9) {
                    case 0, 1:  // rewrite in place, or create
                        try write(item(id, round), to: existing.first ?? file)
                    case 2:  // delete
                        for path in existing { unlink(path) }
                    case 3:  // move to another shard
                        if let from = existing.first, from != file, !FileManager.default.fileExists(atPath: file) { rename(from, file) }
                    case 4:  // replace atomically (a temporary name, then rename), as editors save
                        try write(item(id, round), to: "\(root)/\(shard)/.tmp-\(id)")
                        if let target = existing.first ?? Optional(file) { rename("\(root)/\(shard)/.tmp-\(id)", target) }
                    case 5:  // metadata only: mode, then times
                        if let target = existing.first {
                            chmod(target, 0o600)
                            var times = [timespec(tv_sec: 1_700_000_000 + round, tv_nsec: 0), timespec(tv_sec: 1_700_000_000 + round, tv_nsec: 0)]
                            utimensat(AT_FDCWD, target, &times, 0)
                        }
                    case 6:  // a second file with the id (an error both ways), removed next round
                        if let from = existing.first, from != file { try FileManager.default.copyItem(atPath: from, toPath: file) }
                    case 7:  // a link to another item's file
                        if existing.isEmpty, let target = shards.map({ "\(root)/\($0)/i\(generator.next(30)).json" })
                            .first(where: { FileManager.default.fileExists(atPath: $0) && !$0.hasSuffix("/\(id).json") }) {
                            symlink(target, file)
                        }
                    default:  // not items: a hidden folder's file, another extension
                        try write("x", to: "\(root)/.hidden/\(id).json")
                        try write("x", to: "\(root)/\(shard)/\(id).txt")
                    }
                }
                let changes = try ask(watcher, since: token)
                #expect(changes.names != nil, "no folder changed: the answer must not ask for a scan")
                if let listing = try await bothListings(upstream, changes, cached) {
                    cached = cached.after(listing)
                    token = changes.token
                    answered += 1
                } else {
                    // Two files for an id, or a link whose target went: both listings failed alike; those files go.
                    for shard in shards {
                        for name in try FileManager.default.contentsOfDirectory(atPath: "\(root)/\(shard)") where name.hasSuffix(".json") {
                            let others = shards.filter { $0 != shard && FileManager.default.fileExists(atPath: "\(root)/\($0)/\(name)") }
                            var info = stat()
                            let dangling = stat("\(root)/\(shard)/\(name)", &info) != 0
                            if !others.isEmpty || dangling { unlink("\(root)/\(shard)/\(name)") }
                        }
                    }
                }
            }
            #expect(answered > 20)
        }
    }

    @Test func aFolderCreatedRemovedOrRenamedAsksForAScanThenChangesResume() async throws {
        try await withScratch { path in
            let root = path + "/up"
            try FileManager.default.createDirectory(atPath: root + "/a", withIntermediateDirectories: true)
            try write(item("x", 1), to: root + "/a/x.json")
            let upstream = try DirectoryUpstream(UpstreamConfiguration(spec: "dir:" + root))
            let watcher = try FolderWatcher(root: root)
            let first = try ask(watcher, since: nil)
            #expect(first.names == nil, "no token: scan")
            #expect(try ask(watcher, since: "0:0").names == nil, "another watcher's token: scan")
            #expect(try ask(watcher, since: first.token).names == [])

            try FileManager.default.createDirectory(atPath: root + "/b", withIntermediateDirectories: true)
            try write(item("y", 1), to: root + "/b/y.json")
            let afterFolder = try ask(watcher, since: first.token)
            #expect(afterFolder.names == nil, "a new folder: its files were not watched a moment")
            #expect(afterFolder.rescanReason == "folder 'b' was created, removed or renamed")
            #expect(first.rescanReason == "the first fetch with a watcher")
            #expect(try ask(watcher, since: "0:0").rescanReason == "it started after the last fetch")
            // The folder is watched from then on: a file written in it is a change.
            try write(item("y", 2), to: root + "/b/y.json")
            let resumed = try ask(watcher, since: afterFolder.token)
            #expect(resumed.names == [FolderChanges.Name(name: Array("y.json".utf8), folders: [Array("b".utf8)])])

            #expect(rename(root + "/b", root + "/c") == 0)
            let renamed = try ask(watcher, since: resumed.token)
            #expect(renamed.names == nil)
            try write(item("x", 2), to: root + "/c/x.json")  // an id in two folders, one of them renamed
            let both = try ask(watcher, since: renamed.token)
            #expect(try await bothListings(upstream, both, Versions(entries: []), sameWords: true) == nil, "both fail alike")
            #expect(both.names?.first { $0.name == Array("x.json".utf8) }?.folders.sorted { $0.lexicographicallyPrecedes($1) }
                    == [Array("a".utf8), Array("c".utf8)])
        }
    }

    /// Lists from the answer since `token` and by a scan, expects them to agree, and returns the
    /// answer's token.
    private func agree(_ upstream: DirectoryUpstream, _ watcher: FolderWatcher, since token: String, _ cached: inout Versions,
                       sourceLocation: SourceLocation = #_sourceLocation) async throws -> String {
        let changes = try ask(watcher, since: token)
        #expect(changes.names != nil, "the answer must stand in for a scan", sourceLocation: sourceLocation)
        if let listing = try await bothListings(upstream, changes, cached, sameWords: true, sourceLocation: sourceLocation) {
            cached = cached.after(listing)
        }
        return changes.token
    }

    /// A watcher on a fresh folder `up` with shards `a` and `b`, an item in each, and the cached
    /// versions of a first scan.
    private func twoShards(_ path: String) async throws -> (String, DirectoryUpstream, FolderWatcher, Versions, String) {
        let root = path + "/up"
        for shard in ["a", "b"] { try FileManager.default.createDirectory(atPath: "\(root)/\(shard)", withIntermediateDirectories: true) }
        try write(item("x", 1), to: root + "/a/x.json")
        try write(item("y", 1), to: root + "/b/y.json")
        let upstream = try DirectoryUpstream(UpstreamConfiguration(spec: "dir:" + root))
        let watcher = try FolderWatcher(root: root)
        let cached = Versions(entries: []).after(try await upstream.list(collection: "items", since: nil, cached: Versions(entries: [])))
        return (root, upstream, watcher, cached, try ask(watcher, since: nil).token)
    }

    @Test func aFolderTouchedOrChmoddedStaysWatched() async throws {
        try await withScratch { path in
            var (root, upstream, watcher, cached, token) = try await twoShards(path)
            #expect(chmod(root + "/a", 0o700) == 0)
            var times = [timespec(tv_sec: 1_700_000_000, tv_nsec: 0), timespec(tv_sec: 1_700_000_000, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, root + "/b", &times, 0) == 0)
            let touched = try ask(watcher, since: token)
            #expect(touched.names == nil, "a folder's mode decides whether it can be read: scan once")
            token = touched.token
            #expect(chmod(root, 0o755) == 0)
            let rootTouched = try ask(watcher, since: token)
            #expect(rootTouched.names == nil, "the same for the watched folder itself")
            token = rootTouched.token
            try write(item("x", 2), to: root + "/a/x.json")
            try write(item("z", 1), to: root + "/b/z.json")
            #expect(unlink(root + "/b/y.json") == 0)
            token = try await agree(upstream, watcher, since: token, &cached)
            #expect(cached.entries.map(\.id.description) == ["x", "z"])
        }
    }

    @Test func afterAnOverflowTheFoldersAreReadAgain() async throws {
        try await withScratch { path in
            var (root, upstream, watcher, cached, token) = try await twoShards(path)
            // The queue is filled while the watcher reads nothing (two names in turn, so that no
            // event merges with the one before it), then the move's events are dropped: the watcher
            // reads its folders again instead of keeping x in a.
            let limit = Int((try? String(contentsOfFile: "/proc/sys/fs/inotify/max_queued_events", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 16_384
            // One event a call: a time change of one of two files in turn, twice the queue's length.
            for name in ["0", "1"] { try write(name, to: root + "/a/\(name).txt") }
            for round in 0..<(2 * limit + 16) {
                var times = [timespec(tv_sec: 1_700_000_000 + round, tv_nsec: 0), timespec(tv_sec: 1_700_000_000 + round, tv_nsec: 0)]
                #expect(utimensat(AT_FDCWD, root + "/a/\(round % 2).txt", &times, 0) == 0)
            }
            #expect(rename(root + "/a/x.json", root + "/b/x.json") == 0)
            let overflowed = try ask(watcher, since: token)
            #expect(watcher.lastLoss == "inotify's event queue overflowed")
            #expect(overflowed.names == nil)
            cached = cached.after(try await upstream.list(collection: "items", since: nil, cached: cached))
            try write(item("x", 2), to: root + "/b/x.json")
            token = try await agree(upstream, watcher, since: overflowed.token, &cached)
            #expect(cached.entries.map(\.id.description) == ["x", "y"], "x moved, not deleted")
            try FileManager.default.createDirectory(atPath: root + "/c", withIntermediateDirectories: true)
            token = try ask(watcher, since: token).token
            try write(item("w", 1), to: root + "/c/w.json")
            token = try await agree(upstream, watcher, since: token, &cached)
            #expect(cached.entries.map(\.id.description) == ["w", "x", "y"])
        }
    }

    /// Swaps two entries in one call, as `mv --exchange` does (glibc's `renameat2`, looked up at
    /// run time: Swift's Glibc module leaves it out); false where the kernel or file system cannot.
    private func exchange(_ one: String, _ other: String) -> Bool {
        typealias RenameAt2 = @convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32
        guard let symbol = dlsym(nil, "renameat2") else { return false }
        return unsafeBitCast(symbol, to: RenameAt2.self)(AT_FDCWD, one, AT_FDCWD, other, 2 /* RENAME_EXCHANGE */) == 0
    }

    @Test func filesAndFoldersSwappedInOneCallStayKnown() async throws {
        try await withScratch { path in
            var (root, upstream, watcher, cached, token) = try await twoShards(path)
            try write(item("z", 1), to: root + "/a/z.json")
            token = try await agree(upstream, watcher, since: token, &cached)
            try #require(exchange(root + "/a/x.json", root + "/a/z.json"))
            token = try await agree(upstream, watcher, since: token, &cached)
            #expect(cached.entries.map(\.id.description) == ["x", "y", "z"])
            try #require(exchange(root + "/a", root + "/b"))
            token = try ask(watcher, since: token).token  // folders moved: a scan
            cached = cached.after(try await upstream.list(collection: "items", since: nil, cached: cached))
            try write(item("y", 2), to: root + "/a/y.json")
            try write(item("x", 2), to: root + "/b/x.json")
            token = try await agree(upstream, watcher, since: token, &cached)
            #expect(cached.entries.map(\.id.description) == ["x", "y", "z"], "both folders still watched")
        }
    }

    @Test func aFolderThatStopsBeingAMirrorIsWatched() async throws {
        try await withScratch { path in
            var (root, upstream, watcher, cached, token) = try await twoShards(path)
            for marker in [".git", ".tidemark"] {
                try FileManager.default.createDirectory(atPath: root + "/b/" + marker, withIntermediateDirectories: true)
            }
            token = try ask(watcher, since: token).token
            cached = cached.after(try await upstream.list(collection: "items", since: nil, cached: cached))
            #expect(cached.entries.map(\.id.description) == ["x"], "a mirror's files are not listed")
            try write(item("y", 2), to: root + "/b/y.json")
            token = try await agree(upstream, watcher, since: token, &cached)
            try FileManager.default.removeItem(atPath: root + "/b/.tidemark")
            token = try ask(watcher, since: token).token
            cached = cached.after(try await upstream.list(collection: "items", since: nil, cached: cached))
            try write(item("y", 3), to: root + "/b/y.json")
            try write(item("v", 1), to: root + "/b/v.json")
            token = try await agree(upstream, watcher, since: token, &cached)
            #expect(cached.entries.map(\.id.description) == ["v", "x", "y"])
        }
    }

    @Test func aCollectionFolderThatIsAMirrorIsScanned() async throws {
        try await withScratch { path in
            let root = path + "/up"
            for folder in ["a/.git", "a/.tidemark", "b"] {
                try FileManager.default.createDirectory(atPath: "\(root)/\(folder)", withIntermediateDirectories: true)
            }
            try write(item("x", 1), to: root + "/a/x.json")
            let upstream = try DirectoryUpstream(UpstreamConfiguration(spec: "dir:" + root, collections: ["a", "b"]))
            let watcher = try FolderWatcher(root: root)
            let cached = Versions(entries: []).after(try await upstream.list(collection: "a", since: nil, cached: Versions(entries: [])))
            #expect(cached.entries.map(\.id.description) == ["x"], "a scan lists a collection's folder whatever it is")
            let token = try ask(watcher, since: nil).token
            try write(item("x", 2), to: root + "/a/x.json")
            let changes = try ask(watcher, since: token)
            #expect(try upstream.list(collection: "a", cached: cached, changes: changes) == nil, "the watcher does not read a mirror")
            #expect(try upstream.list(collection: "b", cached: Versions(entries: []), changes: changes) != nil)
        }
    }

    @Test func aFolderPutInTheRootsPlaceIsAnotherFolder() async throws {
        try await withScratch { path in
            let (root, _, watcher, _, _) = try await twoShards(path + "/data")
            let root2 = DirectoryUpstream.realPath(root)
            #expect(try ask(watcher, since: nil).watches(root2))
            #expect(rename(path + "/data", path + "/data.old") == 0)
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            #expect(try ask(watcher, since: nil).watches(root2) == false)
        }
    }

    @Test func aWatcherThatTakesNoRequestsDoesNotHoldAFetch() async throws {
        try await withScratch { path in
            let socket = path + "/watch.sock"
            let (listener, _) = try UnixSocket.listen(at: socket)
            defer { close(listener) }
            // Nobody accepts (a watcher stopped by Ctrl-Z): once the backlog is full, connecting
            // fails at once instead of waiting.
            let started = Date()
            var connected: [Int32] = []
            var refused = 0
            for _ in 0..<40 {
                do { connected.append(try UnixSocket.connect(to: socket)) } catch { refused += 1 }
            }
            connected.forEach { close($0) }
            #expect(refused > 0)
            #expect(Date().timeIntervalSince(started) < 5)
        }
    }

    @Test func linksAreAnsweredEveryTimeAsTheirTargetsMayChange() async throws {
        try await withScratch { path in
            let root = path + "/up"
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            try write(item("x", 1), to: root + "/x.json")
            symlink(root + "/x.json", root + "/alias.json")
            let watcher = try FolderWatcher(root: root)
            let token = try ask(watcher, since: nil).token
            #expect(try ask(watcher, since: token).names?.map { String(decoding: $0.name, as: UTF8.self) } == ["alias.json"])
        }
    }

    @Test func aFolderOnANetworkFileSystemIsNotWatched() {
        let mounts = """
            /dev/vda / ext4 rw,relatime 0 0
            server:/export /mnt/shared nfs4 rw,relatime 0 0
            sshfs#me@host: /mnt/my\\040files fuse.sshfs rw 0 0
            tmpfs /mnt/shared/local tmpfs rw 0 0
            """
        #expect(FolderWatcher.networkFileSystem("/home/me/templates", mounts: mounts) == nil)
        #expect(FolderWatcher.networkFileSystem("/mnt/shared/templates", mounts: mounts) == "nfs4")
        #expect(FolderWatcher.networkFileSystem("/mnt/shared", mounts: mounts) == "nfs4")
        #expect(FolderWatcher.networkFileSystem("/mnt/sharedother", mounts: mounts) == nil)
        #expect(FolderWatcher.networkFileSystem("/mnt/my files/t", mounts: mounts) == "fuse.sshfs")
        #expect(FolderWatcher.networkFileSystem("/mnt/shared/local/t", mounts: mounts) == nil, "the deepest mount counts")
    }

    @Test func answersComeOverASocketAtAPathLongerThanSocketsTake() async throws {
        try await withScratch { path in
            let root = path + "/up"
            let state = path + "/" + String(repeating: "deep/", count: 24)
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
            let socket = state + "watch.sock"
            #expect(socket.utf8.count > 108)
            #expect(throws: WatcherUnavailable.self) { try FolderChanges.ask(socket: socket, since: nil) }
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            let watcher = try FolderWatcher(root: root)
            let stop = ends[0]
            let served = Thread {
                try? watcher.serve(at: socket, stop: stop) {}
            }
            served.start()
            try await waitUntil { FileManager.default.fileExists(atPath: socket) }
            var info = stat()
            #expect(lstat(socket, &info) == 0 && info.st_mode & 0o777 == 0o600, "owner only")
            let empty = try FolderChanges.ask(socket: socket, since: nil)
            try write(item("x", 1), to: root + "/x.json")
            let changed = try FolderChanges.ask(socket: socket, since: empty.token)
            #expect(changed.root == DirectoryUpstream.realPath(root))
            #expect(changed.names == [FolderChanges.Name(name: Array("x.json".utf8), folders: [[]])])
            #expect(Glibc.write(ends[1], "x", 1) == 1)
            try await waitUntil { !FileManager.default.fileExists(atPath: socket) }
        }
    }
}

/// A small deterministic generator (SplitMix64).
private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next(_ bound: Int) -> Int {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return Int((z ^ (z >> 31)) % UInt64(bound))
    }
}
#endif
