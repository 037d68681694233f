import Foundation
import Testing
import TestSupport
@testable import Tidemark
import TidemarkFixtures
import Upstreams

/// ``ManifestTable`` must read, look up and update manifests exactly as ``Manifest`` does.
@Suite("Manifest table: the indexed bytes a fetch works on")
struct ManifestTableTests {
    /// Random manifests with ids that need escaping (hostile bytes, a leading `#`, `%`).
    func randomManifest(_ generator: inout some RandomNumberGenerator) -> Manifest {
        var entries: [ManifestEntry] = []
        for _ in 0..<Int.random(in: 0..<60, using: &generator) {
            let id: [UInt8] = switch Int.random(in: 0..<6, using: &generator) {
            case 0: hostileIDs.randomElement(using: &generator)!
            case 1: Array("#\(Int.random(in: 0..<50, using: &generator))".utf8)
            case 2: Array("a%\(Int.random(in: 0..<50, using: &generator))\t".utf8)
            default: Array("item-\(Int.random(in: 0..<80, using: &generator))".utf8)
            }
            entries.append(ManifestEntry(id: ItemID(bytes: id), lastModified: "2024-01-0\(Int.random(in: 1...9, using: &generator))T00:00:00Z",
                                         etag: ["", "12-345-6", "\"e\t%1\""].randomElement(using: &generator)!,
                                         path: "p/\(entries.count)"))
        }
        return Manifest(entries: Dictionary(entries.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a }).values.map { $0 })
    }

    @Test func tablesDecodeLookUpAndUpdateLikeManifests() throws {
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<300 {
            let manifest = randomManifest(&generator)
            let table = try ManifestTable(manifest.serialized())
            #expect(table.count == manifest.entries.count)
            for (position, entry) in manifest.entries.enumerated() {
                #expect(table.entry(at: position) == entry)
                #expect(table.position(of: entry.id) == position)
                #expect(table.id(at: position) == entry.id)
                #expect(table.etag(at: position) == (entry.etag.isEmpty ? nil : entry.etag))
            }
            #expect(table.position(of: ItemID("absent")) == nil)
            // The batch lookup agrees, ids in any order, absent ones among them.
            let asked = (manifest.entries.map(\.id) + [ItemID("absent"), ItemID("item-81")]).shuffled(using: &generator)
            #expect(Self.positions(asked, in: table) == asked.map { table.position(of: $0) })

            // Upserts (new ids, replaced ids, an id twice: the last wins) and removals.
            var upserts: [ManifestEntry] = []
            for _ in 0..<Int.random(in: 0..<6, using: &generator) {
                let id = Int.random(in: 0..<3, using: &generator) == 0 && !manifest.entries.isEmpty
                    ? manifest.entries.randomElement(using: &generator)!.id
                    : ItemID("item-\(Int.random(in: 0..<90, using: &generator))")
                upserts.append(ManifestEntry(id: id, lastModified: "2025-01-01T00:00:0\(upserts.count)Z", etag: "", path: "q/\(upserts.count)"))
            }
            // The same version again: as it was, and written another way (no change either).
            if let same = manifest.entries.randomElement(using: &generator), Bool.random(using: &generator) {
                upserts.append(same)
                if let time = Timestamp(same.lastModified) {
                    upserts.append(ManifestEntry(id: same.id, lastModified: time.adding(seconds: 0).raw.replacingOccurrences(of: "Z", with: "+00:00"),
                                                 etag: same.etag, path: same.path))
                }
            }
            let upserted = Set(upserts.map(\.id))
            let removing = manifest.entries.indices.filter {
                !upserted.contains(manifest.entries[$0].id) && Int.random(in: 0..<8, using: &generator) == 0
            }
            let expected = manifest.updating(upserts, removing: Set(removing.map { manifest.entries[$0].id }))
            let updated = table.updating(upserts, removing: removing)
            #expect(updated == expected.serialized())
            let counts = table.changeCounts(upserts, removing: removing)
            #expect(counts == ChangeCounts(try Manifest.changes(from: try manifest.serialized(), to: updated)))
        }
    }

    /// A large table: long probe runs, and absent ids whose slots hold other ids.
    @Test func everyIdOfALargeTableIsFoundAndNoOtherIs() throws {
        let ids = (0..<30_000).map { ItemID("item-\($0 * 2)") }.sorted()
        let manifest = Manifest(entries: ids.map { ManifestEntry(id: $0, lastModified: "2024-01-01T00:00:00Z", etag: "", path: "p") })
        let table = try ManifestTable(manifest.serialized())
        for (position, id) in ids.enumerated() { #expect(table.position(of: id) == position) }
        let absent = (0..<30_000).filter { table.position(of: ItemID("item-\($0 * 2 + 1)")) != nil }
        #expect(absent.isEmpty)
        #expect(table.position(of: ItemID("item-")) == nil)
        // In one batch, present and absent ids mixed: an absent id's first slot often holds another.
        let asked = (0..<60_000).map { ItemID("item-\($0)") } + [ItemID("item-")]
        #expect(Self.positions(asked, in: table) == asked.map { table.position(of: $0) })
    }

    /// ``ManifestTable/positions(ofIDBytes:_:)`` of `ids`, their bytes back to back in one buffer.
    static func positions(_ ids: [ItemID], in table: ManifestTable) -> [Int?] {
        var names: [UInt8] = []
        var ranges: [Range<Int>] = []
        for id in ids {
            ranges.append(names.count..<names.count + id.bytes.count)
            names += id.bytes
        }
        return names.withUnsafeBufferPointer { table.positions(ofIDBytes: $0, ranges) }
    }

    @Test func aLastLineWithoutItsNewlineIsKept() throws {
        let data = Data("# tidemark manifest 1\nb\t2024-01-01T00:00:00Z\t\tp/b".utf8)
        let upsert = ManifestEntry(id: ItemID("a"), lastModified: "2024-02-01T00:00:00Z", etag: "", path: "p/a")
        let updated = try ManifestTable(data).updating([upsert])
        #expect(try Manifest.parse(updated) == Manifest.parse(data).updating([upsert]))
        #expect(updated.last == 10)
    }

    @Test(arguments: [
        "# tidemark manifest 2\n",
        "# tidemark manifest 1\nb\t1\t\tp\na\t1\t\tp\n",   // not sorted
        "# tidemark manifest 1\na\t1\t\tp\na\t1\t\tp\n",   // repeated
        "# tidemark manifest 1\na\t1\tp\n",                // three fields
        "# tidemark manifest 1\na\t1\t\tp\tx\n",           // five fields
        "# tidemark manifest 1\n\t1\t\tp\n",               // empty id
        "# tidemark manifest 1\na\t1\t\t\n",               // empty path
        "# tidemark manifest 1\na%zz\t1\t\tp\n",           // bad escape
        "# tidemark manifest 1\na\t1%\t\tp\n",             // bad escape in another field
        "# tidemark manifest 1\n%62\t1\t\tp\na\t1\t\tp\n", // sorted by unescaped bytes: b > a
        "# tidemark manifest 1\na%-0\t1\t\tp\n",           // a sign is not a hex digit
    ])
    func tablesRejectWhatManifestsReject(_ text: String) {
        let data = Data(text.utf8)
        #expect(throws: Manifest.ParseError.self) { try Manifest.parse(data) }
        #expect(throws: Manifest.ParseError.self) { try ManifestTable(data) }
    }
}
