import Foundation
import Testing
@testable import Tidemark
import TidemarkFixtures
import Upstreams

@Suite("Canonical JSON, manifests, trailers, timestamps")
struct FormatTests {
    @Test func canonicalJSONSortsKeysKeepsNumbersAndEndsWithNewline() throws {
        let input = Data(#"{"b":1.50,"a":[true,null,{"z":"\u00e9\n","y":12345678901234567890}],"c":{}}"#.utf8)
        let expected = """
            {
              "a": [
                true,
                null,
                {
                  "y": 12345678901234567890,
                  "z": "é\\n"
                }
              ],
              "b": 1.50,
              "c": {}
            }

            """
        let output = try CanonicalJSON.canonicalize(input)
        #expect(String(decoding: output, as: UTF8.self) == expected)
        #expect(try CanonicalJSON.canonicalize(output) == output)
    }

    @Test(arguments: [
        "", "{", "{\"a\":1,}", "{\"a\":1,\"a\":2}", "[1 2]", "01", "1.", "\"\\ud800\"", "\"a\u{1}\"", "nul", "{} x",
        "\"\\x\"", "[\"\\udc00\"]",
    ])
    func malformedJSONIsRejected(_ text: String) {
        #expect(throws: CanonicalJSON.ParseError.self) { try CanonicalJSON.canonicalize(Data(text.utf8)) }
    }

    @Test func documentsWrittenCanonicallyAreTakenAsTheyAre() throws {
        let documents = [
            #"{"b":1.50,"a":[true,null,{"z":"\u00e9\n\u0001\u007f/","y":-0.5e+10}],"c":{},"d":[]}"#,
            #"[1, "two", {"3": [false]}, "caf\u00e9 \ud83d\ude00"]"#, #""text""#, "12", "null",
            #"{"templateId": "t-1", "lastModified": "2018-03-26T03:54:40.4470000Z", "nested": [[[]]]}"#,
        ]
        for document in documents {
            let canonical = try CanonicalJSON.rendered(Data(document.utf8))
            #expect(CanonicalJSON.isCanonical(canonical), "\(document)")
            #expect(!CanonicalJSON.isCanonical(Data(document.utf8)))
            #expect(try CanonicalJSON.canonicalize(Data(document.utf8)) == canonical)
        }
        // Near misses: each is not in canonical form, or not JSON; canonicalising decides.
        let base = "{\n  \"a\": \"x\",\n  \"b\": [\n    1\n  ]\n}\n"
        #expect(CanonicalJSON.isCanonical(Data(base.utf8)))
        let misses = [
            base.replacingOccurrences(of: "\"x\"", with: "\"\\/\""),          // an escaped slash
            base.replacingOccurrences(of: "\"x\"", with: "\"\\u0041\""),      // an escape of a printable character
            base.replacingOccurrences(of: "\"x\"", with: "\"\\u001F\""),      // uppercase hex
            base.replacingOccurrences(of: "\"x\"", with: "\"\\u0009\""),      // a tab has its short escape
            base.replacingOccurrences(of: "\"x\"", with: "\"\u{7f}\""),        // a raw DEL
            base.replacingOccurrences(of: "\"b\"", with: "\"a\""),              // a repeated key
            base.replacingOccurrences(of: "\"b\"", with: "\"0\""),              // keys out of order
            base.replacingOccurrences(of: "\"a\"", with: "\"\\u0061\""),      // an escape in a key
            base.replacingOccurrences(of: "1", with: "01"),                  // not a number
            base.replacingOccurrences(of: ": ", with: ":"),
            base.replacingOccurrences(of: "  ", with: "\t"),
            base + "\n", String(base.dropLast()), "\u{feff}" + base, " " + base,
        ]
        for miss in misses {
            #expect(!CanonicalJSON.isCanonical(Data(miss.utf8)), "\(miss)")
            let rendered = try? CanonicalJSON.rendered(Data(miss.utf8))
            #expect((try? CanonicalJSON.canonicalize(Data(miss.utf8))) == rendered)
        }
        // Invalid UTF-8 in a string, and nesting past the limit.
        var invalid = Array(base.utf8)
        invalid[invalid.firstIndex(of: UInt8(ascii: "x"))!] = 0xC3
        #expect(!CanonicalJSON.isCanonical(Data(invalid)))
        #expect(throws: CanonicalJSON.ParseError.self) { try CanonicalJSON.canonicalize(Data(invalid)) }
        let deep = try CanonicalJSON.rendered(Data((String(repeating: "[", count: 20) + String(repeating: "]", count: 20)).utf8))
        #expect(CanonicalJSON.isCanonical(deep, maxDepth: 19) && !CanonicalJSON.isCanonical(deep, maxDepth: 18))
    }

    @Test func whatTheCanonicalCheckTakesIsWhatRenderingGives() {
        var generator = SeededGenerator(seed: 47)
        let seeds = [#"{"zeta": [1, 2.50, -0, 1e400, {"b": null, "a": true}], "alpha": "\u00e9\ud83d\ude00\n\t\"\u0002", "": {}}"#,
                     #"[1, "two", {"3": [false]}]"#]
        var taken = 0
        for round in 0..<4000 {
            var bytes = Array(try! CanonicalJSON.rendered(Data(seeds[round % seeds.count].utf8)))
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let position = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes[position] = Array(#"{}[]",:\ 0e-\#n"#.utf8).randomElement(using: &generator)!
                case 1: bytes.insert(Array(#"{}[]",:\ 0e-\#n"#.utf8).randomElement(using: &generator)!, at: position)
                default: if bytes.count > 1 { bytes.remove(at: position) }
                }
            }
            guard CanonicalJSON.isCanonical(Data(bytes)) else { continue }
            taken += 1
            #expect((try? CanonicalJSON.rendered(Data(bytes))) == Data(bytes), "\(String(decoding: bytes, as: UTF8.self))")
        }
        #expect(taken > 50)
    }

    @Test func deepNestingIsRejectedNotCrashed() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: CanonicalJSON.ParseError.self) { try CanonicalJSON.canonicalize(Data(deep.utf8)) }
    }

    /// A body whose canonical form would be huge is refused, not written: indenting 500,000
    /// numbers nested 250 deep would take 250 MB from a 1 MB body. So is one of more values than
    /// an item may hold, written canonically or not. (Small limits here; the real ones, 64 MiB
    /// and a million values, are tried end to end.)
    @Test func bodiesPastTheLimitsAreRefused() throws {
        func nested(_ depth: Int, _ count: Int) -> Data {
            Data((String(repeating: "[", count: depth) + Array(repeating: "0", count: count).joined(separator: ",")
                  + String(repeating: "]", count: depth)).utf8)
        }
        func canonicalize(_ data: Data, values: Int = 1_000, bytes: Int = 10_000) throws(JSONParseError) -> Data {
            try CanonicalJSON.canonicalize(data, maxDepth: 256, maxValues: values, maxBytes: bytes)
        }
        // The limit is on the whole form, final newline included.
        let form = try CanonicalJSON.canonicalize(nested(20, 40))
        #expect(form.count > 40 * 40)
        #expect(try canonicalize(nested(20, 40), bytes: form.count) == form)
        #expect(try canonicalize(form, bytes: form.count) == form)
        #expect(throws: JSONParseError(offset: nested(20, 40).count,
                                       reason: "its canonical form (indented, as stored) would be over the 0 MiB an item may take",
                                       kind: .limit)) {
            try canonicalize(nested(20, 40), bytes: form.count - 1)
        }
        // A form already canonical but too large is rendered, and refused, too.
        #expect(throws: JSONParseError.self) { try canonicalize(form, bytes: form.count - 1) }
        // Values: a minified body and a canonical one are refused alike past the limit, and taken at it.
        let atLimit = try canonicalize(nested(1, 999))
        #expect(try canonicalize(atLimit) == atLimit)
        let over = Data(atLimit.dropLast(3) + Array(",\n  0\n]\n".utf8))
        #expect(try CanonicalJSON.canonicalize(over) == over)
        for (body, offset) in [(nested(1, 1_000), 1 + 2 * 999), (over, over.count - 4)] {
            #expect(throws: JSONParseError(offset: offset, reason: "more than 1000 JSON values", kind: .limit)) {
                try canonicalize(body)
            }
        }
    }

    @Test func manifestsRoundTripHostileIds() throws {
        let entries = try hostileIDs.map { bytes in
            ManifestEntry(id: ItemID(bytes: bytes), lastModified: "2018-03-26T03:54:40.4470000Z", etag: "\"e\t1\"",
                          path: try ItemPath.fileName(for: ItemID(bytes: bytes)))
        }
        let manifest = Manifest(entries: entries.shuffled())
        let text = manifest.serialized()
        let parsed = try Manifest.parse(text)
        #expect(parsed == manifest)
        #expect(parsed.entries.map(\.id) == entries.map(\.id).sorted())
        // One line per item plus the header; no raw control bytes inside fields.
        #expect(text.filter { $0 == 10 }.count == entries.count + 1)
        #expect(!text.contains(0) && !text.contains(13))
    }

    @Test func updatingAManifestMergesLikeRebuildingIt() throws {
        func entry(_ id: String, _ version: String) -> ManifestEntry {
            ManifestEntry(id: ItemID(id), lastModified: version, etag: "", path: id + ".json")
        }
        let base = Manifest(entries: (0..<50).map { entry(String(format: "item-%02d", $0 * 2), "v1") })
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let upserts = (0..<Int.random(in: 0...8, using: &generator)).map { _ in
                entry(String(format: "item-%02d", Int.random(in: 0..<100, using: &generator)), "v\(Int.random(in: 2...9, using: &generator))")
            }
            let removing = Set((0..<Int.random(in: 0...4, using: &generator)).map { _ in
                ItemID(String(format: "item-%02d", Int.random(in: 0..<100, using: &generator)))
            })
            // The reference: a dictionary rebuilt from scratch, later upserts winning.
            var expected = base.byID()
            for upsert in upserts { expected[upsert.id] = upsert }
            for id in removing { expected[id] = nil }
            let updated = base.updating(upserts, removing: removing)
            #expect(updated == Manifest(entries: Array(expected.values)))
            for id in (0..<100).map({ ItemID(String(format: "item-%02d", $0)) }) {
                #expect(updated.entry(for: id) == expected[id])
            }
            #expect(try Manifest.parse(updated.serialized()) == updated)
        }
    }

    @Test func lineDiffOfManifestsFindsExactlyTheVersionChanges() throws {
        var generator = SystemRandomNumberGenerator()
        func random(_ range: Range<Int>) -> Int { Int.random(in: range, using: &generator) }
        for _ in 0..<100 {
            func manifest() -> Manifest {
                Manifest(entries: (0..<random(0..<40)).map { _ in
                    let id = "id-\(random(0..<60))" + (random(0..<10) == 0 ? "\t%" : "")  // some need escaping
                    let version = ["2024-01-01T00:00:00Z", "2024-01-01T00:00:00.000Z", "2024-02-01T00:00:00Z"][random(0..<3)]
                    return ManifestEntry(id: ItemID(id), lastModified: version, etag: ["", "e1"][random(0..<2)], path: "p/\(id)")
                }).updating([])
            }
            // Duplicate ids collapse, as manifests never repeat one.
            let old = Manifest(entries: Array(manifest().byID().values)), new = Manifest(entries: Array(manifest().byID().values))
            let changes = try Manifest.changes(from: old.serialized(), to: new.serialized())
            let before = old.byID(), after = new.byID()
            var expected: [ManifestChange] = []
            for id in Set(before.keys).union(after.keys).sorted() {
                switch (before[id], after[id]) {
                case (let a?, let b?) where !a.sameVersion(as: b): expected.append(ManifestChange(old: a, new: b))
                case (nil, let b?): expected.append(ManifestChange(old: nil, new: b))
                case (let a?, nil): expected.append(ManifestChange(old: a, new: nil))
                default: break
                }
            }
            #expect(changes == expected)
            #expect(ChangeCounts(changes) == ChangeCounts.between(old, new))
        }
        #expect(throws: Manifest.ParseError.self) {
            try Manifest.changes(from: Data("# other format\n".utf8), to: Manifest().serialized())
        }
    }

    @Test func corruptManifestsAreRejected() {
        let header = Manifest.header + "\n"
        for body in ["a\tb\n", "b\t1\t\tb.json\na\t1\t\ta.json\n", "a\t1\t\t\n", "%zz\t1\t\ta.json\n"] {
            #expect(throws: Manifest.ParseError.self) { try Manifest.parse(Data((header + body).utf8)) }
        }
        #expect(throws: Manifest.ParseError.self) { try Manifest.parse(Data("# tidemark manifest 9\n".utf8)) }
    }

    /// Only collections a fetch dropped are named as no longer mirrored; counts of another
    /// collection missing from the trailers (a rollback to before it was added) are not.
    @Test func snapshotMessagesNameDroppedCollectionsOnly() {
        var message = SnapshotMessage(
            verb: "Sync", upstream: "dir:/up", collections: [("a", "none")], counts: ChangeCounts(deleted: 2),
            perCollection: ["a": ChangeCounts(), "b": ChangeCounts(deleted: 2)], items: 1)
        #expect(message.render().hasPrefix("Sync a: 0 changed, 0 new, 2 deleted\n\nTidemark-Upstream"), "\(message.render())")
        message.dropped = ["b"]
        let text = message.render()
        #expect(text.hasPrefix("Sync a, b: 0 changed, 0 new, 2 deleted\n\na: no changes\nb: 0 changed, 0 new, 2 deleted (no longer mirrored)\n"), "\(text)")
        #expect(SnapshotMessage.parse(text)?.collections.map(\.name) == ["a"])
    }

    @Test func snapshotMessagesRoundTripTheirTrailers() {
        var message = SnapshotMessage(
            verb: "Sync", upstream: "docusign:https://demo.docusign.net/restapi/v2.1/accounts/123",
            collections: [("posts", "2018-10-30T15:05:21.6830000Z"), ("pages", "none")],
            counts: ChangeCounts(changed: 3, added: 1, deleted: 2), items: 50, listedAt: "2026-11-21T10:00:00Z")
        #expect(SnapshotMessage.parse(message.render())?.tree == nil)
        message.tree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
        let text = message.render()
        #expect(text.hasSuffix("\nTidemark-Tree: 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n"))
        #expect(text.hasPrefix("Sync posts, pages: 3 changed, 1 new, 2 deleted\n"))
        let parsed = SnapshotMessage.parse(text)
        #expect(parsed?.watermark(of: "posts") == "2018-10-30T15:05:21.6830000Z")
        #expect(parsed?.watermark(of: "pages") == "none")
        #expect(parsed?.counts == ChangeCounts(changed: 3, added: 1, deleted: 2))
        #expect(parsed?.items == 50)
        #expect(parsed?.tree == message.tree)
        // `git cherry-pick -x` appends a line of its own to the trailers.
        #expect(SnapshotMessage.parse(text + "(cherry picked from commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904)\n") == parsed)
        #expect(SnapshotMessage.parse("plain commit\n\nno trailers here\n") == nil)
        #expect(parsed?.bodySettings == nil)
        message.bodySettings = "9f3c1a0b2d4e6f70"
        #expect(message.render().hasSuffix("\nTidemark-Body-Settings: 9f3c1a0b2d4e6f70\n"))
        #expect(SnapshotMessage.parse(message.render())?.bodySettings == "9f3c1a0b2d4e6f70")
    }

    @Test func timestampsCompareInstantsNotText() throws {
        let docusign = try #require(Timestamp("2018-03-26T03:54:40.4470000Z"))
        let short = try #require(Timestamp("2018-03-26T03:54:40.447Z"))
        #expect(docusign == short && docusign.raw != short.raw)
        let wordpress = try #require(Timestamp("2018-03-26T03:54:40"))
        let offset = try #require(Timestamp("2018-03-26T05:54:40+02:00"))
        #expect(wordpress == offset)
        #expect(wordpress < docusign)
        #expect(Timestamp("9999-12-31T23:59:59Z") != nil)
        for bad in ["", "yesterday", "2018-03-32", "2018-13-01T00:00:00Z", "2018-03-26T03:54:40.Z", "2018-03-26T03:54:40Zjunk"] {
            #expect(Timestamp(bad) == nil, "\(bad)")
        }
        #expect(Timestamp(seconds: 0).raw == "1970-01-01T00:00:00Z")
        #expect(Timestamp(seconds: 1_543_593_921, nanoseconds: 683_000_000).raw == "2018-11-30T16:05:21.683Z")
    }
}

extension Manifest {
    /// Entries by id, the first of a repeated id winning: a reference model for the tests.
    fileprivate func byID() -> [ItemID: ManifestEntry] {
        Dictionary(entries.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }
}

extension ChangeCounts {
    /// The reference model of a manifest diff's counts: counts items new, changed (another version) and deleted from `old` to `new`: one merge
    /// pass over both manifests' sorted entries.
    fileprivate static func between(_ old: Manifest, _ new: Manifest) -> ChangeCounts {
        var counts = ChangeCounts()
        let a = old.entries, b = new.entries
        var i = 0, j = 0
        while i < a.count || j < b.count {
            if j == b.count || (i < a.count && a[i].id < b[j].id) {
                counts.deleted += 1
                i += 1
            } else if i == a.count || b[j].id < a[i].id {
                counts.added += 1
                j += 1
            } else {
                if !a[i].sameVersion(as: b[j]) { counts.changed += 1 }
                i += 1
                j += 1
            }
        }
        return counts
    }
}

/// What a sync that applied the rest says of the items that failed: the collections that hold
/// their deletions named (a mirror of posts and pages deleted a post while a page failed, and
/// the message said no deletion was applied), one item as "it".
@Suite struct IncompleteSyncMessageTests {
    @Test func theCollectionsHoldingTheirDeletionsAreNamed() {
        func collection(_ name: String, failed: Int) -> FetchReport.Collection {
            FetchReport.Collection(name: name, listed: 9, downloaded: 2, notModified: 0, behind: ChangeCounts(), listingRequests: 1,
                                   failed: failed)
        }
        var fetch = FetchReport(collections: [collection("pages", failed: 1), collection("posts", failed: 0)], previous: nil,
                                current: nil, failures: ["pages/5: HTTP 503"])
        let moved = SyncReport(outcome: .incompleteFetch, fetch: fetch, counts: ChangeCounts(changed: 1), paths: [],
                               previous: ObjectID(hex: String(repeating: "1", count: 40))!, current: ObjectID(hex: String(repeating: "2", count: 40))!,
                               plannedDownloads: 0)
        #expect(MirrorError.incompleteSync(moved).description == "1 item could not be downloaded (the branch keeps it as it had it, or "
                + "without it if new, and 'pages' deletes nothing this run); the rest is synced, and the next sync retries it:\n\tpages/5: HTTP 503")
        fetch.failures = ["pages/5: HTTP 503", "posts/7: HTTP 500"]
        fetch.collections = [collection("pages", failed: 1), collection("posts", failed: 1)]
        var still = moved
        still.fetch = fetch
        still.current = still.previous
        #expect(MirrorError.incompleteSync(still).description.hasPrefix("2 items could not be downloaded (the branch keeps them as it had "
                + "them, or without them if new, and their collections delete nothing this run); nothing else changed, and the next sync retries them:"))
    }
}
