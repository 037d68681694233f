import Foundation
#if canImport(Glibc)
import Glibc
#endif
import TestSupport
import Testing
import TidemarkFixtures

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
    /// Suspends until the child exits instead of blocking a thread: the fixture servers of tests
    /// running in parallel live in this process and must not be starved of threads.
    static func run(_ executable: String, _ arguments: [String], in directory: String,
                    environment: [String: String] = [:]) async throws -> Result {
        let child = try Child(executable, arguments, in: directory, environment: environment)
        await child.exited()
        return child.result()
    }

    /// A child process whose output goes to two temporary files, started by `init` (with
    /// `posix_spawn`: see ``SpawnedProcess``).
    final class Child {
        let process: SpawnedProcess
        let base = NSTemporaryDirectory() + "tidemark-e2e-" + UUID().uuidString

        init(_ executable: String, _ arguments: [String], in directory: String, environment: [String: String]) throws {
            let (program, programArguments) = CLI.lowPriority(executable, arguments)
            var env = ProcessInfo.processInfo.environment
            env["NO_COLOR"] = "1"
            // Run from a git hook, the suite would hand git's repository variables to every git
            // and tidemark it runs: each scratch repository is found from its folder instead.
            for name in ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                         "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_PREFIX"] { env[name] = nil }
            for (key, value) in environment { env[key] = value }
            process = try SpawnedProcess(program, programArguments, in: directory, environment: env,
                                         stdout: base + ".out", stderr: base + ".err")
        }

        var pid: Int32 { process.pid }

        /// Its output files go with it, also for a child whose result nobody read (a watcher
        /// killed at a test's end): they were left in the temporary folder.
        deinit {
            try? FileManager.default.removeItem(atPath: base + ".out")
            try? FileManager.default.removeItem(atPath: base + ".err")
        }

        /// Sends SIGKILL if the process still runs; true when it was still running.
        func kill() -> Bool { process.signal(SIGKILL) }

        /// Waits for the process to end, without blocking a task-pool thread, and returns its result.
        func finished() async -> Result {
            await exited()
            return result()
        }

        /// Waits for the process to end without blocking a task-pool thread.
        func exited() async { _ = await process.exited() }

        /// The outcome (the process has ended); removes the output files.
        func result() -> Result {
            func read(_ path: String) -> String {
                String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self)
            }
            defer {
                try? FileManager.default.removeItem(atPath: base + ".out")
                try? FileManager.default.removeItem(atPath: base + ".err")
            }
            let exit = process.wait()
            return Result(status: exit.status, stdout: read(base + ".out"), stderr: read(base + ".err"),
                          signalled: exit.signalled)
        }
    }

    /// Children run under `nice` (which execs them, so the pid is theirs): end-to-end tests start
    /// many CPU-heavy processes, and on a 2-core machine the unit tests running at the same time
    /// in this process (some with wall-clock bounds) must still get the CPU.
    static func lowPriority(_ executable: String, _ arguments: [String]) -> (String, [String]) {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/nice") else { return (executable, arguments) }
        return ("/usr/bin/nice", ["-n", "15", executable] + arguments)
    }

    /// Starts `tidemark` in the background.
    static func spawnTidemark(_ arguments: [String], in directory: String, environment: [String: String] = [:]) throws -> Child {
        try Child(tidemark, arguments, in: directory, environment: environment)
    }

    /// Waits (polling, at most `seconds`, suspended between looks) until `path` exists; true when it does.
    static func waitForFile(_ path: String, seconds: Double = 120) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !FileManager.default.fileExists(atPath: path) {
            if Date() > deadline { return false }
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        return true
    }

    /// True when nobody holds the mirror's run lock (`.git/tidemark.lock`).
    static func runLockIsFree(_ mirror: String) -> Bool {
        let fd = open(mirror + "/.git/tidemark.lock", O_RDWR | O_CREAT, 0o644)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return false }
        flock(fd, LOCK_UN)
        return true
    }

    /// Runs `tidemark` with `arguments` in `directory`.
    static func tidemark(_ arguments: [String], in directory: String, environment: [String: String] = [:]) async throws -> Result {
        try await run(tidemark, arguments, in: directory, environment: environment)
    }

    /// Runs `git`, failing the test when it fails.
    @discardableResult
    static func git(_ arguments: [String], in directory: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> String {
        let result = try await run("/usr/bin/git", arguments, in: directory)
        #expect(result.status == 0, "git \(arguments.joined(separator: " ")): \(result.stderr)", sourceLocation: sourceLocation)
        return result.stdout
    }

    /// `git fsck --strict` passes.
    static func expectClean(_ directory: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let result = try await run("/usr/bin/git", ["fsck", "--strict", "--no-dangling"], in: directory)
        #expect(result.status == 0 && result.stderr.isEmpty, "fsck: \(result.stdout)\(result.stderr)", sourceLocation: sourceLocation)
    }
}

/// Threads on which end-to-end test bodies may block waiting for child processes.
let processWaitExecutor = ThreadPoolExecutor(threads: 8, name: "tidemark-e2e")

/// A fresh temporary folder for one test, removed afterwards. The body runs on
/// ``processWaitExecutor``: end-to-end tests block their thread while a child process runs, and
/// on Swift's cooperative pool (2 threads on a 2-core machine) two such tests would starve every
/// other test of the process (timeouts and retries in the adapter tests, a stalled fixture).
func withScratch<R>(_ body: (String) async throws -> R) async throws -> R {
    let path = NSTemporaryDirectory() + "tidemark-e2e-" + UUID().uuidString
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await withTaskExecutorPreference(processWaitExecutor) { try await body(path) }
}

/// Writes a `dir` upstream item.
func writeItem(_ folder: String, _ id: String, lastModified: String, extra: String = "") throws {
    let json = #"{"id": "\#(id)", "lastModified": "\#(lastModified)", "name": "Template \#(id)"\#(extra)}"#
    try Data(json.utf8).write(to: URL(fileURLWithPath: "\(folder)/\(id).json"))
}
