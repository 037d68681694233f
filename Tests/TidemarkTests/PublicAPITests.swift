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
            let value: JSONValue = try CanonicalJSON.parse(Data(#"{"b": 1}"#.utf8))
            #expect(value != .null)
            await #expect { _ = try await mirror.diff(["nosuch"]) } throws: { error in
                guard case .unknownRevision(let name)? = error as? MirrorError else { return false }
                let describe: (UpstreamError?, GitError?) -> String = { "\(String(describing: $0))\(String(describing: $1))" }
                return name == "nosuch" && !describe(nil, nil).isEmpty
            }
        }
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
        }
    }
}

/// An upstream of other collections than the mirror's.
private struct OtherUpstream: Upstream {
    var spec: String { "other:memory" }
    var collections: [String] { ["others"] }
    func list(collection: String, since: Timestamp?, cached: some CachedVersions) async throws -> Listing {
        Listing(items: [], isComplete: true)
    }
    func fetch(collection: String, item: ListedItem, cachedETag: String?) async throws -> FetchedBody { .notModified }
    func version(ofBody body: Data) -> Timestamp? { nil }
    var statistics: HTTPStatistics { HTTPStatistics() }
}
