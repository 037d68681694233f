import Foundation
import Testing

@Suite("End to end: the tidemark-fixture executable", .serialized)
struct FixtureExecutableTests {
    /// `tidemark-fixture`, built next to `tidemark`.
    static let executable = URL(fileURLWithPath: CLI.tidemark).deletingLastPathComponent()
        .appendingPathComponent("tidemark-fixture").path

    @Test func servesSeededItemsOnAFreePortAndStopsOnSIGTERM() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: Self.executable), "\(Self.executable)")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.executable)
        process.arguments = ["--port", "0", "--items", "17", "--seed", "4", "--burst-limit", "500"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

        // The first line names the port; read it on a thread so a silent child cannot hang the test.
        let line = LineReader(output.fileHandleForReading)
        let first = try #require(line.next(timeout: 60), "no output from tidemark-fixture")
        let prefix = "listening on http://127.0.0.1:"
        #expect(first.hasPrefix(prefix), "\(first)")
        let port = try #require(Int(first.dropFirst(prefix.count)))
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

        process.terminate()  // SIGTERM
        let deadline = Date().addingTimeInterval(60)
        while process.isRunning && Date() < deadline { try await Task.sleep(nanoseconds: 50_000_000) }
        #expect(!process.isRunning)
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
    }
}

/// Reads lines from a pipe on a background thread.
final class LineReader: @unchecked Sendable {
    private let lock = NSCondition()
    private var lines: [String] = []
    private var closed = false

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            var buffer = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: 10) {
                    let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...newline)
                    lock.lock()
                    lines.append(line)
                    lock.broadcast()
                    lock.unlock()
                }
            }
            lock.lock()
            closed = true
            lock.broadcast()
            lock.unlock()
        }
    }

    /// The next line, or nil when the pipe closed or `timeout` seconds passed.
    func next(timeout: Double) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        lock.lock()
        defer { lock.unlock() }
        while lines.isEmpty && !closed {
            if !lock.wait(until: deadline) { break }
        }
        return lines.isEmpty ? nil : lines.removeFirst()
    }
}
