import Foundation
import Testing

/// Runs the built `tidemark` binary (and `git`, to prove interoperability) in end-to-end tests.
enum CLI {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        /// True when the process was killed by a signal (e.g. a crash point's SIGKILL).
        var signalled: Bool
    }

    /// The `tidemark` executable next to the test bundle, or in `.build/debug`.
    static let tidemark: String = {
        let candidates = [
            Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("tidemark").path,
            Bundle.main.bundleURL.appendingPathComponent("tidemark").path,
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent(".build/debug/tidemark").path,
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[2]
    }()

    /// Runs a program; output goes to files, so large output can never block the child.
    ///
    /// Blocks the calling thread: a test that also serves HTTP in-process (a `FixtureServer`)
    /// must use ``runAsync(_:_:in:environment:)``, or the server may starve for threads.
    static func run(_ executable: String, _ arguments: [String], in directory: String,
                    environment: [String: String] = [:]) throws -> Result {
        let (process, base) = prepare(executable, arguments, in: directory, environment: environment)
        defer { cleanUp(base) }
        try process.run()
        process.waitUntilExit()
        return result(process, base)
    }

    /// Like ``run(_:_:in:environment:)``, but waits without holding a thread of the cooperative
    /// pool, so an in-process fixture server keeps answering while the child runs.
    static func runAsync(_ executable: String, _ arguments: [String], in directory: String,
                         environment: [String: String] = [:]) async throws -> Result {
        let (process, base) = prepare(executable, arguments, in: directory, environment: environment)
        defer { cleanUp(base) }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            process.terminationHandler = { _ in continuation.resume() }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        return result(process, base)
    }

    private static func prepare(_ executable: String, _ arguments: [String], in directory: String,
                                environment: [String: String]) -> (Process, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        var env = ProcessInfo.processInfo.environment
        env["NO_COLOR"] = "1"
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let base = NSTemporaryDirectory() + "tidemark-e2e-" + UUID().uuidString
        FileManager.default.createFile(atPath: base + ".out", contents: nil)
        FileManager.default.createFile(atPath: base + ".err", contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: base + ".out")
        process.standardError = FileHandle(forWritingAtPath: base + ".err")
        process.standardInput = FileHandle.nullDevice
        return (process, base)
    }

    private static func result(_ process: Process, _ base: String) -> Result {
        func read(_ path: String) -> String {
            String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self)
        }
        return Result(status: process.terminationStatus, stdout: read(base + ".out"), stderr: read(base + ".err"),
                      signalled: process.terminationReason == .uncaughtSignal)
    }

    private static func cleanUp(_ base: String) {
        try? FileManager.default.removeItem(atPath: base + ".out")
        try? FileManager.default.removeItem(atPath: base + ".err")
    }

    /// Runs `tidemark` with `arguments` in `directory`.
    static func tidemark(_ arguments: [String], in directory: String, environment: [String: String] = [:]) throws -> Result {
        try run(tidemark, arguments, in: directory, environment: environment)
    }

    /// Runs `tidemark` without blocking a cooperative thread (for tests with a fixture server).
    static func tidemarkAsync(_ arguments: [String], in directory: String,
                              environment: [String: String] = [:]) async throws -> Result {
        try await runAsync(tidemark, arguments, in: directory, environment: environment)
    }

    /// Runs `git` without blocking a cooperative thread, failing the test when it fails.
    @discardableResult
    static func gitAsync(_ arguments: [String], in directory: String,
                         sourceLocation: SourceLocation = #_sourceLocation) async throws -> String {
        let result = try await runAsync("/usr/bin/git", arguments, in: directory)
        #expect(result.status == 0, "git \(arguments.joined(separator: " ")): \(result.stderr)", sourceLocation: sourceLocation)
        return result.stdout
    }

    /// Runs `git`, failing the test when it fails.
    @discardableResult
    static func git(_ arguments: [String], in directory: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let result = try run("/usr/bin/git", arguments, in: directory)
        #expect(result.status == 0, "git \(arguments.joined(separator: " ")): \(result.stderr)", sourceLocation: sourceLocation)
        return result.stdout
    }

    /// `git fsck --strict` passes.
    static func expectClean(_ directory: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let result = try run("/usr/bin/git", ["fsck", "--strict", "--no-dangling"], in: directory)
        #expect(result.status == 0 && result.stderr.isEmpty, "fsck: \(result.stdout)\(result.stderr)", sourceLocation: sourceLocation)
    }
}

/// A fresh temporary folder for one test, removed afterwards.
func withScratch<R>(_ body: (String) async throws -> R) async rethrows -> R {
    let path = NSTemporaryDirectory() + "tidemark-e2e-" + UUID().uuidString
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await body(path)
}

/// Writes a `dir` upstream item.
func writeItem(_ folder: String, _ id: String, lastModified: String, extra: String = "") throws {
    let json = #"{"id": "\#(id)", "lastModified": "\#(lastModified)", "name": "Template \#(id)"\#(extra)}"#
    try Data(json.utf8).write(to: URL(fileURLWithPath: "\(folder)/\(id).json"))
}
