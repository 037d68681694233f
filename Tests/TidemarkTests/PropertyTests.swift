import Foundation
import Testing
import Tidemark
import TidemarkFixtures
import Upstreams

/// The fuzz targets' properties (Fuzz/, `make fuzz`) on seeded random inputs, so `swift test`
/// checks them too: canonical JSON is idempotent and keeps the value; a manifest round-trips.
@Suite("Seeded random inputs: canonical JSON and manifest properties")
struct PropertyTests {
    static let seeds: [String] = [
        #"{"zeta": [1, 2.50, -0, 1e400, {"b": null, "a": true}], "alpha": "\u00e9\ud83d\ude00\n\t\"", "": {}}"#,
        #"{"templateId": "t-1", "lastModified": "2018-03-26T03:54:40.4470000Z", "nested": [[[]]]}"#,
        #"[1, "two", {"3": [false]}]"#,
    ]

    @Test func canonicalJSONIsIdempotentOnMutatedDocuments() throws {
        var generator = SeededGenerator(seed: 41)
        var valid = 0
        for round in 0..<3000 {
            var bytes = Array(Self.seeds[round % Self.seeds.count].utf8)
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let position = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes[position] = UInt8.random(in: 0...255, using: &generator)
                case 1: bytes.insert(Array(#"{}[]",:\0e-"#.utf8).randomElement(using: &generator)!, at: position)
                default: if bytes.count > 1 { bytes.remove(at: position) }
                }
            }
            guard let canonical = try? CanonicalJSON.canonicalize(Data(bytes)) else { continue }
            valid += 1
            #expect(try CanonicalJSON.canonicalize(canonical) == canonical, "not idempotent: \(String(decoding: bytes, as: UTF8.self))")
        }
        #expect(valid > 100)
    }

    @Test func manifestsOfRandomBytesRoundTrip() throws {
        var generator = SeededGenerator(seed: 43)
        for _ in 0..<500 {
            var seen = Set<ItemID>()
            var entries: [ManifestEntry] = []
            for _ in 0..<Int.random(in: 0...8, using: &generator) {
                func bytes() -> [UInt8] { (0..<Int.random(in: 0...12, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) } }
                let id = bytes()
                guard !id.isEmpty, seen.insert(ItemID(bytes: id)).inserted else { continue }
                let path = String(decoding: bytes(), as: UTF8.self)
                entries.append(ManifestEntry(id: ItemID(bytes: id), lastModified: String(decoding: bytes(), as: UTF8.self),
                                             etag: String(decoding: bytes(), as: UTF8.self), path: path.isEmpty ? "p" : path))
            }
            let manifest = Manifest(entries: entries)
            #expect(try Manifest.parse(manifest.serialized()) == manifest)
        }
    }
}
