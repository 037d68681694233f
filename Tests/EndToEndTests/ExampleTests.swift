import Foundation
import Testing

@Suite("End to end: the library example of Examples/OfflineCache")
struct ExampleTests {
    /// `tidemark-example`, built next to `tidemark`.
    static let example = URL(fileURLWithPath: CLI.tidemark).deletingLastPathComponent()
        .appendingPathComponent("tidemark-example").path

    @Test func offlineCacheExampleClonesFetchesAndSyncsOnlyWhatChanged() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: Self.example), "build with swift build")
        try await withScratch { root in
            try FileManager.default.createDirectory(atPath: root + "/up", withIntermediateDirectories: true)
            for id in ["a", "b", "c"] { try writeItem(root + "/up", id, lastModified: "2026-01-01T00:00:00Z") }
            let first = try await CLI.run(Self.example, ["dir:\(root)/up", root + "/cache"], in: root)
            #expect(first.status == 0, "\(first.stderr)")
            let firstLines = first.stdout.components(separatedBy: "\n")
            #expect(firstLines.first == "cloned 3 items into \(root)/cache")
            #expect(firstLines.contains("fetch: listed 3, downloaded 0"))
            #expect(firstLines.contains("sync: no changes"))
            #expect(firstLines.contains { $0.hasPrefix("item a (lastModified 2026-01-01T00:00:00Z): ") && $0.hasSuffix(" bytes") })

            try writeItem(root + "/up", "b", lastModified: "2026-02-01T00:00:00Z", extra: #", "note": "edited""#)
            try writeItem(root + "/up", "d", lastModified: "2026-02-01T00:00:00Z")
            let second = try await CLI.run(Self.example, ["dir:\(root)/up", root + "/cache"], in: root)
            #expect(second.status == 0, "\(second.stderr)")
            let lines = second.stdout.components(separatedBy: "\n")
            #expect(lines.first == "opened \(root)/cache")
            #expect(lines.contains("fetch: listed 4, downloaded 2"))
            #expect(lines.contains("behind: changed items/b") && lines.contains("behind: added items/d"))
            #expect(lines.contains("sync: 1 changed, 1 new, 0 deleted"))
            #expect(lines.filter { $0.hasPrefix("snapshot ") }.count == 2)
            // The cached copy is what upstream holds now.
            let cached = try String(contentsOfFile: root + "/cache/items/b.json", encoding: .utf8)
            #expect(cached.contains("\"note\": \"edited\""))
        }
    }
}
