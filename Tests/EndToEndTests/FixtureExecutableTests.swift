import Foundation
import TestSupport
import Testing

@Suite("End to end: the tidemark-fixture executable", .serialized)
struct FixtureExecutableTests {
    /// `tidemark-fixture`, built next to `tidemark`.
    static let executable = URL(fileURLWithPath: CLI.tidemark).deletingLastPathComponent()
        .appendingPathComponent("tidemark-fixture").path

    @Test func servesSeededItemsOnAFreePortAndStopsOnSIGTERM() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: Self.executable), "\(Self.executable)")
        let output = NSTemporaryDirectory() + "tidemark-fixture-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: output); try? FileManager.default.removeItem(atPath: output + ".err") }
        let process = try SpawnedProcess(Self.executable, ["--port", "0", "--items", "17", "--seed", "4", "--burst-limit", "500"],
                                         in: NSTemporaryDirectory(), environment: ProcessInfo.processInfo.environment,
                                         stdout: output, stderr: output + ".err")
        defer { process.signal(SIGKILL); _ = process.wait() }

        // The first line names the port (polled, so a silent child cannot hang the test). The
        // file is read once more after the deadline: the full suite can keep this task from
        // running for a minute on 2 cores, and a sleep that ends past the deadline must not fail
        // a test whose child wrote its line long before.
        var first: String?
        let started = Date()
        while true {
            let text = String(decoding: FileManager.default.contents(atPath: output) ?? Data(), as: UTF8.self)
            if let newline = text.firstIndex(of: "\n") {
                first = String(text[..<newline])
            }
            guard first == nil, process.isRunning, Date().timeIntervalSince(started) < 120 else { break }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        let errors = String(decoding: FileManager.default.contents(atPath: output + ".err") ?? Data(), as: UTF8.self)
        let waited = Int(Date().timeIntervalSince(started))
        let firstLine = try #require(first, "no output from tidemark-fixture after \(waited) s (running: \(process.isRunning)); stderr: \(errors)")
        let prefix = "listening on http://127.0.0.1:"
        #expect(firstLine.hasPrefix(prefix), "\(firstLine)")
        let port = try #require(Int(firstLine.dropFirst(prefix.count)))
        #expect(port > 0 && port != 0)
        let base = "http://127.0.0.1:\(port)"

        func get(_ path: String) async throws -> Any? {
            let result = try await CLI.run("/usr/bin/curl", ["-fsS", "--max-time", "30", base + path], in: NSTemporaryDirectory())
            #expect(result.status == 0, "\(path): \(result.stderr)")
            return try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
        }
        let items = try #require(try await get("/rest/items") as? [[String: Any]])
        #expect(items.count == 17)
        #expect(Set(items.compactMap { $0["id"] as? String }).count == 17)
        let templates = try #require(try await get("/restapi/v2.1/accounts/1/templates?count=100") as? [String: Any])
        #expect(templates["totalSetSize"] as? String == "17")
        let burst = try await CLI.run("/usr/bin/curl", ["-fsS", "-D", "-", "-o", "/dev/null", "--max-time", "30",
                                                  base + "/restapi/v2.1/accounts/1/templates"], in: NSTemporaryDirectory())
        #expect(burst.stdout.lowercased().contains("x-burstlimit-remaining: 498"), "\(burst.stdout)")
        let posts = try #require(try await get("/wp-json/wp/v2/posts?per_page=100&status=publish") as? [[String: Any]])
        #expect(!posts.isEmpty && posts.count <= 17)

        // Same seed, same data: a second run would serve the same ids (the first id is stable).
        #expect(items.first?["id"] as? String == "item-00001")

        process.signal(SIGTERM)
        let exited = Task { await process.exited() }
        let deadline = Date().addingTimeInterval(60)
        while process.isRunning && Date() < deadline { try await Task.sleep(nanoseconds: 50_000_000) }
        #expect(!process.isRunning, "still running 60 s after SIGTERM")
        process.signal(SIGKILL)
        let exit = await exited.value
        #expect(!exit.signalled && exit.status == 0, "\(exit)")
    }
}
