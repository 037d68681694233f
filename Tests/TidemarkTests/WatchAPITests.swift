#if os(Linux)
import Foundation
import Testing
import TestSupport
import Tidemark

/// `Mirror.watch` through the library: a watcher per mirror, as many as the machine has cores.
@Suite struct WatchAPITests {
    /// Each watcher blocks for its life on a thread of its own: with as many as cores, other tasks
    /// still run (they took one of Swift's shared threads each, and every other task of the app
    /// waited until they stopped), and a sync through the watching handle is answered by it.
    @Test(.timeLimit(.minutes(1))) func watchersLeaveTheSharedThreadsToOtherTasks() async throws {
        try await withScratch { root in
            let count = max(2, ProcessInfo.processInfo.activeProcessorCount)
            var mirrors: [Mirror] = []
            var stops: [(read: Int32, write: Int32)] = []
            for index in 0..<count {
                let folder = root + "/up\(index)"
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                try Data(#"{"id": "a", "v": 1}"#.utf8).write(to: URL(fileURLWithPath: folder + "/a.json"))
                let (mirror, _) = try await Mirror.clone("dir:" + folder, to: root + "/m\(index)")
                mirrors.append(mirror)
                var ends: [Int32] = [0, 0]
                #expect(pipe(&ends) == 0)
                stops.append((ends[0], ends[1]))
            }
            let started = Started()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (mirror, stop) in zip(mirrors, stops) {
                    group.addTask { try await mirror.watch(stop: stop.read) { _ in started.add() } }
                }
                let clock = ContinuousClock()
                let before = clock.now
                while started.count < count, clock.now - before < .seconds(60) { try await Task.sleep(for: .milliseconds(20)) }
                #expect(started.count == count)
                let slept = clock.now
                try await Task.sleep(for: .milliseconds(100))
                #expect(clock.now - slept < .seconds(5), "a short sleep waited for the watchers")
                // The watching handle is free: a sync through it asks the watcher.
                try Data(#"{"id": "a", "v": 2}"#.utf8).write(to: URL(fileURLWithPath: root + "/up0/a.json"))
                let report = try await mirrors[0].sync()
                #expect(report.counts == ChangeCounts(changed: 1))
                // This process's watcher is named with its pid, and not stopped by a SIGTERM to the
                // app (stopWatcher said "cannot stop the watcher: <a stale errno>").
                let running = await mirrors[0].runningWatcher()
                #expect(running?.pid == getpid() && running?.folder != nil, "\(String(describing: running))")
                await #expect { _ = try await mirrors[0].stopWatcher() } throws: { error in
                    "\(error)".contains("the watcher runs in this process: end it through the pipe its watch(stop:) polls")
                }
                for stop in stops { _ = write(stop.write, "x", 1) }
                try await group.waitForAll()
            }
            for stop in stops { close(stop.read); close(stop.write) }
        }
    }
}

/// Counts watchers that said they were ready.
private final class Started: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    var count: Int { lock.withLock { value } }
    func add() { lock.withLock { value += 1 } }
}
#endif
