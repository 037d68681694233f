import Foundation
import Testing
import TestSupport
@testable import Upstreams

/// Cached versions held in two arrays, sorted by id, as a mirror's manifest would give them.
private struct Cached: CachedVersions {
    var ids: [ItemID]
    var etags: [String]
    var count: Int { ids.count }
    func position(of id: ItemID) -> Int? { ids.firstIndex(of: id) }
    func id(at position: Int) -> ItemID { ids[position] }
    func etag(at position: Int) -> String? { etags[position] }
}

/// Cached versions still being read: not ready until an adapter asks for them with `loaded()`
/// (which may fail), so a listing reads every folder before it compares any.
private final class LateCached: CachedVersions, @unchecked Sendable {
    let versions: Cached
    let failure: (any Error)?
    private let lock = NSLock()
    private var asked = false

    init(_ versions: Cached, failure: (any Error)? = nil) {
        self.versions = versions
        self.failure = failure
    }

    var isReady: Bool { lock.withLock { asked } }
    func loaded() throws -> any CachedVersions {
        lock.withLock { asked = true }
        if let failure { throw failure }
        return versions
    }
    var count: Int { versions.count }
    func position(of id: ItemID) -> Int? { versions.position(of: id) }
    func id(at position: Int) -> ItemID { versions.id(at: position) }
    func etag(at position: Int) -> String? { versions.etag(at: position) }
}

@Suite("dir upstream: listing against cached versions")
struct DirectoryUpstreamTests {
    private func write(_ text: String, to path: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    /// A listing whose task is cancelled (a signal in the CLI) stops scanning and reading,
    /// sharded or not: it throws `CancellationError` instead of reading every file first.
    @Test(arguments: [true, false])
    func aCancelledListingStops(_ sharded: Bool) async throws {
        try await withScratch { path in
            for index in 0..<200 {
                try write(#"{"n": \#(index)}"#, to: path + "/up/" + (sharded ? "s\(index % 8)/" : "") + "i\(index).json")
            }
            let upstream = try DirectoryUpstream(UpstreamConfiguration(spec: "dir:\(path)/up"))
            let task = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await upstream.list(collection: "items", since: nil, cached: .none)
            }
            await #expect(throws: CancellationError.self) { _ = try await task.value }
        }
    }

    /// A file dated past 2262 (nanoseconds since 1970 past `Int64`) is listed, with a signature
    /// of its own.
    @Test func aFileDatedPast2262IsListed() async throws {
        try await withScratch { path in
            let root = path + "/up"
            try write("{\"id\": \"far\"}", to: root + "/far.json")
            try write("{\"id\": \"near\"}", to: root + "/near.json")
            var times = [timespec(tv_sec: 10_413_792_000, tv_nsec: 0), timespec(tv_sec: 10_413_792_000, tv_nsec: 0)]  // 2300
            #expect(utimensat(AT_FDCWD, root + "/far.json", &times, 0) == 0)
            let upstream = try DirectoryUpstream(UpstreamConfiguration(spec: "dir:" + root))
            let listing = try await upstream.list(collection: "items", since: nil, cached: Cached(ids: [], etags: []))
            #expect(listing.items.map(\.id.description).sorted() == ["far", "near"])
            #expect(listing.items.first { $0.id.description == "far" }?.lastModified.raw == "2300-01-01T00:00:00Z")
            #expect(Set(listing.items.map(\.etag)).count == 2)
        }
    }

    /// A listed file swapped, between the listing and the read, for a link to a file outside the
    /// upstream folder (or for another file) is not read: it was read through the link and its
    /// outside contents stored. Nor is a file over 32 MiB, which was read whole.
    /// `lastModified` may be a date alone or a Unix time (a JSON number, as JavaScript's
    /// `Date.now()` writes it); `null` is none: the file's modification time.
    @Test func lastModifiedTakesDatesUnixTimesAndNull() throws {
        let mtime = Timestamp(seconds: 1_600_000_000)
        func version(_ json: String) throws -> Timestamp {
            try DirectoryUpstream.version(of: Data(json.utf8), collection: "items", id: ItemID("a"), fallback: mtime)
        }
        #expect(try version(#"{"lastModified": null}"#) == mtime && version("{}") == mtime)
        #expect(try version(#"{"lastModified": 1704067200000}"#) == Timestamp("2024-01-01T00:00:00Z"))
        #expect(try version(#"{"lastModified": "2024-01-01"}"#).raw == "2024-01-01")
        #expect { try version(#"{"lastModified": true}"#) } throws: { error in
            (error as? UpstreamError)?.description.hasPrefix("items/a: field 'lastModified' is a boolean, not a date-time (it takes an ISO 8601") == true
        }
    }

    @Test func aFileSwappedAfterTheListingIsNotReadThroughALink() async throws {
        try await withScratch { path in
            try write(#"{"lastModified": "2024-01-01T00:00:00Z", "n": 1}"#, to: "\(path)/up/a.json")
            try write(#"{"secret": "OUTSIDE"}"#, to: "\(path)/outside/s.json")
            let upstream = try DirectoryUpstream(UpstreamConfiguration(spec: "dir:\(path)/up"))
            let listed = try await upstream.list(collection: "items", since: nil, cached: .none).items[0]
            let withoutBody = ListedItem(id: listed.id, lastModified: listed.lastModified, etag: listed.etag, body: nil,
                                         location: listed.location)
            var listedStat = stat()
            #expect(lstat("\(path)/up/a.json", &listedStat) == 0)
            let file = DirectoryUpstream.ListedFile(id: listed.id, path: "\(path)/up/a.json", info: listedStat, position: nil)
            try FileManager.default.removeItem(atPath: "\(path)/up/a.json")
            try FileManager.default.createSymbolicLink(atPath: "\(path)/up/a.json", withDestinationPath: "../outside/s.json")
            for attempt in [{ () async throws -> Data in
                guard case .body(let data, _) = try await upstream.fetch(collection: "items", item: withoutBody, cachedETag: nil) else { return Data() }
                return data
            }, { () async throws -> Data in
                try DirectoryUpstream.read([file][...], collection: "items")[0].get().data
            }] {
                await #expect { _ = try await attempt() } throws: { error in
                    guard case UpstreamError.goneSinceListed("items", "a", let reason) = error else { return false }
                    return reason.contains("changed after it was listed (written to, or replaced)")
                }
            }
            // Removed since it was listed: gone too, which the engine leaves for the next run.
            try FileManager.default.removeItem(atPath: "\(path)/up/a.json")
            await #expect { _ = try await upstream.fetch(collection: "items", item: withoutBody, cachedETag: nil) } throws: { error in
                guard case UpstreamError.goneSinceListed("items", "a", let reason) = error else { return false }
                return reason.contains("was removed after it was listed")
            }
            #expect(DirectoryUpstream.isItemError(UpstreamError.goneSinceListed(collection: "items", item: "a", reason: "")))
            // A file over 32 MiB: its item's error, naming the file.
            _ = FileManager.default.createFile(atPath: "\(path)/up/big.json", contents: nil)
            try FileHandle(forWritingAtPath: "\(path)/up/big.json")!.truncate(atOffset: UInt64(DirectoryUpstream.maxFileBytes + 1))
            let big = try await upstream.list(collection: "items", since: nil, cached: .none).items
            #expect(big.count == 1 && big[0].body == nil)
            await #expect { _ = try await upstream.fetch(collection: "items", item: big[0], cachedETag: nil) } throws: { error in
                guard case UpstreamError.malformedItem(_, _, let reason) = error else { return false }
                return reason.contains("more than the 32 MiB an item may hold")
            }
        }
    }

    @Test func unchangedFilesAreReportedByPositionAndOnlyTheOthersAreRead() async throws {
        try await withScratch { path in
            for (shard, id) in [("a", "one"), ("a", "two"), ("b", "three")] {
                try write(#"{"lastModified": "2024-01-01T00:00:00Z"}"#, to: "\(path)/up/\(shard)/\(id).json")
            }
            let upstream = try DirectoryUpstream(UpstreamConfiguration(spec: "dir:\(path)/up"))
            let first = try await upstream.list(collection: "items", since: nil, cached: .none)
            #expect(first.items.map(\.id.description) == ["one", "two", "three"] && first.unchanged.isEmpty)
            #expect(first.requests == 3)

            // The mirror now holds all three, in id order, with the signatures just listed.
            let sorted = first.items.sorted { $0.id < $1.id }
            var cached = Cached(ids: sorted.map(\.id), etags: sorted.map { $0.etag! })
            try write(#"{"lastModified": "2024-02-01T00:00:00Z", "more": 1}"#, to: "\(path)/up/a/two.json")
            try write(#"{"lastModified": "2024-03-01T00:00:00Z"}"#, to: "\(path)/up/b/four.json")
            let second = try await upstream.list(collection: "items", since: nil, cached: cached)
            #expect(second.items.map(\.id.description) == ["two", "four"])
            #expect(second.items.first?.lastModified == Timestamp("2024-02-01T00:00:00Z"))
            #expect(second.unchanged.map { cached.ids[$0].description }.sorted() == ["one", "three"])
            #expect(second.requests == 2, "only the changed and the new file are read")

            // Versions that are ready only once the folders are read give the same listing; when
            // they cannot be read, that is the error.
            let late = try await upstream.list(collection: "items", since: nil, cached: LateCached(cached))
            #expect(late.items == second.items && late.unchanged.sorted() == second.unchanged.sorted())
            struct Unreadable: Error {}
            await #expect(throws: Unreadable.self) {
                _ = try await upstream.list(collection: "items", since: nil, cached: LateCached(cached, failure: Unreadable()))
            }

            // A signature that is not the file's (another inode, say) makes it read again.
            cached.etags[cached.ids.firstIndex(of: ItemID("one"))!] = "1-2-3"
            let third = try await upstream.list(collection: "items", since: nil, cached: cached)
            #expect(third.items.map(\.id.description).contains("one"))
        }
    }

    /// More changed files than one read chunk: they are read on all cores, a chunk at a time, and
    /// come back in walk order with their versions; the first bad file in that order is the error,
    /// also in a later chunk.
    @Test func manyChangedFilesAreReadInChunksAndTakenInOrder() async throws {
        try await withScratch { path in
            let shards = "abcdefghijk".map(String.init)
            var expected: [(String, String)] = []
            for (s, shard) in shards.enumerated() {
                for n in 0..<100 {
                    let id = String(format: "item-%04d", s * 100 + n)
                    let date = String(format: "2024-%02d-%02dT00:00:00Z", 1 + s, 1 + n % 28)
                    try write(#"{"lastModified": "\#(date)"}"#, to: "\(path)/up/\(shard)/\(id).json")
                    expected.append((id, date))
                }
            }
            #expect(expected.count > DirectoryUpstream.readChunk)
            let upstream = try DirectoryUpstream(UpstreamConfiguration(spec: "dir:\(path)/up"))
            let listing = try await upstream.list(collection: "items", since: nil, cached: .none)
            #expect(listing.requests == expected.count)
            #expect(listing.items.map(\.id.description) == expected.map(\.0))
            #expect(listing.items.map(\.lastModified) == expected.map { Timestamp($0.1)! })

            // A file that does not parse is listed without a body, and fails as its item when it
            // is fetched (naming its file), so the others are still stored.
            try write("{ not json", to: "\(path)/up/k/item-1050.json")
            try write("[]", to: "\(path)/up/c/item-0207.json")
            let spoiled = try await upstream.list(collection: "items", since: nil, cached: .none)
            #expect(spoiled.items.count == expected.count)
            for (id, shard, reason) in [("item-1050", "k", "not valid JSON: expected a string key at byte 2"), ("item-0207", "c", "not a JSON object")] {
                let item = try #require(spoiled.items.first { $0.id.description == id })
                #expect(item.body == nil)
                await #expect { _ = try await upstream.fetch(collection: "items", item: item, cachedETag: nil) } throws: {
                    guard case .malformedItem(_, let named, let why) = $0 as? UpstreamError else { return false }
                    return named == id && why == "\(reason) (in \(path)/up/\(shard)/\(id).json)"
                }
            }
        }
    }

    @Test func anIdInTwoShardsNamesBothFilesWhetherCachedOrNot() async throws {
        try await withScratch { path in
            try write("{}", to: "\(path)/up/a/same.json")
            let upstream = try DirectoryUpstream(UpstreamConfiguration(spec: "dir:\(path)/up"))
            let first = try await upstream.list(collection: "items", since: nil, cached: .none)
            let cached = Cached(ids: [ItemID("same")], etags: [first.items[0].etag!])
            try write("{}", to: "\(path)/up/b/same.json")
            for versions in [Cached(ids: [], etags: []), cached] {
                do {
                    _ = try await upstream.list(collection: "items", since: nil, cached: versions)
                    Issue.record("a repeated id was accepted")
                } catch UpstreamError.duplicateFile(let collection, let item) {
                    #expect(collection == "items")
                    #expect(item == "same (\(path)/up/a/same.json and \(path)/up/b/same.json)")
                    #expect(UpstreamError.duplicateFile(collection: collection, item: item).description.hasSuffix(
                        "two files give this id (a dir upstream's id is the file name without .json, in whichever subfolder); rename or remove one"))
                }
            }
        }
    }

    /// A file name with control characters reaches messages quoted like git quotes paths, so
    /// nothing in it can drive the terminal: a bad item, and an id in two shards.
    @Test func messagesQuoteFileNamesWithControlCharacters() async throws {
        try await withScratch { path in
            let evil = "evil\n\u{1B}[31mRED\u{1B}[0m"
            let quoted = #""evil\n\033[31mRED\033[0m""#
            try write("{ not json", to: "\(path)/up/\(evil).json")
            let upstream = try DirectoryUpstream(UpstreamConfiguration(spec: "dir:\(path)/up"))
            let item = try #require(try await upstream.list(collection: "items", since: nil, cached: .none).items.first)
            await #expect { _ = try await upstream.fetch(collection: "items", item: item, cachedETag: nil) } throws: {
                guard let error = $0 as? UpstreamError, case .malformedItem(_, let item, _) = error else { return false }
                let file = "\"" + path + #"/up/evil\n\033[31mRED\033[0m.json""#
                return item == quoted && error.description == "items/\(quoted): not valid JSON: expected a string key at byte 2 (in \(file))"
            }
            try write("{}", to: "\(path)/up/\(evil).json")
            try write("{}", to: "\(path)/up/a/\(evil).json")
            await #expect { _ = try await upstream.list(collection: "items", since: nil, cached: .none) } throws: {
                guard let error = $0 as? UpstreamError, case .duplicateFile = error else { return false }
                let text = error.description
                return text.hasPrefix("items/\(quoted) (") && text.contains(#"/up/evil\n\033[31mRED\033[0m.json""#)
                    && !text.unicodeScalars.contains { $0.value < 32 }
            }
        }
    }

    /// The default collection is the folder itself, whatever it holds: a subfolder named `items`
    /// is one more shard (what was listed stays listed); named collections are their subfolders.
    @Test func theFolderIsTheDefaultCollectionEvenWithAnItemsSubfolder() async throws {
        try await withScratch { path in
            for id in ["t1", "t2"] { try write("{}", to: "\(path)/up/\(id).json") }
            let upstream = try DirectoryUpstream(UpstreamConfiguration(spec: "dir:\(path)/up"))
            try write("{}", to: "\(path)/up/items/x.json")
            let listing = try await upstream.list(collection: "items", since: nil, cached: .none)
            #expect(listing.items.map(\.id.description) == ["t1", "t2", "x"])
            let explicit = try DirectoryUpstream(UpstreamConfiguration(spec: "dir:\(path)/up", collections: ["items"]))
            #expect(try await explicit.list(collection: "items", since: nil, cached: .none).items == listing.items)

            try write("{}", to: "\(path)/up/drafts/d.json")
            let named = try DirectoryUpstream(UpstreamConfiguration(spec: "dir:\(path)/up", collections: ["items", "drafts"]))
            #expect(try await named.list(collection: "items", since: nil, cached: .none).items.map(\.id.description) == ["x"])
            #expect(try await named.list(collection: "drafts", since: nil, cached: .none).items.map(\.id.description) == ["d"])
        }
    }

    /// A mirror inside the folder (a subfolder holding `.git` and `.tidemark`) is not scanned:
    /// its files are a copy of the items; a subfolder with only one of them is a shard. The
    /// folder, and any path below it (through links too), counts as inside.
    @Test func aMirrorInsideTheFolderIsSkippedAndCountsAsInside() async throws {
        try await withScratch { path in
            try write("{}", to: "\(path)/up/a.json")
            try write("{}", to: "\(path)/up/cache/items/a.json")
            try write("[core]", to: "\(path)/up/cache/.git/config")
            try write("", to: "\(path)/up/cache/.tidemark/items.manifest")
            try write("{}", to: "\(path)/up/shard/.git/x.json")
            try write("{}", to: "\(path)/up/shard/b.json")
            let upstream = try DirectoryUpstream(UpstreamConfiguration(spec: "dir:\(path)/up"))
            let listing = try await upstream.list(collection: "items", since: nil, cached: .none)
            #expect(listing.items.map(\.id.description) == ["a", "b"])

            try FileManager.default.createSymbolicLink(atPath: "\(path)/link", withDestinationPath: "\(path)/up")
            for inside in ["up", "up/", "up/cache", "up/new/deeper", "link/new", "up/../up/x"] {
                #expect(upstream.contains("\(path)/\(inside)"), "\(inside)")
            }
            for outside in ["", "upper", "up/..", "other/up"] {
                #expect(!upstream.contains("\(path)/\(outside)"), "\(outside)")
            }
        }
    }

    /// Creates an empty file, or a folder, whose path is given as bytes (not necessarily UTF-8).
    private func create(_ path: [UInt8], folder: Bool = false) {
        (path + [0]).withUnsafeBufferPointer {
            let cPath = UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self)
            if folder {
                #expect(mkdir(cPath, 0o755) == 0)
            } else {
                let fd = open(cPath, O_CREAT | O_WRONLY, 0o644)
                #expect(fd >= 0)
                close(fd)
            }
        }
    }

    /// Only names that become ids or paths must be UTF-8: other files, and anything in a hidden
    /// folder, are ignored whatever their names; an item file or a shard so named is an error
    /// naming it quoted.
    @Test func onlyItemAndShardNamesMustBeUTF8() async throws {
        try await withScratch { path in
            try write("{}", to: "\(path)/up/a/fine.json")
            try write("{}", to: "\(path)/up/.hidden/x.json")
            create(Array("\(path)/up/README".utf8) + [0xFF] + Array(".txt".utf8))
            create(Array("\(path)/up/a/notes-".utf8) + [0xFE])
            create(Array("\(path)/up/.hidden/bad-".utf8) + [0xFF] + Array(".json".utf8))
            create(Array("\(path)/up/.hidden/dir-".utf8) + [0xFF], folder: true)
            let upstream = try DirectoryUpstream(UpstreamConfiguration(spec: "dir:\(path)/up"))
            let listing = try await upstream.list(collection: "items", since: nil, cached: .none)
            #expect(listing.items.map(\.id.description) == ["fine"])

            for (name, what) in [("a/bad-", "an item file"), ("shard-", "a folder")] {
                let bytes = Array("\(path)/up/\(name)".utf8) + [0xFF, 0x1B] + (what == "a folder" ? [] : Array(".json".utf8))
                create(bytes, folder: what == "a folder")
                do {
                    _ = try await upstream.list(collection: "items", since: nil, cached: .none)
                    Issue.record("\(what) whose name is not UTF-8 was accepted")
                } catch UpstreamError.unreachable(let message) {
                    let quoted = #"""# + "\(path)/up/\(name)" + #"\377\033"# + (what == "a folder" ? "" : ".json") + #"""#
                    #expect(message.contains("holds \(what) whose name is not UTF-8: \(quoted)"), "\(message)")
                }
                #expect((bytes + [0]).withUnsafeBufferPointer {
                    remove(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self))
                } == 0)
            }
        }
    }

    /// macOS's `._x.json` AppleDouble files (on SMB shares, FAT drives) are not items; a `._`
    /// file holding JSON is.
    @Test func appleDoubleFilesAreSkipped() async throws {
        try await withScratch { path in
            try write(#"{"id": "x"}"#, to: "\(path)/up/x.json")
            try Data([0x00, 0x05, 0x16, 0x07, 0x00, 0x02, 0x00, 0x00] + Array("Mac OS X        ".utf8))
                .write(to: URL(fileURLWithPath: "\(path)/up/._x.json"))
            try write(#"{"id": "._y"}"#, to: "\(path)/up/._y.json")
            let upstream = try DirectoryUpstream(UpstreamConfiguration(spec: "dir:\(path)/up"))
            let listing = try await upstream.list(collection: "items", since: nil, cached: .none)
            #expect(listing.items.map(\.id.description).sorted() == ["._y", "x"])
        }
    }

    @Test func statSignaturesCompareAsNumbers() {
        var info = stat()
        info.st_size = 1003
        info.st_mtim = timespec(tv_sec: 1_700_000_000, tv_nsec: 5)
        info.st_ino = 42
        info.st_ctim = timespec(tv_sec: 1_700_000_100, tv_nsec: 7)
        let signature = StatSignature(info)
        // 16 hex digits, the same in every version (mirrors keep them).
        #expect(signature.description == "7d3d6ce57aa28f75")
        #expect(signature.matches(signature.description.utf8))
        for (index, changed) in [StatSignature(size: 1004, mtime: signature.mtime, inode: 42, ctime: signature.ctime),
                                 StatSignature(size: 1003, mtime: signature.mtime + 1, inode: 42, ctime: signature.ctime),
                                 StatSignature(size: 1003, mtime: signature.mtime, inode: 43, ctime: signature.ctime),
                                 StatSignature(size: 1003, mtime: signature.mtime, inode: 42, ctime: signature.ctime + 1)].enumerated() {
            #expect(!signature.matches(changed.description.utf8), "field \(index)")
            #expect(changed.matches(changed.description.utf8))
        }
        for other in [String(signature.description.dropLast()), signature.description + "0", signature.description.uppercased()] {
            #expect(!signature.matches(other.utf8), "\(other)")
        }
        // Written out as numbers by earlier versions: matched on the fields.
        #expect(signature.matches("1003-1700000000000000005-42-1700000100000000007".utf8))
        // Stored before the status-change time was part of the signature: matched on the rest.
        #expect(signature.matches("1003-1700000000000000005-42".utf8))
        for other in ["1003-1700000000000000005-43", "1003-1700000000000000005", "1003-1700000000000000005-42-1",
                      "1003-1700000000000000005-42-1700000100000000007-1", "1003-1700000000000000005-42-",
                      "", "-1700000000000000005-42", "1003-17000000000000000050-42", "1003-x-42", "01003-1700000000000000005-42x"] {
            #expect(!signature.matches(other.utf8), "\(other)")
        }
    }
}
