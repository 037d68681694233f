import Foundation
import Testing
import TestSupport
// Only the library's product: what an app writing an upstream of its own has.
import Tidemark

/// An upstream of one's own, written against `import Tidemark` alone (its types were in a
/// module apps cannot name: this file did not compile).
private struct NotesUpstream: Upstream {
    var spec: String { "notes:memory" }
    var collections: [String] { ["notes"] }
    func list(collection: String, since: Timestamp?, cached: some CachedVersions) async throws -> Listing {
        Listing(items: [ListedItem(id: ItemID("a"), lastModified: Timestamp("2024-01-01T00:00:00Z")!)], isComplete: true)
    }
    func fetch(collection: String, item: ListedItem, cachedETag: String?) async throws -> FetchedBody {
        guard item.id == ItemID("a") else { throw UpstreamError.unreachable("\(item.id) is gone") }
        return .body(Data(#"{"id": "a"}"#.utf8), etag: nil)
    }
    func version(ofBody body: Data) -> Timestamp? { nil }
    var statistics: HTTPStatistics { HTTPStatistics() }
}

@Suite("The library's public API from import Tidemark alone")
struct PublicAPITests {
    @Test func anUpstreamOfOnesOwnAndTheErrorTypesAreNamedFromTidemark() async throws {
        try await withScratch { path in
            let (mirror, report) = try await Mirror.clone("notes:memory", to: path + "/m", upstream: NotesUpstream())
            #expect(report.counts == ChangeCounts(added: 1))
            #expect(try await mirror.cachedItems(in: "notes").map(\.id) == [ItemID("a")])
            await #expect { _ = try await mirror.diff(["nosuch"]) } throws: { error in
                guard case .unknownRevision(let name)? = error as? MirrorError else { return false }
                let describe: (UpstreamError?, GitError?) -> String = { "\(String(describing: $0))\(String(describing: $1))" }
                return name == "nosuch" && !describe(nil, nil).isEmpty
            }
        }
    }

    /// `sync --if-stale` with the configured interval, from outside the package: the interval in
    /// seconds, as `SyncOptions.ifStaleSeconds` takes it (its parser is not public).
    @Test func theRefreshIntervalComesInSeconds() {
        #expect(MirrorSettings(upstream: "dir:x", collections: ["items"], refreshInterval: "6h").refreshSeconds == 21_600)
        #expect(MirrorSettings(upstream: "dir:x", collections: ["items"], refreshInterval: "soon").refreshSeconds == nil)
        #expect(MirrorSettings(upstream: "dir:x", collections: ["items"]).refreshSeconds == nil)
    }

    /// Arguments an app can get wrong are named (they returned nothing, or meant "always stale",
    /// or an upstream without the mirror's collection made a fetch want to delete every item).
    @Test func wrongArgumentsAreNamed() async throws {
        try await withScratch { path in
            let (mirror, _) = try await Mirror.clone("notes:memory", to: path + "/m", upstream: NotesUpstream())
            await #expect { _ = try await mirror.cachedContents(of: "a", in: "templates") } throws: {
                String(describing: $0) == "this mirror has no collection 'templates'; it has: notes"
            }
            await #expect { _ = try await mirror.cachedItems(in: "templates") } throws: { $0 is MirrorError }
            #expect(try await mirror.cachedContents(of: "a", in: "notes") != nil)
            await #expect { _ = try await mirror.sync(SyncOptions(ifStaleSeconds: -5)) } throws: {
                String(describing: $0) == "ifStaleSeconds must be 0 or more, not -5.0"
            }
            #expect(throws: MirrorError.self) { _ = try Mirror.open(at: path + "/m", upstream: OtherUpstream()) }
            // An upstream of no collection is refused (it made an empty mirror that could never
            // hold anything); nothing is left behind.
            await #expect { _ = try await Mirror.clone("none:memory", to: path + "/none", upstream: OtherUpstream(names: [])) } throws: {
                String(describing: $0) == "the upstream 'other:memory' names no collection to mirror"
            }
            #expect(!FileManager.default.fileExists(atPath: path + "/none"))
        }
    }
}

/// An upstream of other collections than the mirror's.
private struct OtherUpstream: Upstream {
    var names = ["others"]
    var spec: String { "other:memory" }
    var collections: [String] { names }
    func list(collection: String, since: Timestamp?, cached: some CachedVersions) async throws -> Listing {
        Listing(items: [], isComplete: true)
    }
    func fetch(collection: String, item: ListedItem, cachedETag: String?) async throws -> FetchedBody { .notModified }
    func version(ofBody body: Data) -> Timestamp? { nil }
    var statistics: HTTPStatistics { HTTPStatistics() }
}

/// An upstream whose listing an app got wrong: `listing` is what it returns.
private struct ScriptedUpstream: Upstream {
    let listing: @Sendable (any CachedVersions) -> Listing
    var spec: String { "scripted:memory" }
    var collections: [String] { ["notes"] }
    func list(collection: String, since: Timestamp?, cached: some CachedVersions) async throws -> Listing {
        listing(try cached.loaded())
    }
    func fetch(collection: String, item: ListedItem, cachedETag: String?) async throws -> FetchedBody {
        .body(Data(#"{"id": "\#(item.id)"}"#.utf8), etag: nil)
    }
    func version(ofBody body: Data) -> Timestamp? { nil }
    var statistics: HTTPStatistics { HTTPStatistics() }
}

@Suite("An upstream of one's own that gets its listing wrong")
struct WrongListingTests {
    /// A position outside the cached versions it was given is named as its error (it crashed the
    /// process: index out of range).
    @Test func anUnchangedPositionOutsideTheCachedVersionsIsNamed() async throws {
        try await withScratch { path in
            let (mirror, _) = try await Mirror.clone("notes:memory", to: path + "/m", upstream: NotesUpstream())
            let wrong = try Mirror.open(at: path + "/m", upstream: ScriptedUpstream { cached in
                Listing(items: [], isComplete: true, unchanged: [cached.count])
            })
            _ = mirror
            await #expect { _ = try await wrong.fetch() } throws: { error in
                guard case .upstream(.malformedListing("notes", let reason))? = error as? MirrorError else { return false }
                return reason == "it lists position 1 as unchanged, outside the 1 cached versions it was given"
            }
        }
    }

    /// An error of the app's own type reaches it as its text, naming the collection listed; a
    /// CancellationError ends the run as cancelled (it was a text error too).
    @Test func anUpstreamsOwnErrorsAreNamedAndCancellationIsCancellation() async throws {
        struct TokenExpired: Error {}
        try await withScratch { path in
            _ = try await Mirror.clone("notes:memory", to: path + "/m", upstream: NotesUpstream())
            let expired = try Mirror.open(at: path + "/m", upstream: ThrowingUpstream(error: TokenExpired()))
            await #expect { _ = try await expired.fetch() } throws: {
                String(describing: $0) == "listing of notes: TokenExpired()"
            }
            let cancelled = try Mirror.open(at: path + "/m", upstream: ThrowingUpstream(error: CancellationError()))
            await #expect { _ = try await cancelled.sync() } throws: { error in
                guard case .cancelled? = error as? MirrorError else { return false }
                return true
            }
        }
    }

    /// One id at one version with two bodies is refused, named (the first body was stored).
    @Test func oneIdAndVersionWithTwoBodiesIsNamed() async throws {
        try await withScratch { path in
            let version = Timestamp("2024-02-01T00:00:00Z")!
            let twice = ScriptedUpstream { _ in
                Listing(items: [ListedItem(id: ItemID("b"), lastModified: version, body: Data(#"{"v": 1}"#.utf8)),
                                ListedItem(id: ItemID("b"), lastModified: version, body: Data(#"{"v": 2}"#.utf8))],
                        isComplete: true)
            }
            await #expect { _ = try await Mirror.clone("scripted:memory", to: path + "/m", upstream: twice) } throws: { error in
                guard case .upstream(.duplicateID("notes", "b"))? = error as? MirrorError else { return false }
                return true
            }
            // The same body twice (a row a shifted page repeated) is harmless.
            let same = ScriptedUpstream { _ in
                Listing(items: [ListedItem(id: ItemID("b"), lastModified: version, body: Data(#"{"v": 1}"#.utf8)),
                                ListedItem(id: ItemID("b"), lastModified: version, body: Data(#"{"v": 1}"#.utf8))],
                        isComplete: true)
            }
            let (mirror, report) = try await Mirror.clone("scripted:memory", to: path + "/n", upstream: same)
            #expect(report.counts == ChangeCounts(added: 1))
            #expect(try await mirror.cachedItems(in: "notes").map(\.id) == [ItemID("b")])
        }
    }
}

/// An upstream whose listing throws `error`.
private struct ThrowingUpstream: Upstream {
    let error: any Error & Sendable
    var spec: String { "notes:memory" }
    var collections: [String] { ["notes"] }
    func list(collection: String, since: Timestamp?, cached: some CachedVersions) async throws -> Listing { throw error }
    func fetch(collection: String, item: ListedItem, cachedETag: String?) async throws -> FetchedBody { .notModified }
}
